/**
 * Accounts, their API keys and their credit ledger. An account holds the balance and the
 * webhook signing secret; keys belong to an account. Keys are stored only as SHA-256 hashes.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { StemsplitError } from '../errors.js';
import { isoAt, type Clock } from './clock.js';
import type { Store } from './database.js';
import { newId } from './ids.js';
import type { AccountTable, ApiKeyTable, LedgerKind } from './schema.js';

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
}

export interface Principal {
  readonly apiKeyId: string;
  readonly accountId: string;
}

function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
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
  ensureDefault(initialCredits: number): Account {
    return this.#store.transaction(() => {
      const existing = this.find(DEFAULT_ACCOUNT);
      if (existing) return existing;
      const account = this.#insertAccount(DEFAULT_ACCOUNT);
      if (initialCredits > 0) this.grant(DEFAULT_ACCOUNT, initialCredits, 'initial grant of a new data dir');
      return this.#require(DEFAULT_ACCOUNT, account.id);
    });
  }

  find(name: string): Account | undefined {
    return this.#store.first(this.#store.db.selectFrom('accounts').selectAll().where('name', '=', name));
  }

  byId(id: string): Account | undefined {
    return this.#store.first(this.#store.db.selectFrom('accounts').selectAll().where('id', '=', id));
  }

  /** The named account, created on first use (accounts are cheap and local). */
  findOrCreate(name: string): Account {
    return this.#store.transaction(() => this.find(name) ?? this.#insertAccount(name));
  }

  #insertAccount(name: string): Account {
    if (!/^[\w.-]{1,64}$/.test(name)) throw new StemsplitError('USAGE', `invalid account name "${name}"`);
    const account: Account = {
      id: newId('acct'),
      name,
      balance: 0,
      webhookSecret: newWebhookSecret(),
      createdAt: isoAt(this.#clock.now()),
    };
    this.#store.run(this.#store.db.insertInto('accounts').values(account));
    return account;
  }

  #require(name: string, id?: string): Account {
    const account = id ? this.byId(id) : this.find(name);
    if (!account) throw new StemsplitError('NOT_FOUND', `no account "${name}"`);
    return account;
  }

  createKey(accountName: string, keyName: string): CreatedApiKey {
    const account = this.findOrCreate(accountName);
    const id = newId('key');
    const key = KEY_PREFIX + randomBytes(32).toString('base64url');
    this.#store.run(
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
    return { id, key, account: account.name };
  }

  listKeys(): ApiKeyInfo[] {
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

  revokeKey(id: string): void {
    const { changes } = this.#store.run(
      this.#store.db
        .updateTable('apiKeys')
        .set({ revokedAt: isoAt(this.#clock.now()) })
        .where('id', '=', id)
        .where('revokedAt', 'is', null),
    );
    if (changes === 0) {
      const exists = this.#store.first(this.#store.db.selectFrom('apiKeys').select('id').where('id', '=', id));
      throw new StemsplitError(exists ? 'USAGE' : 'NOT_FOUND', exists ? `key ${id} is already revoked` : `no API key ${id}`);
    }
  }

  /** The principal a bearer key stands for, or undefined for unknown and revoked keys. */
  authenticate(presentedKey: string): Principal | undefined {
    if (!presentedKey.startsWith(KEY_PREFIX) || presentedKey.length > 200) return undefined;
    const presentedHash = sha256Hex(presentedKey);
    const row = this.#store.first(
      this.#store.db.selectFrom('apiKeys').select(['id', 'accountId', 'keyHash', 'revokedAt']).where('keyHash', '=', presentedHash),
    );
    // The lookup is by hash; the final equality is checked in constant time anyway, so
    // no timing difference depends on how much of a guessed key was right.
    if (!row || !timingSafeEqual(Buffer.from(row.keyHash, 'hex'), Buffer.from(presentedHash, 'hex'))) return undefined;
    if (row.revokedAt !== null) return undefined;
    return { apiKeyId: row.id, accountId: row.accountId };
  }

  balance(accountName: string): number {
    return this.#require(accountName).balance;
  }

  grant(accountName: string, seconds: number, note = 'grant'): number {
    if (!Number.isSafeInteger(seconds) || seconds <= 0) {
      throw new StemsplitError('USAGE', `credits to grant must be a positive whole number of seconds, got ${seconds}`);
    }
    return this.#store.transaction(() => {
      const account = this.findOrCreate(accountName);
      this.addLedgerEntry(account.id, 'grant', seconds, null, note);
      return this.#require(accountName).balance;
    });
  }

  /**
   * Moves the balance and writes the matching ledger row. Callers run it inside their own
   * transaction; the CHECK constraint makes a negative balance impossible even if a caller errs.
   */
  addLedgerEntry(accountId: string, kind: LedgerKind, amount: number, splitId: string | null, note: string): void {
    this.#store.run(
      this.#store.db
        .updateTable('accounts')
        .set((eb) => ({ balance: eb('balance', '+', amount) }))
        .where('id', '=', accountId),
    );
    this.#store.run(
      this.#store.db.insertInto('ledger').values({ accountId, kind, amount, splitId, note, createdAt: isoAt(this.#clock.now()) }),
    );
  }

  /** Sums of the ledger by kind, for audits (balance = grants − charges + refunds). */
  ledgerTotals(accountName: string): Record<LedgerKind, number> {
    const account = this.#require(accountName);
    const rows = this.#store.all(
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
  statement(accountName: string, limit: number): StatementEntry[] {
    const account = this.#require(accountName);
    const rows = this.#store.all(
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

  webhookSecret(accountId: string): string {
    const account = this.byId(accountId);
    if (!account) throw new StemsplitError('NOT_FOUND', `no account ${accountId}`);
    return account.webhookSecret;
  }

  rotateWebhookSecret(accountName: string): string {
    const account = this.findOrCreate(accountName);
    const secret = newWebhookSecret();
    this.#store.run(this.#store.db.updateTable('accounts').set({ webhookSecret: secret }).where('id', '=', account.id));
    return secret;
  }
}
