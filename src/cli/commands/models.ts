import { readdirSync, statSync } from 'node:fs';
import { basename, dirname, extname, join, resolve } from 'node:path';
import { describeError, isStemsplitError, StemsplitError, type ErrorCode } from '../../errors.js';
import { catalogModel, MODEL_CATALOG, type CatalogModel } from '../../models/catalog.js';
import { addModel, companionFilesOf } from '../../models/add.js';
import { libraryDir, removeFromLibrary } from '../../models/library.js';
import { modelLoader } from '../../models/loaders.js';
import { matchLocalFiles, pullModel, removeModel } from '../../models/pull.js';
import { pullStepsOf, registryFor, type ModelListing, type ModelRegistry } from '../../models/registry.js';
import type { Task } from '../../models/tasks.js';
import { sortBySdr } from '../../models/scores.js';
import { print, printJson, withStore, type CommandContext } from '../context.js';
import { createProgressBar, createStatusLine, type ProgressBar } from '../progress.js';

function registryOf(ctx: CommandContext): ModelRegistry {
  const { config } = ctx;
  return registryFor(config);
}

/** A listing row with this data dir's measured speed (seconds per minute of audio, from its jobs; null until one ran). */
export type TimedListing = ModelListing & { readonly secondsPerMinute: number | null };

export interface ModelsListOptions {
  readonly json?: boolean;
  /** Only the models this data dir can run now. */
  readonly installed?: boolean;
  /** Only the models for this task (vocals, four-stems, karaoke, …). */
  readonly task?: string;
  /** `sdr`: best published SDR first (models/scores.ts headlineSdr), unscored last. */
  readonly sort?: string;
}

export async function modelsList(ctx: CommandContext, options: ModelsListOptions): Promise<void> {
  const timings = await withStore(ctx, (data) => data.modelTimings.secondsPerMinute());
  const rows: TimedListing[] = registryOf(ctx)
    .listing()
    .filter((row) => (!options.installed || row.installed) && (options.task === undefined || row.task === options.task))
    .map((row) => ({ ...row, secondsPerMinute: timings.get(row.name) ?? null }));
  if (options.sort === 'sdr') sortBySdr(rows, options.task);
  if (options.json) {
    printJson(ctx, rows);
    return;
  }
  for (const line of listingTable(rows, terminalWidth(ctx))) print(ctx, line);
  if (rows.some((row) => !row.installed)) {
    print(ctx, '');
    print(ctx, 'available: stemsplit models pull NAME (sources, hashes and terms of each: docs/models.md; full values: models list --json)');
  }
}

/** The terminal's width, or a width that reads well in a file or pipe. */
function terminalWidth(ctx: CommandContext): number {
  const stream = ctx.stdout as Partial<NodeJS.WriteStream>;
  return stream.isTTY && stream.columns ? Math.max(stream.columns, 60) : 120;
}

/** A name longer than this gets a line of its own, so the columns stay put. */
const NAME_COLUMN_MAX = 30;
/** Narrower than this, the terms leave their column for a line of their own under the row. */
const TERMS_COLUMN_MIN = 24;
const GAP = '  ';

/**
 * NAME, STEMS, STATE, FAMILY, TERMS: one row per model, terms wrapped in their column (they are
 * never cut: every listing says what a model's terms are), the description below each row.
 */
