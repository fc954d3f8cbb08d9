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
  async enqueue(splitId: string, accountId: string, url: string, payload: string): Promise<string> {
    const now = this.#clock.now();
    const id = newId('whd', now);
    await this.#store.run(
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

  /**
   * Takes up to `limit` due deliveries for one sender: each is pushed `holdMs` into the future
   * as it is taken, so no other process sends it meanwhile; if this one dies mid-send, the
   * delivery comes due again after `holdMs` (at least once, never lost).
   */
  async claimDue(limit: number, holdMs: number): Promise<Delivery[]> {
    return this.#store.transaction(async () => {
      const now = this.#clock.now();
      const query = this.#store.db
        .selectFrom('webhookDeliveries')
        .selectAll()
        .where('status', '=', 'pending')
        .where('nextAttemptAtMs', '<=', now)
        .orderBy('nextAttemptAtMs')
        .limit(limit);
      const due = await this.#store.all(this.#store.lockRows(query, { skipLocked: true }));
      if (due.length === 0) return due;
      const ids = due.map((delivery) => delivery.id);
      await this.#store.run(
        this.#store.db
          .updateTable('webhookDeliveries')
          .set({ nextAttemptAtMs: now + holdMs })
          .where('id', 'in', ids),
      );
      return due;
    });
  }

  async nextDueAtMs(): Promise<number | undefined> {
    const row = await this.#store.first(
      this.#store.db
        .selectFrom('webhookDeliveries')
        .select((eb) => eb.fn.min<number>('nextAttemptAtMs').as('next'))
        .where('status', '=', 'pending'),
    );
    return row?.next ?? undefined;
  }

  forSplit(splitId: string): Promise<Delivery[]> {
    return this.#store.all(this.#store.db.selectFrom('webhookDeliveries').selectAll().where('splitId', '=', splitId));
  }

  async markDelivered(id: string, attempts: number): Promise<void> {
    await this.#store.run(
      this.#store.db
        .updateTable('webhookDeliveries')
        .set({ status: 'delivered', attempts, deliveredAt: isoAt(this.#clock.now()), lastError: null })
        .where('id', '=', id),
    );
  }

  async markRetry(id: string, attempts: number, nextAttemptAtMs: number, error: string): Promise<void> {
    await this.#store.run(
      this.#store.db
        .updateTable('webhookDeliveries')
        .set({ attempts, nextAttemptAtMs, lastError: error.slice(0, 500) })
        .where('id', '=', id),
    );
  }

  async markGivenUp(id: string, attempts: number, error: string): Promise<void> {
    await this.#store.run(
      this.#store.db
        .updateTable('webhookDeliveries')
        .set({ status: 'failed', attempts, lastError: error.slice(0, 500) })
        .where('id', '=', id),
    );
  }
}
