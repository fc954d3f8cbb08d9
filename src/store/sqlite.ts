/**
 * The store on SQLite: WAL mode, Kysely migrations, and Kysely-built queries run by
 * better-sqlite3. better-sqlite3 is synchronous; transactions may await, so one IMMEDIATE
 * transaction at a time holds the connection and every other statement of this process
 * waits for it to end. Other processes wait on SQLite's own lock (busy_timeout).
 */
import { chmodSync, mkdirSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, Migrator, SqliteDialect, type Compilable, type SelectQueryBuilder } from 'kysely';
import { StemsplitError } from '../errors.js';
import { TransactionTracker, type Store } from './database.js';
import { migrationNames, migrationsFor } from './migrations.js';
import type { Database } from './schema.js';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from './private-files.js';

/** How long a process waits for another's lock before it gives up. */
const LOCK_WAIT_MS = 5_000;

function toSqliteParameter(value: unknown): unknown {
  if (typeof value === 'boolean') return value ? 1 : 0;
  return value;
}

export async function openSqliteStore(path: string): Promise<Store> {
  mkdirSync(dirname(path), { recursive: true, mode: PRIVATE_DIR_MODE });
  let sqlite: BetterSqlite3.Database;
  try {
    sqlite = new BetterSqlite3(path);
  } catch (error) {
    throw new StemsplitError('IO_ERROR', `cannot open database ${path}: ${(error as Error).message}`, { cause: error });
  }
  // First, so that a process starting beside another waits for its locks instead of failing.
  sqlite.pragma(`busy_timeout = ${LOCK_WAIT_MS}`);
  await switchToWal(sqlite);
  keepPrivate(path);
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('foreign_keys = ON');

  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }) });
  await migrate(sqlite, db);

  const statements = new Map<string, BetterSqlite3.Statement>();
  const prepare = (sqlText: string): BetterSqlite3.Statement => {
    let statement = statements.get(sqlText);
    if (!statement) {
      statement = sqlite.prepare(sqlText);
      statements.set(sqlText, statement);
    }
    return statement;
  };
  const bind = (query: Compilable<unknown>) => {
    const compiled = query.compile();
    return { statement: prepare(compiled.sql), parameters: compiled.parameters.map(toSqliteParameter) };
  };

  const tracker = new TransactionTracker<BetterSqlite3.Database>();
  /** Settles when the transaction holding the connection ends. */
  let held: Promise<unknown> | undefined;
  /**
   * Runs `action` once no other call chain's transaction holds the connection. The last check
   * and the action share one synchronous step, so nothing can begin in between.
   */
  const exclusive = async <T>(action: () => T): Promise<T> => {
    while (!tracker.current() && held) await held.catch(() => undefined);
    return action();
  };

  return Object.freeze({
    db,
    dialect: 'sqlite' as const,
    location: path,
    all<R>(query: Compilable<R>): Promise<R[]> {
      return exclusive(() => {
        const { statement, parameters } = bind(query);
        return statement.all(...parameters) as R[];
      });
    },
    first<R>(query: Compilable<R>): Promise<R | undefined> {
      return exclusive(() => {
        const { statement, parameters } = bind(query);
        return statement.get(...parameters) as R | undefined;
      });
    },
    run(query: Compilable<unknown>): Promise<{ changes: number }> {
      return exclusive(() => {
        const { statement, parameters } = bind(query);
        return whenDiskFull(() => ({ changes: statement.run(...parameters).changes }));
      });
    },
    lockRows<DB, TB extends keyof DB, O>(query: SelectQueryBuilder<DB, TB, O>): SelectQueryBuilder<DB, TB, O> {
      return query;
    },
    async transaction<T>(fn: () => Promise<T>): Promise<T> {
      if (tracker.current()) return fn();
      while (held) await held.catch(() => undefined);
      const work = (async () => {
        whenDiskFull(() => sqlite.exec('BEGIN IMMEDIATE'));
        try {
          const result = await tracker.within(sqlite, fn);
          whenDiskFull(() => sqlite.exec('COMMIT'));
          return result;
        } catch (error) {
          if (sqlite.inTransaction) sqlite.exec('ROLLBACK');
          throw error;
        }
      })();
      held = work;
      try {
        return await work;
      } finally {
        if (held === work) held = undefined;
      }
    },
    async close(): Promise<void> {
      await exclusive(() => sqlite.close());
    },
  });
}

