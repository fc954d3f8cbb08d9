/**
 * The entry of the standalone executable's bundle. A SEA runs its main script as CommonJS,
 * where src/cli/run.ts's top-level await is not allowed, so this entry unpacks the runtime
 * and then runs the CLI through a plain promise.
 */
import { main } from '../cli/main.js';
import { describeError, isStemsplitError } from '../errors.js';
import { prepareSeaRuntime } from './runtime.js';

function start(): void {
  try {
    prepareSeaRuntime(process.env);
  } catch (error) {
    process.stderr.write(`stemsplit: ${describeError(error)}\n`);
    process.exitCode = isStemsplitError(error) ? error.exitCode : 1;
    return;
  }
  void main(process.argv.slice(2)).then((exitCode) => {
    process.exitCode = exitCode;
  });
}

start();
