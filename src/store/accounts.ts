/**
 * Accounts, their API keys and their credit ledger. An account holds the balance and the
 * webhook signing secret; keys belong to an account. Keys are stored only as SHA-256 hashes.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { StemsplitError } from '../errors.js';
import { isoAt, type Clock } from './clock.js';
import type { Store } from './database.js';
import { newId } from './ids.js';
import type { AccountTable, ApiKeyTable, LedgerKind, Role } from './schema.js';

export const DEFAULT_ACCOUNT = 'default';
const KEY_PREFIX = 'sk_stemsplit_';
const WEBHOOK_SECRET_PREFIX = 'whsec_';

/** A ledger entry as `statement` lists it, with the balance the entry left. */
export interface StatementEntry {
  readonly kind: LedgerKind;
  readonly amount: number;
  readonly splitId: string | null;
  readonly note: string;
  readonly createdAt: string;
  readonly balanceAfter: number;
}

export type Account = AccountTable;
export type ApiKeyInfo = Omit<ApiKeyTable, 'keyHash'> & { accountName: string };

export interface CreatedApiKey {
  readonly id: string;
  /** The secret key: shown once, never stored. */
  readonly key: string;
  readonly account: string;
  readonly role: Role;
}

export interface Principal {
  readonly apiKeyId: string;
  readonly accountId: string;
  /** The account's name, for the access log. */
  readonly accountName: string;
  readonly role: Role;
}

/** How often a key's `lastUsedAt` is written: at most once a minute, so a busy key costs no write per request. */
const LAST_USED_RESOLUTION_MS = 60_000;

/** The stored form of a secret (API keys, invites): only its hash is kept. */
export function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function principalOf(row: { id: string; accountId: string; accountName: string; role: Role }): Principal {
  return { apiKeyId: row.id, accountId: row.accountId, accountName: row.accountName, role: row.role };
}

function newWebhookSecret(): string {
  return WEBHOOK_SECRET_PREFIX + randomBytes(32).toString('base64url');
}

export class Accounts {
  readonly #store: Store;
  readonly #clock: Clock;

  constructor(store: Store, clock: Clock) {
    this.#store = store;
    this.#clock = clock;
  }

