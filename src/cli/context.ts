/** What every command gets: its resolved config and where to print. */
import type { StemsplitConfig } from '../config.js';

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
