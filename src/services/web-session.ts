/**
 * The web page's session keys (the links are net/page-links.ts's). `stemsplit serve` prints a one-time
 * invite of the default (admin) account, never a key: the page exchanges it (POST
 * /v1/invites/exchange) for a `web session` key that the browser keeps, so no working key is
 * written to stdout or a journal. That key lasts across restarts until `serve --new-link` or
 * `keys revoke` ends it.
 *
 * `stemsplit keys link` is the operator's own way in, from a shell on the box: it makes a new
 * web-session key and prints a link carrying it in the URL fragment (which browsers never send to
 * the server), revoking the account's web-session keys it replaces unless `--keep`.
 */
import { DEFAULT_ACCOUNT, INVITED_KEY_NAME, readSetting, writeSetting, type CreatedApiKey, type DataStore } from '../store/index.js';

/** The page's keys: those invites are exchanged for, and those `keys link` makes. */
export const WEB_SESSION_KEY_NAME = INVITED_KEY_NAME;

/** Where serve records the page's addresses, for `keys link` to print them from any shell. */
const PAGE_ADDRESSES_SETTING = 'webPageAddresses';

/** Whether the default account has a web-session key that still works. */
export async function hasWebSession(data: Pick<DataStore, 'accounts'>): Promise<boolean> {
  return (await data.accounts.listKeys()).some((key) => key.accountName === DEFAULT_ACCOUNT && key.name === WEB_SESSION_KEY_NAME && key.revokedAt === null);
}

/** Revokes the account's previous web-session keys (the default account's unless named) and creates a new one. */
export function createWebSession(data: Pick<DataStore, 'accounts' | 'store'>, account = DEFAULT_ACCOUNT): Promise<CreatedApiKey & { revoked: string[] }> {
  return data.store.transaction(async () => {
    const revoked = await endWebSessions(data, account);
    return { ...(await data.accounts.createKey(account, WEB_SESSION_KEY_NAME)), revoked };
  });
}

/** Revokes the account's web-session keys (serve --new-link, before it prints a new invite); returns their ids. */
export function endWebSessions(data: Pick<DataStore, 'accounts' | 'store'>, account = DEFAULT_ACCOUNT): Promise<string[]> {
  return data.store.transaction(async () => {
    const revoked: string[] = [];
    for (const key of await data.accounts.listKeys()) {
      if (key.accountName === account && key.name === WEB_SESSION_KEY_NAME && key.revokedAt === null) {
        await data.accounts.revokeKey(key.id);
        revoked.push(key.id);
      }
    }
    return revoked;
  });
}

/** One more web-session key, the others left working: for showing the page's link again. */
export function addWebSession(data: Pick<DataStore, 'accounts'>, account = DEFAULT_ACCOUNT): Promise<CreatedApiKey> {
  return data.accounts.createKey(account, WEB_SESSION_KEY_NAME);
}

/** Records where the page is, for `stemsplit keys link` run later from another shell. */
export function recordPageOrigins(data: Pick<DataStore, 'store'>, origins: readonly string[]): Promise<void> {
  return writeSetting(data.store, PAGE_ADDRESSES_SETTING, JSON.stringify(origins));
}

/** The origins the last `serve` on this data dir recorded, or undefined before any did. */
export async function recordedPageOrigins(data: Pick<DataStore, 'store'>): Promise<string[] | undefined> {
  const raw = await readSetting(data.store, PAGE_ADDRESSES_SETTING);
  if (raw === undefined) return undefined;
  try {
    const origins: unknown = JSON.parse(raw);
    return Array.isArray(origins) && origins.every((o) => typeof o === 'string') ? origins : undefined;
  } catch {
    return undefined;
  }
}
