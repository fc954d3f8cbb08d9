/**
 * The store every repository talks to: Kysely builds the query, the store runs it on SQLite
 * (one file, one box) or PostgreSQL (several boxes). Repositories never see which.
 *
 * A transaction is a scope, not a handle: queries issued while `transaction(fn)` runs, in `fn`
 * or anything it awaits, run inside it. Nested calls join the outer transaction. That keeps
 * "debit, ledger row and job row in one transaction" a matter of wrapping the calls.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Compilable, Kysely, SelectQueryBuilder } from 'kysely';
import type { Database } from './schema.js';

export type Dialect = 'sqlite' | 'postgres';

export interface Store {
  /** Typed query builder. Build with it, then execute with `all`, `first` or `run`. */
  readonly db: Kysely<Database>;
  readonly dialect: Dialect;
  /** Where the data lives, for messages: a file path or a URL without its password. */
  readonly location: string;
  all<R>(query: Compilable<R>): Promise<R[]>;
  first<R>(query: Compilable<R>): Promise<R | undefined>;
  run(query: Compilable<unknown>): Promise<{ changes: number }>;
  /**
   * `query` holding its rows until the transaction ends (`FOR UPDATE`), passing over rows another
   * transaction holds when `skipLocked`. On SQLite the query as it is: its IMMEDIATE transaction
   * already keeps every other writer out.
   */
  lockRows<DB, TB extends keyof DB, O>(query: SelectQueryBuilder<DB, TB, O>, options?: { skipLocked?: boolean }): SelectQueryBuilder<DB, TB, O>;
  /** Runs `fn` in one transaction; a throw rolls everything back. */
  transaction<T>(fn: () => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** What one open transaction runs its statements on; `open` turns false at commit or rollback. */
export interface TransactionScope<Connection> {
  readonly connection: Connection;
  open: boolean;
}

/**
 * Tracks the transaction the current async call chain is in. A scope that has ended (a
 * callback fired after the commit, say) counts as none, so it cannot write into a later one.
 */
export class TransactionTracker<Connection> {
  readonly #storage = new AsyncLocalStorage<TransactionScope<Connection>>();

  current(): TransactionScope<Connection> | undefined {
    const scope = this.#storage.getStore();
    return scope?.open ? scope : undefined;
  }

  async within<T>(connection: Connection, fn: () => Promise<T>): Promise<T> {
    const scope: TransactionScope<Connection> = { connection, open: true };
    try {
      return await this.#storage.run(scope, fn);
    } finally {
      scope.open = false;
    }
  }
}
