/** What the API asks of accounts: who holds a key, and an account's balance. */
import { StemsplitError } from '../errors.js';
import type { DataStore, Principal } from '../store/index.js';

export class AccountService {
  readonly #data: DataStore;

  constructor(data: DataStore) {
    this.#data = data;
  }

  /** The principal of an API key, or undefined for a key that is unknown or revoked. */
  authenticate(apiKey: string): Promise<Principal | undefined> {
    return this.#data.accounts.authenticate(apiKey);
  }

  /** Why a key `authenticate` refused was refused. */
  refusal(apiKey: string): Promise<'revoked' | 'unknown'> {
    return this.#data.accounts.refusal(apiKey);
  }

  /** Credits left, in seconds of audio. */
  async balance(principal: Principal): Promise<number> {
    const account = await this.#data.accounts.byId(principal.accountId);
    if (!account) throw new StemsplitError('UNAUTHORIZED', 'the API key has no account');
    return account.balance;
  }
}
