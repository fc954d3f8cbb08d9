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
export async function withStore<T>(ctx: CommandContext, fn: (data: DataStore) => Promise<T>): Promise<T> {
  const data = await openDataStore(ctx.config.dataDir, {
    initialCredits: ctx.config.initialCredits,
    idempotencyTtlSeconds: ctx.config.idempotencyTtlSeconds,
    databaseUrl: ctx.config.databaseUrl,
    maxConnections: 2,
  });
  try {
    return await fn(data);
  } finally {
    await data.close();
  }
}

/**
 * Runs until SIGINT or SIGTERM: the first signal closes gracefully (`close`), a second quits at
 * once. Each says what happens to the work in flight.
 */
export function runUntilSignalled(ctx: CommandContext, close: () => Promise<void>, words: { graceful: string; immediate: string }): Promise<void> {
  return new Promise<void>((resolve) => {
    let stopping = false;
    const stop = (signal: NodeJS.Signals) => {
      if (stopping) {
        ctx.stderr.write(`stopping now (${signal}): ${words.immediate}\n`);
        process.exit(130);
      }
      stopping = true;
      ctx.stderr.write(`stopping: ${words.graceful} (signal again to quit now)\n`);
      void close().then(resolve);
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}
