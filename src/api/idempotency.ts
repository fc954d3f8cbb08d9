/**
 * Idempotency-Key handling for POST /audio/splits, after Stripe's: the same key and body replay
 * the first response (no second job, no second charge); the same key with another body is a 422;
 * concurrent duplicates wait for the first and get its response. Responses that end in a 5xx
 * are not remembered, so the client can retry them.
 */
import { createHash } from 'node:crypto';
import { StemsplitError } from '../errors.js';
import type { IdempotencyKeys } from '../store/idempotency.js';

export interface StoredResponse {
  readonly status: number;
  readonly body: string;
}

/** Hash of the request's meaning: key order and whitespace in the JSON do not matter. */
export function requestHash(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value)).digest('hex');
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value as object)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value);
}

export class IdempotencyGate {
  readonly #keys: IdempotencyKeys;
  readonly #inFlight = new Map<string, Promise<StoredResponse>>();

  constructor(keys: IdempotencyKeys) {
    this.#keys = keys;
  }

  /** Runs `work` once per (API key, idempotency key); others get the stored response. */
  async run(apiKeyId: string, key: string, hash: string, work: () => Promise<StoredResponse>): Promise<StoredResponse & { replayed: boolean }> {
    const slot = `${apiKeyId}\n${key}`;
    const claim = this.#keys.claim(apiKeyId, key, hash);
    if (claim.kind === 'existing') {
      if (claim.record.requestHash !== hash) {
        throw new StemsplitError('VALIDATION_ERROR', `Idempotency-Key "${key}" was already used with a different request body`);
      }
      if (claim.record.responseStatus !== null && claim.record.responseBody !== null) {
        return { status: claim.record.responseStatus, body: claim.record.responseBody, replayed: true };
      }
      const running = this.#inFlight.get(slot);
      if (running) return { ...(await running), replayed: true };
      throw new StemsplitError('SERVER_ERROR', `the first request with Idempotency-Key "${key}" did not finish; retry`);
    }
    const running = work();
    this.#inFlight.set(slot, running);
    try {
      const response = await running;
      if (response.status >= 500) this.#keys.release(apiKeyId, key);
      else this.#keys.complete(apiKeyId, key, response.status, response.body);
      return { ...response, replayed: false };
    } catch (error) {
      this.#keys.release(apiKeyId, key);
      throw error;
    } finally {
      this.#inFlight.delete(slot);
    }
  }
}
