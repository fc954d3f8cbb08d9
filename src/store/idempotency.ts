/**
 * Idempotency keys, per API key. The first request claims the key in the database before it
 * does any work; its response is stored when it finishes, and every later request with the same
 * key and body gets that stored response back.
 */
import type { Clock } from './clock.js';
import type { Store } from './database.js';
import type { IdempotencyTable } from './schema.js';

export type IdempotencyRecord = IdempotencyTable;

export type ClaimResult =
  | { readonly kind: 'claimed' }
  | { readonly kind: 'existing'; readonly record: IdempotencyRecord };

export class IdempotencyKeys {
  readonly #store: Store;
  readonly #clock: Clock;
  readonly #ttlMs: number;

  constructor(store: Store, clock: Clock, ttlSeconds: number) {
    this.#store = store;
    this.#clock = clock;
    this.#ttlMs = ttlSeconds * 1000;
  }

  /** Claims the key for this request, or returns whoever holds it (expired records are replaced). */
  claim(apiKeyId: string, key: string, requestHash: string): ClaimResult {
    return this.#store.transaction(() => {
      const now = this.#clock.now();
      const existing = this.get(apiKeyId, key);
      if (existing && existing.createdAtMs > now - this.#ttlMs) return { kind: 'existing', record: existing };
      if (existing) this.release(apiKeyId, key);
      this.#store.run(
        this.#store.db
          .insertInto('idempotencyKeys')
          .values({ apiKeyId, key, requestHash, responseStatus: null, responseBody: null, createdAtMs: now }),
      );
      return { kind: 'claimed' };
    });
  }

  get(apiKeyId: string, key: string): IdempotencyRecord | undefined {
    return this.#store.first(
      this.#store.db.selectFrom('idempotencyKeys').selectAll().where('apiKeyId', '=', apiKeyId).where('key', '=', key),
    );
  }

  complete(apiKeyId: string, key: string, status: number, body: string): void {
    this.#store.run(
      this.#store.db
        .updateTable('idempotencyKeys')
        .set({ responseStatus: status, responseBody: body })
        .where('apiKeyId', '=', apiKeyId)
        .where('key', '=', key),
    );
  }

  /** Forgets a claim whose request ended in a retryable error, so a retry can run. */
  release(apiKeyId: string, key: string): void {
    this.#store.run(this.#store.db.deleteFrom('idempotencyKeys').where('apiKeyId', '=', apiKeyId).where('key', '=', key));
  }

  /** Claims a crash left without a response can never complete: drop them on start. */
  dropUnfinished(): number {
    return this.#store.run(this.#store.db.deleteFrom('idempotencyKeys').where('responseStatus', 'is', null)).changes;
  }

  purgeExpired(): number {
    return this.#store.run(this.#store.db.deleteFrom('idempotencyKeys').where('createdAtMs', '<=', this.#clock.now() - this.#ttlMs))
      .changes;
  }
}
