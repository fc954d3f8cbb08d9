/** Split jobs as rows: creation with its charge, state changes, and the queries the worker needs. */
import { isoAt, type Clock } from './clock.js';
import type { Store } from './database.js';
import type { SplitTable } from './schema.js';

export type Split = SplitTable;

export class Splits {
  readonly #store: Store;
  readonly #clock: Clock;

  constructor(store: Store, clock: Clock) {
    this.#store = store;
    this.#clock = clock;
  }

  insert(split: Split): void {
    this.#store.run(this.#store.db.insertInto('splits').values(split));
  }

  get(id: string): Split | undefined {
    return this.#store.first(this.#store.db.selectFrom('splits').selectAll().where('id', '=', id));
  }

  /** A page of one API key's jobs, newest first; `before` is the last id of the previous page. */
  /** An account's jobs, made with any of its keys, newest first, from before `before`. */
  listForAccount(accountId: string, limit: number, before?: string): Split[] {
    let query = this.#store.db.selectFrom('splits').selectAll().where('accountId', '=', accountId);
    if (before) query = query.where('id', '<', before);
    return this.#store.all(query.orderBy('id', 'desc').limit(limit));
  }

  /** Jobs a crash left unfinished, oldest first: the worker resumes them on start. */
  unfinished(): Split[] {
    return this.#store.all(
      this.#store.db.selectFrom('splits').selectAll().where('status', 'in', ['queued', 'processing']).orderBy('id'),
    );
  }

  /** queued → processing; counts the attempt so a job that keeps crashing the server can be stopped. */
  markProcessing(id: string, modelName: string): boolean {
    const result = this.#store.run(
      this.#store.db
        .updateTable('splits')
        .set((eb) => ({
          status: 'processing',
          modelName,
          progress: 0,
          attempts: eb('attempts', '+', 1),
          updatedAt: isoAt(this.#clock.now()),
        }))
        .where('id', '=', id)
        .where('status', 'in', ['queued', 'processing']),
    );
    return result.changes === 1;
  }

  setProgress(id: string, progress: number): void {
    this.#store.run(
      this.#store.db
        .updateTable('splits')
        .set({ progress: Math.max(0, Math.min(100, Math.floor(progress))), updatedAt: isoAt(this.#clock.now()) })
        .where('id', '=', id)
        .where('status', '=', 'processing'),
    );
  }

  /** processing → succeeded. Runs inside the caller's transaction (with the webhook outbox row). */
  markSucceeded(id: string, stemNames: readonly string[]): boolean {
    const now = this.#clock.now();
    const result = this.#store.run(
      this.#store.db
        .updateTable('splits')
        .set({ status: 'succeeded', progress: 100, stemNames: JSON.stringify(stemNames), updatedAt: isoAt(now), finishedAtMs: now })
        .where('id', '=', id)
        .where('status', '=', 'processing'),
    );
    return result.changes === 1;
  }

  /** queued|processing → failed. Runs inside the caller's transaction (with the refund). */
  markFailed(id: string, code: string, message: string): boolean {
    const now = this.#clock.now();
    const result = this.#store.run(
      this.#store.db
        .updateTable('splits')
        .set({ status: 'failed', errorCode: code, errorMessage: message, updatedAt: isoAt(now), finishedAtMs: now })
        .where('id', '=', id)
        .where('status', 'in', ['queued', 'processing']),
    );
    return result.changes === 1;
  }

  /** Finished jobs whose stems are past retention and still on disk. */
  expiredStems(olderThanMs: number, limit: number): Split[] {
    return this.#store.all(
      this.#store.db
        .selectFrom('splits')
        .selectAll()
        .where('status', 'in', ['succeeded', 'failed'])
        .where('finishedAtMs', '<=', olderThanMs)
        .where('purgedAt', 'is', null)
        .limit(limit),
    );
  }

  markPurged(id: string): void {
    this.#store.run(this.#store.db.updateTable('splits').set({ purgedAt: isoAt(this.#clock.now()) }).where('id', '=', id));
  }
}
