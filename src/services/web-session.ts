/**
 * The web page's session keys (the links are web/session.ts's): `stemsplit serve` makes an API key of the default account
 * and prints a link carrying it in the URL fragment, which browsers never send to the server, so
 * the key stays out of request lines and logs. The key lasts across restarts (a bookmarked page
 * keeps working) until `serve --new-link` replaces it or `keys revoke` ends it.
 *
 * Keys are stored only as hashes, so a link once printed cannot be printed again. Showing the
 * page's address again (`stemsplit keys link`, `serve --print-link`) therefore makes one more
 * web-session key and prints its link; the earlier links keep working. (Keeping the link's key
 * encrypted instead would put its decryption key in the same data dir: a plaintext key with
 * extra steps.) `serve --new-link` revokes every web-session key at once.
 */
import { DEFAULT_ACCOUNT, readSetting, writeSetting, type CreatedApiKey, type DataStore } from '../store/index.js';

export const WEB_SESSION_KEY_NAME = 'web session';

/** Where serve records the page's addresses, for `keys link` to print them from any shell. */
const PAGE_ADDRESSES_SETTING = 'webPageAddresses';

/** Whether the default account has a web-session key that still works. */
export async function hasWebSession(data: Pick<DataStore, 'accounts'>): Promise<boolean> {
  return (await data.accounts.listKeys()).some((key) => key.accountName === DEFAULT_ACCOUNT && key.name === WEB_SESSION_KEY_NAME && key.revokedAt === null);
}

/** Revokes the account's previous web-session keys (the default account's unless named) and creates a new one. */
export function createWebSession(data: Pick<DataStore, 'accounts' | 'store'>, account = DEFAULT_ACCOUNT): Promise<CreatedApiKey & { revoked: string[] }> {
  return data.store.transaction(async () => {
    const revoked: string[] = [];
    for (const key of await data.accounts.listKeys()) {
      if (key.accountName === account && key.name === WEB_SESSION_KEY_NAME && key.revokedAt === null) {
        await data.accounts.revokeKey(key.id);
        revoked.push(key.id);
      }
    }
    return { ...(await data.accounts.createKey(account, WEB_SESSION_KEY_NAME)), revoked };
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
