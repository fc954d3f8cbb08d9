/**
 * Start-up of the standalone executable (Node's single executable applications): unpack the
 * runtime it carries, then tell the rest of stemsplit where things are through the same
 * environment variables a user could set. Outside an executable this does nothing.
 */
import { basename, join, resolve } from 'node:path';
import { getAsset, isSea } from 'node:sea';
import envPaths from 'env-paths';
import { StemsplitError, describeError } from '../errors.js';
import { ensureRuntime } from './extract.js';
import { MANIFEST_ASSET, RUNTIME_LAYOUT, parseManifest } from './manifest.js';
import { markRuntimeUsed, pruneRuntimes } from './prune.js';
import { WORKER_SCRIPT_ENV } from '../split-worker/worker-pool.js';

/** Set to the unpacked runtime dir; `requireNative` (./native.ts) loads the addons from there. */
export const RUNTIME_DIR_ENV = 'STEMSPLIT_RUNTIME_DIR';

/** `$STEMSPLIT_CACHE_DIR/runtime`, else `~/.cache/stemsplit/runtime`: shared by every data dir. */
export function runtimeParentDir(env: NodeJS.ProcessEnv): string {
  const cache = env['STEMSPLIT_CACHE_DIR'] || envPaths('stemsplit', { suffix: '' }).cache;
  return join(resolve(cache), 'runtime');
}

/** Unpacks (first start) or finds (later starts) the runtime and points `env` at it. No-op outside an executable. */
export function prepareSeaRuntime(env: NodeJS.ProcessEnv): void {
  if (!isSea()) return;
  const manifest = parseManifest(getAsset(MANIFEST_ASSET, 'utf8'));
  const parentDir = runtimeParentDir(env);
  let dir: string;
  try {
    dir = ensureRuntime(manifest, parentDir, (name) => new Uint8Array(getAsset(name)));
  } catch (error) {
    throw new StemsplitError(
      'IO_ERROR',
      `cannot unpack the executable's runtime into ${parentDir}: ${describeError(error)} (set STEMSPLIT_CACHE_DIR to a writable folder)`,
      { cause: error },
    );
  }
  pointAtRuntime(env, dir);
  forgetOldRuntimes(dir, parentDir);
}

/** Best effort: a cache dir that cannot be touched or cleaned never stops a start. */
function forgetOldRuntimes(dir: string, parentDir: string): void {
  try {
    markRuntimeUsed(dir);
    pruneRuntimes(parentDir, basename(dir));
  } catch {
    // Left for the next start.
  }
}

function pointAtRuntime(env: NodeJS.ProcessEnv, dir: string): void {
  env[RUNTIME_DIR_ENV] = dir;
  // Taken after an explicit STEMSPLIT_FFMPEG and a system ffmpeg on PATH, like the npm package's own.
  env['STEMSPLIT_BUNDLED_FFMPEG'] = join(dir, RUNTIME_LAYOUT.ffmpeg);
  env[WORKER_SCRIPT_ENV] = join(dir, RUNTIME_LAYOUT.splitWorker);
  // A models dir chosen by the user still wins.
  env['STEMSPLIT_MODELS_DIR'] ||= join(dir, RUNTIME_LAYOUT.modelsDir);
}