export function listingTable(rows: readonly TimedListing[], width: number): string[] {
  const cells = rows.map((row) => ({
    name: row.name,
    stems: `${row.sources.length} stems`,
    state: `${row.installed ? row.origin : 'available'}${row.aliases.length ? ` [${row.aliases.join(', ')}]` : ''}`,
    family: row.family,
  }));
  const widthOf = (key: keyof (typeof cells)[number], title: string, max = Infinity) =>
    Math.min(max, Math.max(title.length, ...cells.map((cell) => cell[key].length)));
  const widths = [widthOf('name', 'NAME', NAME_COLUMN_MAX), widthOf('stems', 'STEMS'), widthOf('state', 'STATE'), widthOf('family', 'FAMILY')];
  const termsAt = widths.reduce((sum, w) => sum + w + GAP.length, 0);
  const termsInColumn = width - termsAt >= TERMS_COLUMN_MIN;
  const row = (columns: readonly string[], terms: string) => [...columns.map((text, i) => text.padEnd(widths[i] as number)), terms].join(GAP).trimEnd();
  const lines = [row(['NAME', 'STEMS', 'STATE', 'FAMILY'], termsInColumn ? 'TERMS' : '')];
  // Why a model runs in fp32 only is the same words for many: each reason once, as a note the rows point to.
  const int8Reasons: string[] = [];
  const int8Note = (reason: string) => (int8Reasons.includes(reason) ? int8Reasons.indexOf(reason) : int8Reasons.push(reason) - 1) + 1;
  for (const [index, listing] of rows.entries()) {
    const cell = cells[index] as (typeof cells)[number];
    const long = cell.name.length > (widths[0] as number);
    if (long) lines.push(cell.name);
    const columns = [long ? '' : cell.name, cell.stems, cell.state, cell.family];
    if (termsInColumn) {
      const [first = '', ...more] = wrap(listing.terms, width - termsAt);
      lines.push(row(columns, first), ...more.map((text) => `${' '.repeat(termsAt)}${text}`));
    } else {
      lines.push(row(columns, ''), ...wrap(`terms: ${listing.terms}`, width - 2).map((text) => `  ${text}`));
    }
    for (const text of wrap(listing.description, width - 2)) lines.push(`  ${text}`);
    const speed = listing.secondsPerMinute === null ? '' : `; ${listing.secondsPerMinute} s per minute of audio here`;
    const int8 = listing.int8Refused === null ? '' : `; fp32 only [${int8Note(listing.int8Refused)}]`;
    for (const text of wrap(`task: ${listing.task}; stems: ${listing.sources.join(', ') || 'told when it loads'}${speed}${int8}`, width - 2))
      lines.push(`  ${text}`);
    if (listing.card) lines.push(`  card: ${listing.card}`);
    for (const scores of listing.scores)
      lines.push(
        ...wrap(
          `SDR ${Object.entries(scores.sdr)
            .map(([stem, sdr]) => `${stem} ${sdr.toFixed(2)}`)
            .join(', ')} dB: ${scores.source}`,
          width - 2,
        ).map((text) => `  ${text}`),
      );
  }
  if (int8Reasons.length > 0) lines.push('');
  for (const [index, reason] of int8Reasons.entries()) lines.push(...wrap(`[${index + 1}] fp32 only (--precision int8 refused): ${reason}`, width));
  return lines;
}

/** Lines of at most `width` characters, broken at spaces (a longer word is split). */
export function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (let word of text.split(/\s+/).filter(Boolean)) {
    while (word.length > width) {
      if (line) lines.push(line);
      line = '';
      lines.push(word.slice(0, width));
      word = word.slice(width);
    }
    if (!line) line = word;
    else if (line.length + 1 + word.length <= width) line += ` ${word}`;
    else {
      lines.push(line);
      line = word;
    }
  }
  if (line) lines.push(line);
  return lines;
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
  readonly file?: readonly string[];
  readonly json?: boolean;
}

