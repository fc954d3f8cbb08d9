// @ts-check
/**
 * Browser module `/web/key-store.js`: where the page's API key is kept (this browser's storage) and
 * what a link brings (the `#key=` of a "stemsplit serve" link, the `#invite=` of an admin's).
 */
const KEY_STORAGE = 'stemsplit.apiKey';

/** The key this browser keeps, or '' (none, or storage disabled). */
export function storedKey() {
  try {
    return localStorage.getItem(KEY_STORAGE) || '';
  } catch (ignored) {
    return '';
  }
}

/** Keeps the key in this browser; '' forgets it. */
export function storeKey(key) {
  try {
    if (key) localStorage.setItem(KEY_STORAGE, key);
    else localStorage.removeItem(KEY_STORAGE);
  } catch (ignored) {
    /* storage disabled: the key lasts as long as the page */
  }
}

/** The key a "stemsplit serve" link carries in its fragment; the fragment is then cleared from the address bar. */
export function keyFromFragment() {
  const match = /(?:^#|&)key=([^&]+)/.exec(location.hash);
  if (!match) return '';
  history.replaceState(null, '', location.pathname + location.search);
  return decodeURIComponent(match[1]);
}

/** The one-time invite an admin's (or serve's) link carries in its fragment; the fragment is then cleared. */
export function inviteFromFragment() {
  const match = /(?:^#|&)invite=([^&]+)/.exec(location.hash);
  if (!match) return '';
  history.replaceState(null, '', location.pathname + location.search);
  return decodeURIComponent(match[1]);
}
