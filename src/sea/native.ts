/**
 * Loading a native addon inside the executable. The bundle cannot `require` a `.node` file
 * (a SEA's `require` knows only built-in modules), so scripts/build-exe.ts rewrites the two
 * places that load one, better-sqlite3's `bindings` call and onnxruntime-node's binding,
 * into calls of `requireNative` with the addon's path in the unpacked runtime dir.
 */
import { join } from 'node:path';
import { RUNTIME_DIR_ENV } from './runtime.js';

export function requireNative(relativePath: string, env: NodeJS.ProcessEnv = process.env): unknown {
  const dir = env[RUNTIME_DIR_ENV];
  if (!dir) throw new Error(`${relativePath}: native addons load only inside the stemsplit executable (${RUNTIME_DIR_ENV} is not set)`);
  // What Node's own `.node` loader does, without a resolver that would look beside the executable.
  const addon = { exports: {} as unknown };
  process.dlopen(addon, join(dir, relativePath));
  return addon.exports;
}
