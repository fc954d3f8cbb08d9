/**
 * The entry point, and the only place that exits: commands throw, this maps the error to a
 * one-line message on stderr and an exit code.
 */
import { CommanderError } from 'commander';
import { describeError, isStemsplitError } from '../errors.js';
import { buildProgram, contextFor } from './program.js';

export async function main(argv: readonly string[]): Promise<number> {
  let exitCode = 0;
  const program = buildProgram(async (fn, input) => {
    await fn(contextFor(input));
  });
  program.exitOverride();
  try {
    await program.parseAsync([...argv], { from: 'user' });
  } catch (error) {
    exitCode = reportError(error);
  }
  return exitCode;
}

function reportError(error: unknown): number {
  if (error instanceof CommanderError) {
    // Commander already printed its message (help and version exit with 0).
    return error.exitCode === 0 ? 0 : 2;
  }
  if (isStemsplitError(error)) {
    process.stderr.write(`stemsplit: ${describeError(error)}\n`);
    return error.exitCode;
  }
  process.stderr.write(`stemsplit: ${describeError(error)}\n`);
  if (process.env['STEMSPLIT_DEBUG']) process.stderr.write(`${(error as Error).stack ?? ''}\n`);
  return 1;
}
