/** What the API asks of accounts: who holds a key, and an account's balance. */
import { StemsplitError } from '../errors.js';
import type { DataStore, Principal } from '../store/index.js';

export class AccountService {
  readonly #data: DataStore;

  constructor(data: DataStore) {
    this.#data = data;
  }

  /** The principal of an API key, or undefined for a key that is unknown or revoked. */
  authenticate(apiKey: string): Principal | undefined {
    return this.#data.accounts.authenticate(apiKey);
  }

  /** Credits left, in seconds of audio. */
  balance(principal: Principal): number {
    const account = this.#data.accounts.byId(principal.accountId);
    if (!account) throw new StemsplitError('UNAUTHORIZED', 'the API key has no account');
    return account.balance;
  }
}