export async function modelsPull(ctx: CommandContext, names: readonly string[], options: ModelsPullOptions): Promise<void> {
  const models = names.map(catalogModelNamed);
  const files = options.file ?? [];
  if (files.length > 0 && models.length !== 1) throw new StemsplitError('USAGE', '--file installs files of one model: name one model with it');
  const results = [];
  for (const model of models) {
    let bar: ProgressBar | undefined;
    const result = await pullModel(model, {
      cacheDir: ctx.config.cacheDir,
      baseUrl: options.baseUrl,
      localFiles: files.length > 0 ? matchLocalFiles(model, files) : undefined,
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
    // Once installed, so a refused file or a failed download leaves its one line alone on stderr.
    ctx.stderr.write(`${model.name}: ${model.description}\n  terms of the weights: ${model.terms}\n`);
    for (const file of result.downloaded) {
      const source = model.downloads?.find((d) => file.path.endsWith(d.file));
      if (source && source.sha256 === undefined) ctx.stderr.write(`  ${source.file}: ${source.hashSource}: ${file.sha256}\n`);
    }
    for (const note of pullStepsOf(model.family).notes?.(model) ?? []) ctx.stderr.write(`  ${note}\n`);
    results.push(result);
    if (!options.json) print(ctx, `${model.name} installed: ${result.path}`);
  }
  if (options.json) printJson(ctx, results);
}

export async function modelsRemove(ctx: CommandContext, names: readonly string[]): Promise<void> {
  const library = libraryDir(ctx.config.dataDir);
  for (const name of names) {
    if (catalogModel(name) === undefined && removeFromLibrary(library, name)) {
      print(ctx, `${name} removed from the library (${library})`);
      continue;
    }
    const model = catalogModelNamed(name);
    const removed = await removeModel(model, ctx.config.cacheDir);
    if (removed.length === 0) throw new StemsplitError('MODEL_NOT_FOUND', `${model.name} is not installed`);
    print(ctx, `${model.name} removed (${removed.length} file${removed.length === 1 ? '' : 's'})`);
  }
}

export interface ModelsAddOptions {
  readonly name?: string;
  readonly config?: string;
  readonly terms?: string;
  readonly task?: Task;
  readonly link?: boolean;
  readonly json?: boolean;
}

/** `models add FILE…`: each file checked by loading it, then kept in the data dir's library under its name. */
export async function modelsAdd(ctx: CommandContext, paths: readonly string[], options: ModelsAddOptions): Promise<void> {
  const registry = registryOf(ctx);
  const files = modelFilesIn(paths, registry);
  if (files.length > 1 && (options.name !== undefined || options.config !== undefined)) {
    throw new StemsplitError('USAGE', '--name and --config describe one model file; add the files one at a time');
  }
  const library = libraryDir(ctx.config.dataDir);
  const loaders = modelLoader({ cacheDir: ctx.config.cacheDir, intraOpThreads: ctx.config.intraOpThreads, precision: ctx.config.precision });
  const added = [];
  const failed: { file: string; error: unknown }[] = [];
  for (const file of files) {
    // On a terminal only and cleared after: a refused file's line is then the one line on stderr.
    const checking = createStatusLine(ctx.stderr);
    checking.show(`${file}: checking it (loads it once; a large checkpoint takes a minute or more to convert)…`);
    let model;
    try {
      model = await addModel(registry, library, file, options, loaders);
    } catch (error) {
      checking.clear();
      // One file of a folder failing does not stop the others: it is named, and the command fails at the end.
      if (files.length === 1) throw error;
      failed.push({ file, error });
      const message = describeError(error);
      ctx.stderr.write(`stemsplit: ${message.includes(file) ? '' : `${file}: `}${message}\n`);
      continue;
    }
    checking.clear();
    const how =
      model.installedBy === 'link'
        ? 'hard-linked (moving or deleting the original is safe; editing it in place changes this copy)'
        : 'copied (the original may move or be deleted)';
    if (!options.json) {
      print(ctx, `${model.name} added: ${model.stems.length} stems (${model.stems.join(', ')}), ${model.files.length} file(s) ${how} into ${model.dir}`);
      print(ctx, `  terms: ${model.terms}; run it with: stemsplit split song.wav --model ${model.name}`);
    }
    added.push(model);
  }
  if (options.json) printJson(ctx, added);
  const [first] = failed;
  if (first !== undefined) {
    const codes = new Set(failed.map(({ error }) => (isStemsplitError(error) ? error.code : 'MODEL_INVALID')));
    const code = codes.size === 1 ? ([...codes][0] as ErrorCode) : 'MODEL_INVALID';
    throw new StemsplitError(code, `${failed.length} of ${files.length} model files were not added: ${failed.map(({ file }) => basename(file)).join(', ')}`);
  }
}

/**
 * The model files among `paths`: a folder stands for the model files in it (as UVR keeps them), and
 * a file that is another's companion (its NAME.yaml, NAME.json; a Demucs bag's members, which
 * belong to the bag) is not a model of its own.
 */
function modelFilesIn(paths: readonly string[], registry: ModelRegistry): string[] {
  const inFolder = (folder: string) =>
    readdirSync(folder)
      .sort()
      .map((entry) => join(folder, entry))
      .filter((file) => statSync(file).isFile() && registry.isModelFile(file));
  const files = paths.flatMap((path) => (statSync(path, { throwIfNoEntry: false })?.isDirectory() ? inFolder(path) : [path]));
  if (files.length === 1) return files;
  const stemOf = (file: string) => join(dirname(file), basename(file, extname(file)));
  const models = new Set(files.filter((file) => !COMPANION.test(file)).map(stemOf));
  const owned = new Set(files.flatMap((file) => companionFilesOf(registry, file).map((companion) => resolve(companion))));
  return files.filter((file) => !(COMPANION.test(file) && models.has(stemOf(file))) && !owned.has(resolve(file)) && !file.endsWith('library.json'));
}

/** A model's companion files: MSST's yaml, UVR's model data. */
const COMPANION = /\.(ya?ml|json)$/i;
