/**
 * One-time invites (issue 48): what `serve` prints and what an admin hands a person, instead of a
 * key. The page exchanges an invite once, before it expires, for a new key of its account, which
 * the person's browser keeps; the invite never works again. Only the token's SHA-256 is stored.
 */
import { randomBytes } from 'node:crypto';
import { StemsplitError } from '../errors.js';
import { sha256Hex, type Accounts, type CreatedApiKey } from './accounts.js';
import { isoAt, type Clock } from './clock.js';
import type { Store } from './database.js';
import { newId } from './ids.js';

export const INVITE_PREFIX = 'inv_stemsplit_';

/** The name of the key an invite is exchanged for: the page's key, as `serve --new-link` knows it. */
export const INVITED_KEY_NAME = 'web session';

export interface CreatedInvite {
  readonly id: string;
  /** The invite itself: shown once, never stored. */
  readonly invite: string;
  readonly account: string;
  readonly expiresAt: string;
}

export class Invites {
  readonly #store: Store;
  readonly #clock: Clock;
  readonly #accounts: Accounts;

  constructor(store: Store, clock: Clock, accounts: Accounts) {
    this.#store = store;
    this.#clock = clock;
    this.#accounts = accounts;
  }

  /** An invite to the named account (made, a member, if new), usable once within `ttlSeconds`. */
  async create(accountName: string, ttlSeconds: number): Promise<CreatedInvite> {
    const account = await this.#accounts.findOrCreate(accountName);
    const invite = INVITE_PREFIX + randomBytes(32).toString('base64url');
    const now = this.#clock.now();
    const id = newId('inv');
    const expiresAtMs = now + ttlSeconds * 1000;
    await this.#store.run(
      this.#store.db
        .insertInto('invites')
        .values({ id, accountId: account.id, tokenHash: sha256Hex(invite), createdAt: isoAt(now), expiresAtMs, usedAt: null, apiKeyId: null }),
    );
    return { id, invite, account: account.name, expiresAt: isoAt(expiresAtMs) };
  }

  /** Ends every unused invite of the account (serve does, as it prints a new one). */
  async withdrawUnused(accountName: string): Promise<void> {
    const account = await this.#accounts.find(accountName);
    if (!account) return;
    await this.#store.run(this.#store.db.updateTable('invites').set({ expiresAtMs: 0 }).where('accountId', '=', account.id).where('usedAt', 'is', null));
  }

  /**
   * Exchanges an invite for a new key of its account, once: the use and the key are one
   * transaction, so two pages racing with the same invite get one key between them.
   */
  exchange(invite: string): Promise<CreatedApiKey> {
    return this.#store.transaction(async () => {
      const row =
        invite.startsWith(INVITE_PREFIX) && invite.length <= 200
          ? await this.#store.first(this.#store.lockRows(this.#store.db.selectFrom('invites').selectAll().where('tokenHash', '=', sha256Hex(invite))))
          : undefined;
      if (!row) throw new StemsplitError('UNAUTHORIZED', 'this is not an invite of this server');
      if (row.usedAt !== null) throw new StemsplitError('UNAUTHORIZED', "this invite was already used; ask the studio's admin for a new one");
      if (row.expiresAtMs <= this.#clock.now()) throw new StemsplitError('UNAUTHORIZED', "this invite has expired; ask the studio's admin for a new one");
      const account = await this.#accounts.byId(row.accountId);
      if (!account) throw new StemsplitError('UNAUTHORIZED', "this invite's account no longer exists");
      const created = await this.#accounts.createKey(account.name, INVITED_KEY_NAME);
      await this.#store.run(
        this.#store.db
          .updateTable('invites')
          .set({ usedAt: isoAt(this.#clock.now()), apiKeyId: created.id })
          .where('id', '=', row.id),
      );
      return created;
    });
  }
}
