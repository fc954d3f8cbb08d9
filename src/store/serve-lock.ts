/**
 * One `serve` per data dir. A second server on the same dir would take the first's running jobs
 * and in-flight uploads for interrupted ones, and run them again or delete their partial files.
 * The lock is SQLite's own: an EXCLUSIVE transaction held on a small `serve.lock` database, that
 * is a POSIX lock the OS drops when the process ends however it ends, so a crash leaves no stale
 * lock behind. CLI commands (keys, credits) do not take it: they share the database with a
 * running server by design.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { StemsplitError } from '../errors.js';

export interface ServeLock {
  release(): void;
}

export function lockDataDirForServe(dataDir: string): ServeLock {
  mkdirSync(dataDir, { recursive: true });
  const path = join(dataDir, 'serve.lock');
  let lock: BetterSqlite3.Database;
  try {
    lock = new BetterSqlite3(path, { timeout: 0 });
  } catch (error) {
    throw new StemsplitError('IO_ERROR', `cannot open ${path}: ${(error as Error).message}`, { cause: error });
  }
  try {
    // The journal in memory: the lock database holds no data, and no `serve.lock-journal` is left beside it.
    lock.pragma('journal_mode = MEMORY');
    lock.exec('BEGIN EXCLUSIVE');
  } catch (error) {
    lock.close();
    if ((error as { code?: unknown }).code === 'SQLITE_BUSY') {
      throw new StemsplitError('IO_ERROR', `another stemsplit serve is using the data dir ${dataDir}; stop it, or give this one its own --data-dir`);
    }
    throw new StemsplitError('IO_ERROR', `cannot lock ${path}: ${(error as Error).message}`, { cause: error });
  }
  let held = true;
  return Object.freeze({
    release(): void {
      if (!held) return;
      held = false;
      lock.close();
    },
  });
}
