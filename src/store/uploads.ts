/** Upload reservations: a one-time token to send the bytes, then a file to split once. */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { isoAt, type Clock } from './clock.js';
import type { Store } from './database.js';
import { newId } from './ids.js';
import type { UploadTable } from './schema.js';

export type Upload = UploadTable;

export interface NewUpload {
  readonly accountId: string;
  readonly apiKeyId: string;
  readonly filename: string;
  readonly contentType: string;
  readonly contentLength: number;
  readonly ttlSeconds: number;
}

function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

export class Uploads {
  readonly #store: Store;
  readonly #clock: Clock;

  constructor(store: Store, clock: Clock) {
    this.#store = store;
    this.#clock = clock;
  }

  /** Creates a reservation and returns it with its one-time token (only its hash is kept). */
  async create(input: NewUpload): Promise<{ upload: Upload; token: string }> {
    const now = this.#clock.now();
    const token = randomBytes(32).toString('base64url');
    const upload: Upload = {
      id: newId('upl', now),
      accountId: input.accountId,
      apiKeyId: input.apiKeyId,
      filename: input.filename,
      contentType: input.contentType,
      contentLength: input.contentLength,
      tokenHash: hashToken(token),
      status: 'pending',
      createdAt: isoAt(now),
      expiresAtMs: now + input.ttlSeconds * 1000,
      completedAt: null,
    };
    await this.#store.run(this.#store.db.insertInto('uploads').values(upload));
    return { upload, token };
  }

  get(id: string): Promise<Upload | undefined> {
    return this.#store.first(this.#store.db.selectFrom('uploads').selectAll().where('id', '=', id));
  }

  tokenMatches(upload: Upload, token: string): boolean {
    return timingSafeEqual(Buffer.from(upload.tokenHash, 'hex'), Buffer.from(hashToken(token), 'hex'));
  }

  isExpired(upload: Upload): boolean {
    return this.#clock.now() >= upload.expiresAtMs;
  }

  /** Moves pending → uploading; false when another transfer holds it or it is done. */
  beginTransfer(id: string): Promise<boolean> {
    return this.#setStatus(id, 'pending', 'uploading');
  }

  /** Gives a failed transfer's reservation back, so the client may try again. */
  async abortTransfer(id: string): Promise<void> {
    await this.#setStatus(id, 'uploading', 'pending');
  }

  async completeTransfer(id: string): Promise<void> {
    await this.#store.run(
      this.#store.db
        .updateTable('uploads')
        .set({ status: 'complete', completedAt: isoAt(this.#clock.now()) })
        .where('id', '=', id)
        .where('status', '=', 'uploading'),
    );
  }

  /** Marks a complete upload used by a split; inside the split's transaction. */
  consume(id: string): Promise<boolean> {
    return this.#setStatus(id, 'complete', 'used');
  }

  /** Transfers left `uploading` by a crash can be retried (one `serve` on SQLite only: no other node can be mid-transfer). */
  async resetInterruptedTransfers(): Promise<number> {
    return (await this.#store.run(this.#store.db.updateTable('uploads').set({ status: 'pending' }).where('status', '=', 'uploading'))).changes;
  }

  /** Reservations past expiry that were never used, for the cleanup task. */
  expiredUnused(limit: number): Promise<Upload[]> {
    return this.#store.all(
      this.#store.db
        .selectFrom('uploads')
        .selectAll()
        .where('status', 'in', ['pending', 'complete'])
        .where('expiresAtMs', '<=', this.#clock.now())
        .limit(limit),
    );
  }

  async delete(id: string): Promise<void> {
    await this.#store.run(this.#store.db.deleteFrom('uploads').where('id', '=', id));
  }

  async #setStatus(id: string, from: Upload['status'], to: Upload['status']): Promise<boolean> {
    const result = await this.#store.run(this.#store.db.updateTable('uploads').set({ status: to }).where('id', '=', id).where('status', '=', from));
    return result.changes === 1;
  }
}
