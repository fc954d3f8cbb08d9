/**
 * One `serve` per data dir. A second server on the same dir would take the first's running jobs
 * and in-flight uploads for interrupted ones, and run them again or delete their partial files.
 * CLI commands (keys, credits) do not take the lock: they share the database with a running
 * server by design.
 */
import { join } from 'node:path';
import { takeProcessLock, type ProcessLock } from '../process-lock.js';

export function lockDataDirForServe(dataDir: string): ProcessLock {
  return takeProcessLock(join(dataDir, 'serve.lock'), `another stemsplit serve is using the data dir ${dataDir}; stop it, or give this one its own --data-dir`);
}
