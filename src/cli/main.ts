/**
 * The entry point, and the only place that exits: commands throw, this maps the error to a
 * one-line message on stderr and an exit code.
 */
import { CommanderError, type Command } from 'commander';
import { describeError, isStemsplitError } from '../errors.js';
import { buildProgram, contextFor } from './program.js';
import { withSeparatorSpellings } from './separator-flags.js';

export async function main(argv: readonly string[]): Promise<number> {
  let exitCode = 0;
  const program = buildProgram(async (fn, input) => {
    await fn(contextFor(input));
  });
  throwOnUsageErrors(program);
  try {
    await program.parseAsync(withSeparatorSpellings(argv), { from: 'user' });
  } catch (error) {
    exitCode = reportError(error);
  }
  return exitCode;
}

/**
 * Commander exits by itself on a usage error in a subcommand (with 1, the code of a bug) unless
 * each command is told to throw: then reportError gives it the usage code, 2, as any other.
 */
function throwOnUsageErrors(command: Command): void {
  command.exitOverride();
  for (const sub of command.commands) throwOnUsageErrors(sub);
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
