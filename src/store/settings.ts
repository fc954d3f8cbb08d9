/** Server-wide secrets and settings that must survive restarts (e.g. the stem URL signing key). */
import { randomBytes } from 'node:crypto';
import type { Store } from './database.js';

/** The value of `key`, created once with `make` and kept from then on. */
export function persistentSetting(store: Store, key: string, make: () => string): string {
  return store.transaction(() => {
    const row = store.first(store.db.selectFrom('settings').select('value').where('key', '=', key));
    if (row) return row.value;
    const value = make();
    store.run(store.db.insertInto('settings').values({ key, value }));
    return value;
  });
}

export function urlSigningKey(store: Store): Buffer {
  return Buffer.from(persistentSetting(store, 'urlSigningKey', () => randomBytes(32).toString('hex')), 'hex');
}
