/**
 * The SQLite database: WAL mode, Kysely migrations, and synchronous execution of
 * Kysely-built queries. better-sqlite3 is synchronous, so a transaction written as a
 * plain function cannot interleave with any other request: that is what makes
 * "debit and create the job" atomic without locks.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, Migrator, SqliteDialect, type Compilable } from 'kysely';
import { StemsplitError } from '../errors.js';
import { migrations } from './migrations.js';
import type { Database } from './schema.js';

export interface Store {
  /** Typed query builder. Build with it, then execute with `all`, `first` or `run`. */
  readonly db: Kysely<Database>;
  all<R>(query: Compilable<R>): R[];
  first<R>(query: Compilable<R>): R | undefined;
  run(query: Compilable<unknown>): { changes: number };
  /** Runs `fn` in one IMMEDIATE transaction; a throw rolls everything back. */
  transaction<T>(fn: () => T): T;
  close(): void;
}

function toSqliteParameter(value: unknown): unknown {
  if (typeof value === 'boolean') return value ? 1 : 0;
  return value;
}

export async function openStore(path: string): Promise<Store> {
  mkdirSync(dirname(path), { recursive: true });
  let sqlite: BetterSqlite3.Database;
  try {
    sqlite = new BetterSqlite3(path);
  } catch (error) {
    throw new StemsplitError('IO_ERROR', `cannot open database ${path}: ${(error as Error).message}`, { cause: error });
  }
  // First, so that a process starting beside another waits for its locks instead of failing.
  sqlite.pragma('busy_timeout = 5000');
  sqlite.pragma('journal_mode = WAL');
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

  return Object.freeze({
    db,
    all<R>(query: Compilable<R>): R[] {
      const { statement, parameters } = bind(query);
      return statement.all(...parameters) as R[];
    },
    first<R>(query: Compilable<R>): R | undefined {
      const { statement, parameters } = bind(query);
      return statement.get(...parameters) as R | undefined;
    },
    run(query: Compilable<unknown>): { changes: number } {
      const { statement, parameters } = bind(query);
      return whenDiskFull(() => ({ changes: statement.run(...parameters).changes }));
    },
    transaction<T>(fn: () => T): T {
      return whenDiskFull(() => sqlite.transaction(fn).immediate());
    },
    close(): void {
      sqlite.close();
    },
  });
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
  return applied.map((row) => row.name).filter((name) => !(name in migrations));
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
    provider: { getMigrations: async () => ({ ...migrations }) },
  });
  try {
    sqlite.exec('BEGIN IMMEDIATE');
  } catch (error) {
    throw new StemsplitError('IO_ERROR', `database ${sqlite.name} stayed locked by another process for 5 s: ${(error as Error).message}`, { cause: error });
  }
  const newer = migrationsFromNewerVersion(sqlite);
  if (newer.length > 0) {
    sqlite.exec('ROLLBACK');
    const known = Object.keys(migrations).at(-1);
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
