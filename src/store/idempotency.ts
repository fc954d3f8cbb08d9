/**
 * Idempotency keys, per API key. The first request claims the key in the database before it
 * does any work; its response is stored when it finishes, and every later request with the same
 * key and body gets that stored response back.
 */
import type { Clock } from './clock.js';
import type { Store } from './database.js';
import type { IdempotencyTable } from './schema.js';

export type IdempotencyRecord = IdempotencyTable;

export type ClaimResult = { readonly kind: 'claimed' } | { readonly kind: 'existing'; readonly record: IdempotencyRecord };

/**
 * A claim with no response this long after it was made belongs to a node that died mid-request:
 * no create request runs this long (a direct_url download is capped at 60 s).
 */
const ABANDONED_CLAIM_MS = 10 * 60_000;

export class IdempotencyKeys {
  readonly #store: Store;
  readonly #clock: Clock;
  readonly #ttlMs: number;

  constructor(store: Store, clock: Clock, ttlSeconds: number) {
    this.#store = store;
    this.#clock = clock;
    this.#ttlMs = ttlSeconds * 1000;
  }

  /**
   * Claims the key for this request, or returns whoever holds it (expired records are replaced).
   * Two requests racing on PostgreSQL both insert; the unique key lets one through, and the
   * other, once the first commits, finds its record.
   */
  async claim(apiKeyId: string, key: string, requestHash: string): Promise<ClaimResult> {
    return this.#store.transaction(async () => {
      const now = this.#clock.now();
      const existing = await this.get(apiKeyId, key);
      if (existing && !this.#stale(existing, now)) return { kind: 'existing', record: existing };
      if (existing) await this.release(apiKeyId, key);
      const { changes } = await this.#store.run(
        this.#store.db
          .insertInto('idempotencyKeys')
          .values({ apiKeyId, key, requestHash, responseStatus: null, responseBody: null, createdAtMs: now })
          .onConflict((oc) => oc.columns(['apiKeyId', 'key']).doNothing()),
      );
      if (changes === 1) return { kind: 'claimed' };
      const winner = await this.get(apiKeyId, key);
      return winner ? { kind: 'existing', record: winner } : { kind: 'claimed' };
    });
  }

  /**
   * Past its TTL; or still without a response long after any request could have run, which
   * only a node that died mid-request leaves behind (one `serve` drops those on start).
   */
  #stale(record: IdempotencyRecord, now: number): boolean {
    if (record.createdAtMs <= now - this.#ttlMs) return true;
    return record.responseStatus === null && record.createdAtMs <= now - ABANDONED_CLAIM_MS;
  }

  get(apiKeyId: string, key: string): Promise<IdempotencyRecord | undefined> {
    return this.#store.first(this.#store.db.selectFrom('idempotencyKeys').selectAll().where('apiKeyId', '=', apiKeyId).where('key', '=', key));
  }

  async complete(apiKeyId: string, key: string, status: number, body: string): Promise<void> {
    await this.#store.run(
      this.#store.db.updateTable('idempotencyKeys').set({ responseStatus: status, responseBody: body }).where('apiKeyId', '=', apiKeyId).where('key', '=', key),
    );
  }

  /** Forgets a claim whose request ended in a retryable error, so a retry can run. */
  async release(apiKeyId: string, key: string): Promise<void> {
    await this.#store.run(this.#store.db.deleteFrom('idempotencyKeys').where('apiKeyId', '=', apiKeyId).where('key', '=', key));
  }

  /** Claims a crash left without a response can never complete: one `serve` on SQLite drops them on start. */
  async dropUnfinished(): Promise<number> {
    return (await this.#store.run(this.#store.db.deleteFrom('idempotencyKeys').where('responseStatus', 'is', null))).changes;
  }

  async purgeExpired(): Promise<number> {
    const cutoff = this.#clock.now() - this.#ttlMs;
    return (await this.#store.run(this.#store.db.deleteFrom('idempotencyKeys').where('createdAtMs', '<=', cutoff))).changes;
  }
}
