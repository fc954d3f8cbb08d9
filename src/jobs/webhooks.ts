/**
 * Webhook deliveries: signed like Stripe's (`t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<body>">`),
 * stored in an outbox in the database and retried with exponential backoff until a 2xx, for
 * about 24 hours, across restarts. Every node may run a dispatcher: each delivery is claimed by
 * one of them at a time (see `Deliveries.claimDue`).
 */
import { createHmac } from 'node:crypto';
import { describeError, isStemsplitError } from '../errors.js';
import { guardedRequest, type GuardOptions } from '../net/fetch.js';
import { SerialPass } from './serial-pass.js';
import { OutageLog, type DataStore, type Delivery } from '../store/index.js';

export const SIGNATURE_HEADER = 'Stemsplit-Signature';
export const DELIVERY_HEADER = 'Stemsplit-Delivery';
export const EVENT_HEADER = 'Stemsplit-Event';
export const SPLIT_EVENT = 'audio.split.completed';

export function signPayload(secret: string, timestamp: number, body: string): string {
  const hmac = createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
  return `t=${timestamp},v1=${hmac}`;
}

/** Delay before attempt n+1: 10 s, 20 s, 40 s … capped at 1 hour; 30 attempts span about 24 h. */
export function backoffMs(attempts: number): number {
  return Math.min(10_000 * 2 ** Math.max(0, attempts - 1), 3_600_000);
}

export interface DispatcherOptions {
  readonly guard: GuardOptions;
  readonly timeoutMs?: number;
  /** Give up once a delivery is this old (default 24 h). */
  readonly maxAgeMs?: number;
  readonly log?: (line: string) => void;
  /** Delay before the next attempt after `attempts` failures (default `backoffMs`). */
  readonly backoff?: (attempts: number) => number;
}

const HOLD_MS = 10_000;
/** A claimed delivery is hidden from other dispatchers this long: past any attempt's timeout. */
const CLAIM_MS = 60_000;

/** Sends due deliveries; `kick()` after enqueueing, `start()` for the timer that drives retries. */
export class WebhookDispatcher {
  readonly #data: DataStore;
  readonly #options: DispatcherOptions;
  #timer: NodeJS.Timeout | undefined;
  readonly #passes = new SerialPass(
    () => this.#pass(),
    (again) => (again ? this.kick() : this.#schedule()),
  );
  #stopped = false;
  /** Set when an outcome could not be recorded (full disk): no pass before then, so nothing is resent in a loop. */
  #holdUntilMs = 0;
  readonly #outage: OutageLog;

  constructor(data: DataStore, options: DispatcherOptions) {
    this.#data = data;
    this.#options = options;
    this.#outage = new OutageLog('webhooks', `deliveries wait in the outbox and are tried again every ${HOLD_MS / 1000} s`, options.log);
  }

  start(): void {
    this.#stopped = false;
    this.kick();
  }

  /** Runs a pass now (or right after the one in flight). */
  kick(): void {
    if (this.#stopped) return;
    if (this.#data.clock.now() < this.#holdUntilMs) return this.#schedule();
    this.#passes.run();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#passes.idle();
  }

  #schedule(): void {
    clearTimeout(this.#timer);
    if (this.#stopped) return;
    this.#data.deliveries.nextDueAtMs().then(
      (next) => this.#scheduleAt(next),
      // The database is away: look again in a while (other nodes' deliveries come due too).
      () => this.#scheduleAt(this.#data.clock.now() + HOLD_MS),
    );
  }

  #scheduleAt(next: number | undefined): void {
    clearTimeout(this.#timer);
    if (this.#stopped || next === undefined) return;
    const now = this.#data.clock.now();
    const delay = Math.max(50, Math.min(next - now, 60_000), this.#holdUntilMs - now);
    this.#timer = setTimeout(() => this.kick(), delay);
    this.#timer.unref();
  }

  async #pass(): Promise<void> {
    for (;;) {
      if (this.#stopped) return;
      let due: Delivery[];
      try {
        due = await this.#data.deliveries.claimDue(16, CLAIM_MS);
        this.#outage.answered();
      } catch (error) {
        this.#outage.failed(error);
        this.#holdUntilMs = this.#data.clock.now() + HOLD_MS;
        return;
      }
      if (due.length === 0) return;
      const results = await Promise.allSettled(due.map((delivery) => this.#attempt(delivery)));
      const unrecorded = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (unrecorded) {
        this.#outage.failed(unrecorded.reason);
        this.#holdUntilMs = this.#data.clock.now() + HOLD_MS;
        return;
      }
    }
  }

  async #attempt(delivery: Delivery): Promise<void> {
    const attempts = delivery.attempts + 1;
    try {
      const secret = await this.#data.accounts.webhookSecret(delivery.accountId);
      const timestamp = Math.floor(this.#data.clock.now() / 1000);
      const response = await guardedRequest(delivery.url, {
        ...this.#options.guard,
        method: 'POST',
        timeoutMs: this.#options.timeoutMs ?? 10_000,
        maxRedirects: 0,
        headers: {
          'content-type': 'application/json',
          [SIGNATURE_HEADER]: signPayload(secret, timestamp, delivery.payload),
          [DELIVERY_HEADER]: delivery.id,
          [EVENT_HEADER]: SPLIT_EVENT,
        },
        body: delivery.payload,
      });
      response.resume();
      const status = response.statusCode ?? 0;
      if (status >= 200 && status < 300) {
        await this.#data.deliveries.markDelivered(delivery.id, attempts);
        return;
      }
      await this.#retryLater(delivery, attempts, `receiver answered HTTP ${status}`);
    } catch (error) {
      if (isStemsplitError(error) && error.code === 'DATABASE_UNAVAILABLE') throw error;
      await this.#retryLater(delivery, attempts, describeError(error));
    }
  }

  async #retryLater(delivery: Delivery, attempts: number, reason: string): Promise<void> {
    const now = this.#data.clock.now();
    const next = now + (this.#options.backoff ?? backoffMs)(attempts);
    // Never log the URL's query or the payload: both may carry secrets of the receiver.
    this.#options.log?.(`webhook ${delivery.id} for ${delivery.splitId}: attempt ${attempts} failed (${reason})`);
    if (next - delivery.createdAtMs > (this.#options.maxAgeMs ?? 24 * 3_600_000)) {
      await this.#data.deliveries.markGivenUp(delivery.id, attempts, reason);
    } else {
      await this.#data.deliveries.markRetry(delivery.id, attempts, next, reason);
    }
  }
}
