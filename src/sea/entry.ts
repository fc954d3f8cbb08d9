/**
 * The entry of the standalone executable's bundle. A SEA runs its main script as CommonJS,
 * where src/cli/run.ts's top-level await is not allowed, so this entry unpacks the runtime
 * and then runs the CLI through a plain promise. Started as a split worker (the executable is
 * the only Node it has), it runs the worker bundle its parent unpacked instead.
 */
import { createRequire } from 'node:module';
import { main } from '../cli/main.js';
import { describeError, isStemsplitError } from '../errors.js';
import { WORKER_PROCESS_ENV, WORKER_SCRIPT_ENV } from '../split-worker/worker-pool.js';
import { prepareSeaRuntime } from './runtime.js';

function start(): void {
  const worker = process.env[WORKER_PROCESS_ENV] && process.env[WORKER_SCRIPT_ENV];
  if (worker) {
    // A SEA's own require reaches only built-in modules; files on disk load through createRequire.
    createRequire(process.execPath)(worker);
    return;
  }
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
