import { ModelRegistry } from '../../models/registry.js';
import { print, printJson, type CommandContext } from '../context.js';

function registryOf(ctx: CommandContext): ModelRegistry {
  const { config } = ctx;
  return new ModelRegistry({ bundledDir: config.bundledModelsDir, cacheDir: config.cacheDir, aliases: config.modelAliases });
}

export async function modelsList(ctx: CommandContext, options: { json?: boolean }): Promise<void> {
  const rows = registryOf(ctx).listing();
  if (options.json) {
    printJson(ctx, rows);
    return;
  }
  for (const row of rows) {
    const state = row.installed ? row.origin : 'not installed (stemsplit models pull ' + row.name + ')';
    const aliases = row.aliases.length ? ` [${row.aliases.join(', ')}]` : '';
    print(ctx, `${row.name.padEnd(22)} ${String(row.sources.length).padStart(1)} stems  ${state}${aliases}`);
    print(ctx, `${''.padEnd(22)} ${row.description}`);
  }
}
