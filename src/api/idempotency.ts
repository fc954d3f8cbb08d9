/**
 * Idempotency-Key handling for POST /audio/splits, after Stripe's: the same key and body replay
 * the first response (no second job, no second charge); the same key with another body is a 422;
 * concurrent duplicates, on this node or another, wait for the first and get its response. Responses that end in a 5xx
 * are not remembered, so the client can retry them.
 */
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { StemsplitError } from '../errors.js';
import type { IdempotencyKeys } from '../store/idempotency.js';

export interface StoredResponse {
  readonly status: number;
  readonly body: string;
}

/**
 * The work behind a key. It may store its response itself with `remember`, inside the
 * transaction that does the work, so a crash between the two cannot lose it; otherwise the gate
 * stores it afterwards.
 */
export type IdempotentWork = (remember: (response: StoredResponse) => Promise<void>) => Promise<StoredResponse>;

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

/** How long a duplicate waits for the first request when that one runs on another node. */
const OTHER_NODE_WAIT_MS = 90_000;
const OTHER_NODE_POLL_MS = 100;

interface InFlight {
  readonly hash: string;
  readonly response: Promise<StoredResponse & { replayed: boolean }>;
}

export class IdempotencyGate {
  readonly #keys: IdempotencyKeys;
  /** Requests of this process still running, so a duplicate here waits for them without polling. */
  readonly #inFlight = new Map<string, InFlight>();

  constructor(keys: IdempotencyKeys) {
    this.#keys = keys;
  }

  /** Runs `work` once per (API key, idempotency key), across every node; others get the stored response. */
  async run(apiKeyId: string, key: string, hash: string, work: IdempotentWork): Promise<StoredResponse & { replayed: boolean }> {
    const slot = `${apiKeyId}\n${key}`;
    const local = this.#inFlight.get(slot);
    if (local) {
      if (local.hash !== hash) throw reusedWithOtherBody(key);
      return { ...(await local.response), replayed: true };
    }
    const entry: InFlight = { hash, response: this.#claimAndRun(apiKeyId, key, hash, work) };
    this.#inFlight.set(slot, entry);
    try {
      return await entry.response;
    } finally {
      if (this.#inFlight.get(slot) === entry) this.#inFlight.delete(slot);
    }
  }

  async #claimAndRun(apiKeyId: string, key: string, hash: string, work: IdempotentWork): Promise<StoredResponse & { replayed: boolean }> {
    const claim = await this.#keys.claim(apiKeyId, key, hash);
    if (claim.kind === 'existing') {
      if (claim.record.requestHash !== hash) throw reusedWithOtherBody(key);
      if (claim.record.responseStatus !== null && claim.record.responseBody !== null) {
        return { status: claim.record.responseStatus, body: claim.record.responseBody, replayed: true };
      }
      return this.#awaitOtherNode(apiKeyId, key, hash, work);
    }
    let remembered = false;
    const remember = async (response: StoredResponse) => {
      await this.#keys.complete(apiKeyId, key, response.status, response.body);
      remembered = true;
    };
    try {
      const response = await work(remember);
      if (response.status >= 500) await this.#keys.release(apiKeyId, key);
      else if (!remembered) await this.#keys.complete(apiKeyId, key, response.status, response.body);
      return { ...response, replayed: false };
    } catch (error) {
      await this.#keys.release(apiKeyId, key).catch(() => undefined);
      throw error;
    }
  }

  /** The first request runs on another node (PostgreSQL): wait for its response, or for its claim to go. */
  async #awaitOtherNode(apiKeyId: string, key: string, hash: string, work: IdempotentWork): Promise<StoredResponse & { replayed: boolean }> {
    const deadline = Date.now() + OTHER_NODE_WAIT_MS;
    while (Date.now() < deadline) {
      await sleep(OTHER_NODE_POLL_MS);
      const record = await this.#keys.get(apiKeyId, key);
      // Released after a 5xx or an error: this request may run it now.
      if (!record) return this.#claimAndRun(apiKeyId, key, hash, work);
      if (record.responseStatus !== null && record.responseBody !== null) {
        return { status: record.responseStatus, body: record.responseBody, replayed: true };
      }
    }
    throw new StemsplitError('SERVER_ERROR', `the first request with Idempotency-Key "${key}" did not finish; retry`);
  }
}

function reusedWithOtherBody(key: string): StemsplitError {
  return new StemsplitError('VALIDATION_ERROR', `Idempotency-Key "${key}" was already used with a different request body`);
}
