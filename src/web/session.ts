/**
 * The local session of the web page: `stemsplit serve` makes a fresh API key of the default
 * account on each start and prints a link carrying it in the URL fragment, which browsers never
 * send to the server, so the key stays out of request lines and logs.
 */
import { DEFAULT_ACCOUNT, type CreatedApiKey, type DataStore } from '../store/index.js';

export const WEB_SESSION_KEY_NAME = 'web session';

/** Revokes the default account's previous web-session keys and creates a new one. */
export function createWebSession(data: Pick<DataStore, 'accounts' | 'store'>): CreatedApiKey {
  return data.store.transaction(() => {
    for (const key of data.accounts.listKeys()) {
      if (key.accountName === DEFAULT_ACCOUNT && key.name === WEB_SESSION_KEY_NAME && key.revokedAt === null) {
        data.accounts.revokeKey(key.id);
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
