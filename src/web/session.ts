/**
 * The local session of the web page: `stemsplit serve` makes an API key of the default account
 * and prints a link carrying it in the URL fragment, which browsers never send to the server, so
 * the key stays out of request lines and logs. The key lasts across restarts (a bookmarked page
 * keeps working) until `serve --new-link` replaces it or `keys revoke` ends it. Keys are stored
 * only as hashes, so the link is printed once, when its key is made.
 */
import { DEFAULT_ACCOUNT, type CreatedApiKey, type DataStore } from '../store/index.js';

export const WEB_SESSION_KEY_NAME = 'web session';

/** Whether the default account has a web-session key that still works. */
export async function hasWebSession(data: Pick<DataStore, 'accounts'>): Promise<boolean> {
  return (await data.accounts.listKeys()).some((key) => key.accountName === DEFAULT_ACCOUNT && key.name === WEB_SESSION_KEY_NAME && key.revokedAt === null);
}

/** Revokes the default account's previous web-session keys and creates a new one. */
export function createWebSession(data: Pick<DataStore, 'accounts' | 'store'>): Promise<CreatedApiKey> {
  return data.store.transaction(async () => {
    for (const key of await data.accounts.listKeys()) {
      if (key.accountName === DEFAULT_ACCOUNT && key.name === WEB_SESSION_KEY_NAME && key.revokedAt === null) {
        await data.accounts.revokeKey(key.id);
      }
    }
    return data.accounts.createKey(DEFAULT_ACCOUNT, WEB_SESSION_KEY_NAME);
  });
}

/**
 * The page's address with the key in its fragment. A server listening on every interface is
 * reached through loopback from the machine that printed the link.
 */
export function webSessionLink(serverUrl: string, key: string): string {
  const url = new URL(serverUrl);
  if (url.hostname === '0.0.0.0') url.hostname = '127.0.0.1';
  if (url.hostname === '[::]') url.hostname = '[::1]';
  // The page is the folder's index: `/`, or `/prefix/` under a --public-url with a path.
  url.pathname = url.pathname.replace(/\/*$/, '/');
  url.hash = `key=${encodeURIComponent(key)}`;
  return url.toString();
}