  /** Creates the `default` account on a fresh data dir, with its documented initial grant. */
  async ensureDefault(initialCredits: number): Promise<Account> {
    return this.#store.transaction(async () => {
      const existing = await this.find(DEFAULT_ACCOUNT);
      if (existing) return existing;
      // The first start's account is the studio's admin (the operator's).
      const { account, created } = await this.#insertAccount(DEFAULT_ACCOUNT, 'admin');
      // Only the node that made the account grants (PostgreSQL nodes may start together).
      if (created && initialCredits > 0) await this.grant(DEFAULT_ACCOUNT, initialCredits, 'initial grant of a new data dir');
      return this.#require(DEFAULT_ACCOUNT, account.id);
    });
  }

  find(name: string): Promise<Account | undefined> {
    return this.#store.first(this.#store.db.selectFrom('accounts').selectAll().where('name', '=', name));
  }

  byId(id: string): Promise<Account | undefined> {
    return this.#store.first(this.#store.db.selectFrom('accounts').selectAll().where('id', '=', id));
  }

  /**
   * The account, its row locked until the transaction ends (PostgreSQL; SQLite's IMMEDIATE
   * transaction already excludes other writers): the balance read is the one the charge moves.
   */
  lockForCharge(id: string): Promise<Account | undefined> {
    return this.#store.first(this.#store.lockRows(this.#store.db.selectFrom('accounts').selectAll().where('id', '=', id)));
  }

  /** The named account, created on first use (accounts are cheap and local) with `role` (a member unless said). */
  async findOrCreate(name: string, role: Role = 'member'): Promise<Account> {
    return (await this.find(name)) ?? (await this.#insertAccount(name, role)).account;
  }

  /** Every account, oldest first: the studio's people. */
  listAccounts(): Promise<Account[]> {
    return this.#store.all(this.#store.db.selectFrom('accounts').selectAll().orderBy('createdAt').orderBy('id'));
  }

  /** Inserts the account unless another process just did; either way, returns the stored one. */
  async #insertAccount(name: string, role: Role = 'member'): Promise<{ account: Account; created: boolean }> {
    if (!/^[\w.-]{1,64}$/.test(name)) throw new StemsplitError('USAGE', `invalid account name "${name}"`);
    const account: Account = {
      id: newId('acct'),
      name,
      balance: 0,
      webhookSecret: newWebhookSecret(),
      createdAt: isoAt(this.#clock.now()),
      role,
    };
    const { changes } = await this.#store.run(
      this.#store.db
        .insertInto('accounts')
        .values(account)
        .onConflict((oc) => oc.column('name').doNothing()),
    );
    return { account: await this.#require(name), created: changes === 1 };
  }

  async #require(name: string, id?: string): Promise<Account> {
    const account = id ? await this.byId(id) : await this.find(name);
    if (!account) throw new StemsplitError('NOT_FOUND', `no account "${name}"`);
    return account;
  }

  /** A new key of the named account, which is made (with `role`) when it does not exist yet. */
  async createKey(accountName: string, keyName: string, role: Role = 'member'): Promise<CreatedApiKey> {
    const account = await this.findOrCreate(accountName, role);
    const id = newId('key');
    const key = KEY_PREFIX + randomBytes(32).toString('base64url');
    await this.#store.run(
      this.#store.db.insertInto('apiKeys').values({
        id,
        accountId: account.id,
        name: keyName,
        keyHash: sha256Hex(key),
        createdAt: isoAt(this.#clock.now()),
        revokedAt: null,
        lastUsedAt: null,
      }),
    );
    return { id, key, account: account.name, role: account.role };
  }

  listKeys(): Promise<ApiKeyInfo[]> {
    return this.#store.all(
      this.#store.db
        .selectFrom('apiKeys')
        .innerJoin('accounts', 'accounts.id', 'apiKeys.accountId')
        .select([
          'apiKeys.id',
          'apiKeys.accountId',
          'apiKeys.name',
          'apiKeys.createdAt',
          'apiKeys.revokedAt',
          'apiKeys.lastUsedAt',
          'accounts.name as accountName',
        ])
        .orderBy('apiKeys.id'),
    );
  }

  async revokeKey(id: string): Promise<void> {
    const { changes } = await this.#store.run(
      this.#store.db
        .updateTable('apiKeys')
        .set({ revokedAt: isoAt(this.#clock.now()) })
        .where('id', '=', id)
        .where('revokedAt', 'is', null),
    );
    if (changes === 0) {
      const exists = await this.#store.first(this.#store.db.selectFrom('apiKeys').select('id').where('id', '=', id));
      throw new StemsplitError(exists ? 'USAGE' : 'NOT_FOUND', exists ? `key ${id} is already revoked` : `no API key ${id}`);
    }
  }

  /** The principal a bearer key stands for, or undefined for unknown and revoked keys. Notes the key's use. */
  async authenticate(presentedKey: string): Promise<Principal | undefined> {
    if (!presentedKey.startsWith(KEY_PREFIX) || presentedKey.length > 200) return undefined;
    const presentedHash = sha256Hex(presentedKey);
    const row = await this.#store.first(this.#keyWithRole().select(['apiKeys.keyHash', 'apiKeys.lastUsedAt']).where('apiKeys.keyHash', '=', presentedHash));
    // The lookup is by hash; the final equality is checked in constant time anyway, so
    // no timing difference depends on how much of a guessed key was right.
    if (!row || !timingSafeEqual(Buffer.from(row.keyHash, 'hex'), Buffer.from(presentedHash, 'hex'))) return undefined;
    if (row.revokedAt !== null) return undefined;
    await this.#noteUse(row.id, row.lastUsedAt);
    return principalOf(row);
  }

  /**
   * Why a presented key that `authenticate` refused was refused: `revoked` when it was a key of
   * this server once, `unknown` when it never was (a typo, another server's key). Telling them
   * apart helps a person who mistyped; it tells a guesser nothing (keys are 256 random bits).
   */
  async refusal(presentedKey: string): Promise<'revoked' | 'unknown'> {
    if (!presentedKey.startsWith(KEY_PREFIX) || presentedKey.length > 200) return 'unknown';
    const row = await this.#store.first(this.#store.db.selectFrom('apiKeys').select('revokedAt').where('keyHash', '=', sha256Hex(presentedKey)));
    return row?.revokedAt ? 'revoked' : 'unknown';
  }

  /**
   * The principal of an API key named by id (a signed stem URL names the key it was issued to),
   * or undefined when no such key exists or it was revoked: a revoked key's URLs stop at once.
   */
  async activeKey(id: string): Promise<Principal | undefined> {
    const row = await this.#store.first(this.#keyWithRole().where('apiKeys.id', '=', id));
    if (!row || row.revokedAt !== null) return undefined;
    return principalOf(row);
  }

  #keyWithRole() {
    return this.#store.db
      .selectFrom('apiKeys')
      .innerJoin('accounts', 'accounts.id', 'apiKeys.accountId')
      .select(['apiKeys.id', 'apiKeys.accountId', 'apiKeys.revokedAt', 'accounts.role', 'accounts.name as accountName']);
  }

  /** Writes `lastUsedAt` when it is unset or a minute old. */
  async #noteUse(id: string, lastUsedAt: string | null): Promise<void> {
    const now = this.#clock.now();
    if (lastUsedAt !== null && now - Date.parse(lastUsedAt) < LAST_USED_RESOLUTION_MS) return;
    await this.#store.run(
      this.#store.db
        .updateTable('apiKeys')
        .set({ lastUsedAt: isoAt(now) })
        .where('id', '=', id),
    );
  }

  async balance(accountName: string): Promise<number> {
    return (await this.#require(accountName)).balance;
  }

  async grant(accountName: string, seconds: number, note = 'grant'): Promise<number> {
    if (!Number.isSafeInteger(seconds) || seconds <= 0) {
      throw new StemsplitError('USAGE', `credits to grant must be a positive whole number of seconds, got ${seconds}`);
    }
    return this.#store.transaction(async () => {
      const account = await this.findOrCreate(accountName);
      await this.addLedgerEntry(account.id, 'grant', seconds, null, note);
      return (await this.#require(accountName)).balance;
    });
  }

  /**
   * Moves the balance and writes the matching ledger row. Callers run it inside their own
   * transaction; the CHECK constraint makes a negative balance impossible even if a caller errs.
   */
  async addLedgerEntry(accountId: string, kind: LedgerKind, amount: number, splitId: string | null, note: string): Promise<void> {
    await this.#store.run(
      this.#store.db
        .updateTable('accounts')
        .set((eb) => ({ balance: eb('balance', '+', amount) }))
        .where('id', '=', accountId),
    );
    await this.#store.run(this.#store.db.insertInto('ledger').values({ accountId, kind, amount, splitId, note, createdAt: isoAt(this.#clock.now()) }));
  }

  /** Sums of the ledger by kind, for audits (balance = grants − charges + refunds). */
  async ledgerTotals(accountName: string): Promise<Record<LedgerKind, number>> {
    const account = await this.#require(accountName);
    const rows = await this.#store.all(
      this.#store.db
        .selectFrom('ledger')
        .select(['kind', (eb) => eb.fn.sum<number>('amount').as('total')])
        .where('accountId', '=', account.id)
        .groupBy('kind'),
    );
    const totals: Record<LedgerKind, number> = { grant: 0, charge: 0, refund: 0 };
    for (const row of rows) totals[row.kind] = Number(row.total);
    return totals;
  }

  /**
   * The account's latest ledger entries, newest first, each with the balance it left: a statement
   * an operator can read back against `credits show`.
   */
  async statement(accountName: string, limit: number): Promise<StatementEntry[]> {
    const account = await this.#require(accountName);
    const rows = await this.#store.all(
      this.#store.db
        .selectFrom('ledger')
        .select(['kind', 'amount', 'splitId', 'note', 'createdAt'])
        .where('accountId', '=', account.id)
        .orderBy('id', 'desc')
        .limit(limit),
    );
    let balanceAfter = account.balance;
    return rows.map((row) => {
      const entry = { ...row, balanceAfter };
      balanceAfter -= row.amount;
      return entry;
    });
  }

  async webhookSecret(accountId: string): Promise<string> {
    const account = await this.byId(accountId);
    if (!account) throw new StemsplitError('NOT_FOUND', `no account ${accountId}`);
    return account.webhookSecret;
  }

  async rotateWebhookSecret(accountName: string): Promise<string> {
    const account = await this.findOrCreate(accountName);
    const secret = newWebhookSecret();
    await this.#store.run(this.#store.db.updateTable('accounts').set({ webhookSecret: secret }).where('id', '=', account.id));
    return secret;
  }
}
