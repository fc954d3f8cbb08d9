/**
 * Split jobs as rows: creation with its charge, state changes, and the queue. The queue is this
 * table: a worker claims the oldest job nobody holds by writing a lease on it (its name and an
 * expiry it keeps pushing forward); a job whose lease lapsed (its worker died) is claimed again.
 * On PostgreSQL the claim skips rows another worker is claiming (`FOR UPDATE SKIP LOCKED`, see
 * `Store.lockRows`); on SQLite the claim's IMMEDIATE transaction already excludes every other writer.
 */
import type { JobErrorCode } from '../errors.js';
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

  async insert(split: Split): Promise<void> {
    await this.#store.run(this.#store.db.insertInto('splits').values(split));
  }

  get(id: string): Promise<Split | undefined> {
    return this.#store.first(this.#store.db.selectFrom('splits').selectAll().where('id', '=', id));
  }

  /** An account's jobs, made with any of its keys, newest first, from before `before`. */
  listForAccount(accountId: string, limit: number, before?: string): Promise<Split[]> {
    let query = this.#store.db.selectFrom('splits').selectAll().where('accountId', '=', accountId).where('deletedAt', 'is', null);
    if (before) query = query.where('id', '<', before);
    return this.#store.all(query.orderBy('id', 'desc').limit(limit));
  }

  /** A queued job's place in the queue (1: the next a worker takes; jobs are taken oldest first), or undefined when it is not queued. */
  async queuePosition(split: Split): Promise<number | undefined> {
    if (split.status !== 'queued') return undefined;
    const row = await this.#store.first(
      this.#store.db
        .selectFrom('splits')
        .select((eb) => eb.fn.countAll<number>().as('ahead'))
        .where('status', '=', 'queued')
        .where('deletedAt', 'is', null)
        .where('id', '<', split.id),
    );
    return Number(row?.ahead ?? 0) + 1;
  }

  /**
   * Takes the oldest unfinished job no live worker holds, for `owner`, until `leaseMs` from now,
   * and counts the attempt (so a job that keeps killing its workers can be stopped).
   */
  async claim(owner: string, leaseMs: number): Promise<Split | undefined> {
    // An idle runner asks every second: a plain read first, so it takes no lock when there is nothing to take.
    if (!(await this.#store.first(this.#claimable(this.#clock.now())))) return undefined;
    return this.#store.transaction(async () => {
      const now = this.#clock.now();
      const row = await this.#store.first(this.#store.lockRows(this.#claimable(now), { skipLocked: true }));
      if (!row) return undefined;
      await this.#store.run(
        this.#store.db
          .updateTable('splits')
          .set((eb) => ({ leaseOwner: owner, leaseExpiresAtMs: now + leaseMs, attempts: eb('attempts', '+', 1) }))
          .where('id', '=', row.id),
      );
      return this.get(row.id);
    });
  }

  /** The oldest unfinished job without a live lease. */
  #claimable(now: number) {
    return this.#store.db
      .selectFrom('splits')
      .select('id')
      .where('status', 'in', ['queued', 'processing'])
      .where((eb) => eb.or([eb('leaseExpiresAtMs', 'is', null), eb('leaseExpiresAtMs', '<', now)]))
      .orderBy('id')
      .limit(1);
  }

  /** Pushes the lease forward; false when `owner` no longer holds the job (it lapsed and was taken, or ended). */
  async renewLease(id: string, owner: string, leaseMs: number): Promise<boolean> {
    const { changes } = await this.#store.run(
      this.#store.db
        .updateTable('splits')
        .set({ leaseExpiresAtMs: this.#clock.now() + leaseMs })
        .where('id', '=', id)
        .where('leaseOwner', '=', owner)
        .where('status', 'in', ['queued', 'processing']),
    );
    return changes === 1;
  }

  /**
   * Frees every lease: for a single `serve` on SQLite, which holds the data dir's lock, so
   * any lease in it belongs to a process that is gone.
   */
  async releaseAllLeases(): Promise<number> {
    const { changes } = await this.#store.run(
      this.#store.db.updateTable('splits').set({ leaseOwner: null, leaseExpiresAtMs: null }).where('leaseOwner', 'is not', null),
    );
    return changes;
  }

  /** queued → processing by the lease holder, with the model that will run. */
  async markProcessing(id: string, owner: string, modelName: string): Promise<boolean> {
    const result = await this.#store.run(
      this.#store.db
        .updateTable('splits')
        .set({ status: 'processing', modelName, progress: 0, updatedAt: isoAt(this.#clock.now()) })
        .where('id', '=', id)
        .where('leaseOwner', '=', owner)
        .where('status', 'in', ['queued', 'processing']),
    );
    return result.changes === 1;
  }

  /** The device the job runs on, once its worker has loaded the model (again if the GPU failed and the CPU took over). */
  async setDevice(id: string, owner: string, device: string): Promise<void> {
    await this.#store.run(
      this.#store.db
        .updateTable('splits')
        .set({ device, updatedAt: isoAt(this.#clock.now()) })
        .where('id', '=', id)
        .where('leaseOwner', '=', owner)
        .where('status', '=', 'processing'),
    );
  }

  async setProgress(id: string, owner: string, progress: number): Promise<void> {
    await this.#store.run(
      this.#store.db
        .updateTable('splits')
        .set({ progress: Math.max(0, Math.min(100, Math.floor(progress))), updatedAt: isoAt(this.#clock.now()) })
        .where('id', '=', id)
        .where('leaseOwner', '=', owner)
        .where('status', '=', 'processing'),
    );
  }

  /** processing → succeeded, by the lease holder only. Runs inside the caller's transaction (with the webhook outbox row). */
  async markSucceeded(id: string, owner: string, stemNames: readonly string[], mixStems: readonly string[] | undefined): Promise<boolean> {
    const now = this.#clock.now();
    const result = await this.#store.run(
      this.#store.db
        .updateTable('splits')
        .set({
          status: 'succeeded',
          progress: 100,
          stemNames: JSON.stringify(stemNames),
          mixStems: mixStems === undefined ? null : JSON.stringify(mixStems),
          updatedAt: isoAt(now),
          finishedAtMs: now,
          leaseOwner: null,
          leaseExpiresAtMs: null,
        })
        .where('id', '=', id)
        .where('leaseOwner', '=', owner)
        .where('status', '=', 'processing'),
    );
    return result.changes === 1;
  }

  /** queued|processing → failed, by the lease holder only. Runs inside the caller's transaction (with the refund). */
  async markFailed(id: string, owner: string, code: JobErrorCode, message: string): Promise<boolean> {
    const now = this.#clock.now();
    const result = await this.#store.run(
      this.#store.db
        .updateTable('splits')
        .set({ status: 'failed', errorCode: code, errorMessage: message, updatedAt: isoAt(now), finishedAtMs: now, leaseOwner: null, leaseExpiresAtMs: null })
        .where('id', '=', id)
        .where('leaseOwner', '=', owner)
        .where('status', 'in', ['queued', 'processing']),
    );
    return result.changes === 1;
  }

  /**
   * queued|processing → failed with CANCELLED, whoever holds the lease: its owner asked (the
   * API's cancel). Runs inside the caller's transaction (with the refund); the runner holding
   * the job sees it is no longer running and stops its worker.
   */
  async markCancelled(id: string, message: string): Promise<boolean> {
    const now = this.#clock.now();
    const result = await this.#store.run(
      this.#store.db
        .updateTable('splits')
        .set({
          status: 'failed',
          errorCode: 'CANCELLED',
          errorMessage: message,
          updatedAt: isoAt(now),
          finishedAtMs: now,
          leaseOwner: null,
          leaseExpiresAtMs: null,
        })
        .where('id', '=', id)
        .where('status', 'in', ['queued', 'processing']),
    );
    return result.changes === 1;
  }

  /** Of `ids`, those their owner cancelled. */
  async cancelled(ids: readonly string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const rows = await this.#store.all(
      this.#store.db
        .selectFrom('splits')
        .select('id')
        .where('id', 'in', [...ids])
        .where('status', '=', 'failed')
        .where('errorCode', '=', 'CANCELLED'),
    );
    return rows.map((row) => row.id);
  }

  /** Finished jobs whose stems are past retention and still on disk. */
  expiredStems(olderThanMs: number, limit: number): Promise<Split[]> {
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

  /** Marks the job deleted (and its files purged): the API no longer shows it. */
  async markDeleted(id: string): Promise<void> {
    const now = isoAt(this.#clock.now());
    await this.#store.run(
      this.#store.db
        .updateTable('splits')
        .set((eb) => ({ deletedAt: now, purgedAt: eb.fn.coalesce('purgedAt', eb.val(now)) }))
        .where('id', '=', id),
    );
  }

  async markPurged(id: string): Promise<void> {
    await this.#store.run(
      this.#store.db
        .updateTable('splits')
        .set({ purgedAt: isoAt(this.#clock.now()) })
        .where('id', '=', id),
    );
  }
}
