/**
 * The store on PostgreSQL, for several boxes sharing one service: a `pg` pool under Kysely's
 * PostgreSQL dialect, the same migrations as SQLite (Kysely's migrator takes PostgreSQL's
 * advisory lock, so nodes starting together take turns), READ COMMITTED transactions.
 *
 * Correctness under concurrency rests on the schema, not on isolation levels: the balance's
 * CHECK, the ledger's one-charge-one-refund index, conditional state changes (`where status =`)
 * and primary keys. A transaction that deadlocks anyway is run again.
 */
import { Kysely, Migrator, PostgresDialect, type Compilable, type SelectQueryBuilder, type Transaction } from 'kysely';
import pg from 'pg';
import { describeError, StemsplitError } from '../errors.js';
import { TransactionTracker, type Store } from './database.js';
import { migrationsFor } from './migrations.js';
import type { Database } from './schema.js';

const INT8_OID = 20;
/** Deadlock and serialization failure: safe to run the whole transaction again. */
const RETRYABLE = new Set(['40P01', '40001']);
const MAX_TRANSACTION_TRIES = 5;

/** The URL as it may be printed: never its password. */
export function redactDatabaseUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'postgres://(unparseable URL)';
  }
}

export interface PostgresOptions {
  /** Connections this process may hold (default 10). */
  readonly maxConnections?: number;
  readonly log?: (line: string) => void;
}

export async function openPostgresStore(url: string, options: PostgresOptions = {}): Promise<Store> {
  const location = redactDatabaseUrl(url);
  const pool = new pg.Pool({
    connectionString: url,
    max: options.maxConnections ?? 10,
    connectionTimeoutMillis: 5_000,
    // Counts and millisecond timestamps are int8; every one of ours fits a double exactly.
    types: {
      getTypeParser: ((oid: number, format?: string) =>
        oid === INT8_OID ? Number : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
    },
  });
  // A connection the server or the network dropped (a restart, a failover) must not take the
  // process down: the pool reports idle ones, and a checked-out one between two queries would
  // otherwise emit an 'error' nobody listens to. Its next query fails, as DATABASE_UNAVAILABLE.
  // Said once per outage (every idle connection reports the same loss), again after a query succeeds.
  let lossReported = false;
  pool.on('error', (error) => {
    if (lossReported) return;
    lossReported = true;
    options.log?.(`PostgreSQL connection lost (${describeError(error)}); the pool reconnects`);
  });
  pool.on('connect', (client) => client.on('error', () => undefined));
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });

  try {
    await migrate(db, location);
  } catch (error) {
    await db.destroy();
    throw error;
  }

  const tracker = new TransactionTracker<Transaction<Database>>();
  const executor = () => tracker.current()?.connection ?? db;
  const execute = async <R>(query: Compilable<R>) => {
    try {
      const result = await executor().executeQuery(query.compile());
      lossReported = false;
      return result;
    } catch (error) {
      throw unavailable(error, location) ?? error;
    }
  };

  return Object.freeze({
    db,
    dialect: 'postgres' as const,
    location,
    async all<R>(query: Compilable<R>): Promise<R[]> {
      return (await execute(query)).rows;
    },
    async first<R>(query: Compilable<R>): Promise<R | undefined> {
      return (await execute(query)).rows[0];
    },
    async run(query: Compilable<unknown>): Promise<{ changes: number }> {
      return { changes: Number((await execute(query)).numAffectedRows ?? 0n) };
    },
    lockRows<DB, TB extends keyof DB, O>(query: SelectQueryBuilder<DB, TB, O>, options: { skipLocked?: boolean } = {}): SelectQueryBuilder<DB, TB, O> {
      return options.skipLocked ? query.forUpdate().skipLocked() : query.forUpdate();
    },
    async transaction<T>(fn: () => Promise<T>): Promise<T> {
      if (tracker.current()) return fn();
      for (let tries = 1; ; tries++) {
        try {
          return await db.transaction().execute((trx) => tracker.within(trx, fn));
        } catch (error) {
          if (tries < MAX_TRANSACTION_TRIES && RETRYABLE.has(sqlState(error) ?? '')) continue;
          throw unavailable(error, location) ?? error;
        }
      }
    },
    close: () => db.destroy(),
  });
}

async function migrate(db: Kysely<Database>, location: string): Promise<void> {
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrationsFor('postgres') } });
  const { error, results } = await migrator.migrateToLatest().catch((thrown: unknown) => ({ error: thrown, results: undefined }));
  if (!error) return;
  const down = unavailable(error, location);
  if (down) throw down;
  const failed = results?.find((r) => r.status === 'Error')?.migrationName;
  const message = describeError(error);
  if (/corrupted migrations/i.test(message)) {
    throw new StemsplitError('IO_ERROR', `database ${location} was last used by a newer stemsplit; run that version or a later one`, { cause: error });
  }
  throw new StemsplitError('IO_ERROR', `database migration ${failed ?? 'lock'} failed on ${location}: ${message}`, { cause: error });
}

function sqlState(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** Socket errors and the server's "cannot serve now" states (class 08, 57P0x, 53300). */
function isUnavailable(error: unknown): boolean {
  const code = sqlState(error) ?? '';
  if (/^(ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|EPIPE)$/.test(code)) return true;
  if (code.startsWith('08') || /^57P0[1-3]$/.test(code) || code === '53300') return true;
  return /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(describeError(error));
}

/** The error a caller sees when PostgreSQL cannot be reached: 503 in the API, a retry for workers. */
function unavailable(error: unknown, location: string): StemsplitError | undefined {
  if (error instanceof StemsplitError || !isUnavailable(error)) return undefined;
  return new StemsplitError('DATABASE_UNAVAILABLE', `PostgreSQL at ${location} is unreachable (${describeError(error)}); try again once it is back`, {
    cause: error,
    headers: { 'Retry-After': '5' },
  });
}
