/** The webhook outbox: one row per terminal event, retried until a 2xx or until it gives up. */
import { isoAt, type Clock } from './clock.js';
import type { Store } from './database.js';
import { newId } from './ids.js';
import type { WebhookDeliveryTable } from './schema.js';

export type Delivery = WebhookDeliveryTable;

export class Deliveries {
  readonly #store: Store;
  readonly #clock: Clock;

  constructor(store: Store, clock: Clock) {
    this.#store = store;
    this.#clock = clock;
  }

  /** Queues an event; runs inside the transaction that made the job terminal. */
  enqueue(splitId: string, accountId: string, url: string, payload: string): string {
    const now = this.#clock.now();
    const id = newId('whd', now);
    this.#store.run(
      this.#store.db.insertInto('webhookDeliveries').values({
        id,
        splitId,
        accountId,
        url,
        payload,
        status: 'pending',
        attempts: 0,
        nextAttemptAtMs: now,
        lastError: null,
        createdAtMs: now,
        deliveredAt: null,
      }),
    );
    return id;
  }

  due(limit: number): Delivery[] {
    return this.#store.all(
      this.#store.db
        .selectFrom('webhookDeliveries')
        .selectAll()
        .where('status', '=', 'pending')
        .where('nextAttemptAtMs', '<=', this.#clock.now())
        .orderBy('nextAttemptAtMs')
        .limit(limit),
    );
  }

  nextDueAtMs(): number | undefined {
    const row = this.#store.first(
      this.#store.db
        .selectFrom('webhookDeliveries')
        .select((eb) => eb.fn.min<number>('nextAttemptAtMs').as('next'))
        .where('status', '=', 'pending'),
    );
    return row?.next ?? undefined;
  }

  forSplit(splitId: string): Delivery[] {
    return this.#store.all(this.#store.db.selectFrom('webhookDeliveries').selectAll().where('splitId', '=', splitId));
  }

  markDelivered(id: string, attempts: number): void {
    this.#store.run(
      this.#store.db
        .updateTable('webhookDeliveries')
        .set({ status: 'delivered', attempts, deliveredAt: isoAt(this.#clock.now()), lastError: null })
        .where('id', '=', id),
    );
  }

  markRetry(id: string, attempts: number, nextAttemptAtMs: number, error: string): void {
    this.#store.run(
      this.#store.db
        .updateTable('webhookDeliveries')
        .set({ attempts, nextAttemptAtMs, lastError: error.slice(0, 500) })
        .where('id', '=', id),
    );
  }

  markGivenUp(id: string, attempts: number, error: string): void {
    this.#store.run(
      this.#store.db
        .updateTable('webhookDeliveries')
        .set({ status: 'failed', attempts, lastError: error.slice(0, 500) })
        .where('id', '=', id),
    );
  }
}
