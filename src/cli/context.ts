/** What every command gets: its resolved config and where to print. */
import type { StemsplitConfig } from '../config.js';
import { openDataStore, type DataStore } from '../store/index.js';

export interface CommandContext {
  readonly config: StemsplitConfig;
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WriteStream;
}

export function print(ctx: CommandContext, line: string): void {
  ctx.stdout.write(`${line}\n`);
}

export function printJson(ctx: CommandContext, value: unknown): void {
  ctx.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** Opens the data dir for one command and closes it afterwards. */
export async function withStore<T>(ctx: CommandContext, fn: (data: DataStore) => T): Promise<T> {
  const data = await openDataStore(ctx.config.dataDir, {
    initialCredits: ctx.config.initialCredits,
    idempotencyTtlSeconds: ctx.config.idempotencyTtlSeconds,
  });
  try {
    return fn(data);
  } finally {
    data.close();
  }
}