/**
 * The database holds the URL-signing key and webhook secrets: 0600 (its -wal and -shm files
 * too), even when a CLI command run under umask 022 made it. A file of another user is left as
 * it is (only its owner may change it).
 */
function keepPrivate(path: string): void {
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    try {
      if ((statSync(file).mode & 0o077) !== 0) chmodSync(file, PRIVATE_FILE_MODE);
    } catch {
      // Missing (no WAL yet) or not ours.
    }
  }
}

/** A write the full disk refused is STORAGE_FAILED (507), not a bug: say so in words. */
function whenDiskFull<T>(write: () => T): T {
  try {
    return write();
  } catch (error) {
    if ((error as { code?: unknown }).code === 'SQLITE_FULL') {
      throw new StemsplitError('STORAGE_FAILED', 'the disk holding the database is full; nothing was changed', { cause: error });
    }
    throw error;
  }
}

/**
 * Migrations this version does not know: a newer stemsplit ran here. Its schema is not this
 * version's to use (Kysely would only say "corrupted migrations"), so the open is refused.
 */
function migrationsFromNewerVersion(sqlite: BetterSqlite3.Database): string[] {
  const table = sqlite.prepare("select 1 from sqlite_master where type = 'table' and name = 'kysely_migration'").get();
  if (!table) return [];
  const applied = sqlite.prepare('select name from kysely_migration order by name').all() as Array<{ name: string }>;
  return applied.map((row) => row.name).filter((name) => !migrationNames.includes(name));
}

/**
 * A fresh file's switch to WAL turns a read lock into a write lock. When another process is
 * doing the same, SQLite answers BUSY at once instead of waiting (waiting could deadlock), so
 * the switch is tried again, a few milliseconds apart, for as long as any other lock is awaited.
 */
async function switchToWal(sqlite: BetterSqlite3.Database): Promise<void> {
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      sqlite.pragma('journal_mode = WAL');
      return;
    } catch (error) {
      if ((error as { code?: string }).code !== 'SQLITE_BUSY') throw error;
      if (Date.now() >= deadline) throw stayedLocked(sqlite, error);
      await sleep(10 + Math.random() * 40);
    }
  }
}

function stayedLocked(sqlite: BetterSqlite3.Database, error: unknown): StemsplitError {
  const seconds = LOCK_WAIT_MS / 1000;
  return new StemsplitError('IO_ERROR', `database ${sqlite.name} stayed locked by another process for ${seconds} s: ${(error as Error).message}`, {
    cause: error,
  });
}

/**
 * Kysely runs SQLite migrations outside any transaction (its adapter reports no transactional
 * DDL, though SQLite has it). One IMMEDIATE transaction around the run makes it all-or-nothing,
 * and makes processes that open a fresh data dir together take turns: the later ones find the
 * schema done. Nothing else uses this connection until `openStore` returns.
 */
async function migrate(sqlite: BetterSqlite3.Database, db: Kysely<Database>): Promise<void> {
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => migrationsFor('sqlite') },
  });
  try {
    sqlite.exec('BEGIN IMMEDIATE');
  } catch (error) {
    throw stayedLocked(sqlite, error);
  }
  const newer = migrationsFromNewerVersion(sqlite);
  if (newer.length > 0) {
    sqlite.exec('ROLLBACK');
    const known = migrationNames.at(-1);
    throw new StemsplitError(
      'IO_ERROR',
      `database ${sqlite.name} was last used by a newer stemsplit (it has migration ${newer.join(', ')}; this version knows up to ${known}); run that version or a later one`,
    );
  }
  const { error, results } = await migrator.migrateToLatest().catch((thrown: unknown) => ({ error: thrown, results: undefined }));
  if (!error) {
    sqlite.exec('COMMIT');
    return;
  }
  sqlite.exec('ROLLBACK');
  const failed = results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown';
  throw new StemsplitError('IO_ERROR', `database migration ${failed} failed: ${(error as Error).message}`, { cause: error });
}
