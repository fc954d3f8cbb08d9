/**
 * What an admin does for the studio's people through the API (issue 48): keys, invites, credits
 * and the list of accounts. Every method takes the caller's principal and refuses a member (403
 * FORBIDDEN); the CLI, run by the operator on the box, reaches the store directly instead.
 */
import { StemsplitError } from '../errors.js';
import type { ApiKeyInfo, CreatedApiKey, CreatedInvite, DataStore, Principal, Role } from '../store/index.js';

/** How long an invite lasts unless the admin says otherwise: a day, to be opened on the studio's machines. */
export const INVITE_TTL_SECONDS = 24 * 3600;

export interface Person {
  readonly account: string;
  readonly role: Role;
  readonly balance: number;
  readonly createdAt: string;
  /** Keys of the account that still work. */
  readonly activeKeys: number;
  /** The latest use of any of its keys, or null. */
  readonly lastUsedAt: string | null;
}

export class PeopleService {
  readonly #data: DataStore;

  constructor(data: DataStore) {
    this.#data = data;
  }

  async people(principal: Principal): Promise<Person[]> {
    admin(principal);
    const [accounts, keys] = await Promise.all([this.#data.accounts.listAccounts(), this.#data.accounts.listKeys()]);
    return accounts.map((account) => {
      const own = keys.filter((key) => key.accountId === account.id);
      const used = own
        .map((key) => key.lastUsedAt)
        .filter((at): at is string => at !== null)
        .sort();
      return {
        account: account.name,
        role: account.role,
        balance: account.balance,
        createdAt: account.createdAt,
        activeKeys: own.filter((key) => key.revokedAt === null).length,
        lastUsedAt: used.at(-1) ?? null,
      };
    });
  }

  async keys(principal: Principal): Promise<ApiKeyInfo[]> {
    admin(principal);
    return this.#data.accounts.listKeys();
  }

  async createKey(principal: Principal, account: string, name: string, role: Role): Promise<CreatedApiKey> {
    admin(principal);
    return this.#data.accounts.createKey(account, name, role);
  }

  async revokeKey(principal: Principal, id: string): Promise<ApiKeyInfo> {
    admin(principal);
    if (id === principal.apiKeyId)
      throw new StemsplitError('VALIDATION_ERROR', 'this is the key making the request; revoke it from another admin key or with "stemsplit keys revoke"');
    const key = (await this.#data.accounts.listKeys()).find((k) => k.id === id);
    if (!key) throw new StemsplitError('NOT_FOUND', `no API key ${id.slice(0, 64)}`);
    if (key.revokedAt === null) await this.#data.accounts.revokeKey(id);
    return (await this.#data.accounts.listKeys()).find((k) => k.id === id) as ApiKeyInfo;
  }

  async grant(principal: Principal, account: string, seconds: number): Promise<number> {
    admin(principal);
    if (!(await this.#data.accounts.find(account))) throw new StemsplitError('NOT_FOUND', `no account "${account.slice(0, 64)}"; invite them first`);
    return this.#data.accounts.grant(account, seconds, `granted through the API by ${principal.accountName}`);
  }

  /** An invite to `account` (made a member if new), granting it `credits` (0: none). */
  async invite(principal: Principal, account: string, ttlSeconds: number, credits: number): Promise<CreatedInvite> {
    admin(principal);
    return this.#data.store.transaction(async () => {
      const created = await this.#data.invites.create(account, ttlSeconds);
      if (credits > 0) await this.#data.accounts.grant(account, credits, `granted with the invite by ${principal.accountName}`);
      return created;
    });
  }
}

function admin(principal: Principal): void {
  if (principal.role !== 'admin') throw new StemsplitError('FORBIDDEN', "only the studio's admin manages people, keys, invites and credits");
}
