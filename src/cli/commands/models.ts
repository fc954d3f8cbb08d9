import { StemsplitError } from '../../errors.js';
import { catalogModel, MODEL_CATALOG, type CatalogModel } from '../../models/catalog.js';
import { pullModel, removeModel } from '../../models/pull.js';
import { registryFor, type ModelRegistry } from '../../models/registry.js';
import { print, printJson, type CommandContext } from '../context.js';
import { createProgressBar, type ProgressBar } from '../progress.js';

function registryOf(ctx: CommandContext): ModelRegistry {
  const { config } = ctx;
  return registryFor(config);
}

export async function modelsList(ctx: CommandContext, options: { json?: boolean }): Promise<void> {
  const rows = registryOf(ctx).listing();
  if (options.json) {
    printJson(ctx, rows);
    return;
  }
  // The name column fits the longest name, so long ones (RoFormer checkpoints) keep the columns.
  const width = Math.max(...rows.map((row) => row.name.length)) + 2;
  const indent = ''.padEnd(width);
  for (const row of rows) {
    const state = row.installed ? row.origin : 'not installed (stemsplit models pull ' + row.name + ')';
    const aliases = row.aliases.length ? ` [${row.aliases.join(', ')}]` : '';
    print(ctx, `${row.name.padEnd(width)}${row.sources.length} stems  ${state}${aliases}`);
    print(ctx, `${indent}${row.description}`);
    print(ctx, `${indent}terms: ${row.terms}`);
    if (row.card) print(ctx, `${indent}card: ${row.card}`);
  }
}

function catalogModelNamed(name: string): CatalogModel {
  const model = catalogModel(name);
  if (model) return model;
  const names = MODEL_CATALOG.map((m) => m.name).join(', ');
  throw new StemsplitError('MODEL_NOT_FOUND', `"${name}" is not a model to pull or remove (those are: ${names})`);
}

function megabytes(bytes: number): string {
  return `${(bytes / 1e6).toFixed(1)} MB`;
}

export interface ModelsPullOptions {
  readonly baseUrl?: string;
  readonly json?: boolean;
}

export async function modelsPull(ctx: CommandContext, names: readonly string[], options: ModelsPullOptions): Promise<void> {
  const models = names.map(catalogModelNamed);
  const results = [];
  for (const model of models) {
    ctx.stderr.write(`${model.name}: ${model.description}\n  terms of the weights: ${model.terms}\n`);
    let bar: ProgressBar | undefined;
    const result = await pullModel(model, {
      cacheDir: ctx.config.cacheDir,
      baseUrl: options.baseUrl,
      onFile(file, index, count, alreadyInstalled) {
        bar?.done();
        const title = `${model.name} ${count > 1 ? `[${index + 1}/${count}] ` : ''}${file} `;
        bar = alreadyInstalled ? undefined : createProgressBar(ctx.stderr, title);
        if (alreadyInstalled) ctx.stderr.write(`${title}already installed\n`);
      },
      onProgress({ received, total }) {
        if (total) bar?.update((100 * received) / total, `${megabytes(received)} / ${megabytes(total)}`);
      },
    });
    bar?.done();
    for (const file of result.downloaded) {
      const source = model.downloads?.find((d) => file.path.endsWith(d.file));
      if (source && source.sha256 === undefined) ctx.stderr.write(`  ${source.file}: ${source.hashSource}: ${file.sha256}\n`);
    }
    results.push(result);
    if (!options.json) print(ctx, `${model.name} installed: ${result.path}`);
  }
  if (options.json) printJson(ctx, results);
}

export async function modelsRemove(ctx: CommandContext, names: readonly string[]): Promise<void> {
  for (const model of names.map(catalogModelNamed)) {
    const removed = await removeModel(model, ctx.config.cacheDir);
    if (removed.length === 0) throw new StemsplitError('MODEL_NOT_FOUND', `${model.name} is not installed`);
    print(ctx, `${model.name} removed (${removed.length} file${removed.length === 1 ? '' : 's'})`);
  }
}
