/**
 * An exclusive lock between processes, for work two stemsplit processes must not do at once on
 * the same folder. It is SQLite's own lock: an EXCLUSIVE transaction held on a small database
 * file (journal in memory, so no `-journal` file beside it). That is a POSIX lock, which the OS
 * drops when the process ends however it ends: a crash or SIGKILL leaves no stale lock to clear.
 * The file stays when the lock is released; deleting it could let two processes lock two inodes.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { StemsplitError } from './errors.js';

export interface ProcessLock {
  release(): void;
}

/** Takes the lock on `path` at once, or throws IO_ERROR with `heldMessage` if another process holds it. */
export function takeProcessLock(path: string, heldMessage: string): ProcessLock {
  mkdirSync(dirname(path), { recursive: true });
  let lock: BetterSqlite3.Database;
  try {
    lock = new BetterSqlite3(path, { timeout: 0 });
  } catch (error) {
    throw new StemsplitError('IO_ERROR', `cannot open ${path}: ${(error as Error).message}`, { cause: error });
  }
  try {
    lock.pragma('journal_mode = MEMORY');
    lock.exec('BEGIN EXCLUSIVE');
  } catch (error) {
    lock.close();
    if ((error as { code?: unknown }).code === 'SQLITE_BUSY') throw new StemsplitError('IO_ERROR', heldMessage);
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
