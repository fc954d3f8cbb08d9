/** Server-wide secrets and settings that must survive restarts (e.g. the stem URL signing key). */
import { randomBytes } from 'node:crypto';
import type { Store } from './database.js';

/** The value of `key`, created once with `make` and kept from then on: the same for every node of one database. */
export async function persistentSetting(store: Store, key: string, make: () => string): Promise<string> {
  // Two nodes starting together both try; the first insert wins and both read it back.
  await store.run(
    store.db
      .insertInto('settings')
      .values({ key, value: make() })
      .onConflict((oc) => oc.column('key').doNothing()),
  );
  const row = await store.first(store.db.selectFrom('settings').select('value').where('key', '=', key));
  if (!row) throw new Error(`setting ${key} vanished right after it was written`);
  return row.value;
}

/** The key stem URLs are signed with: in the database, so every API node signs and checks alike. */
export async function urlSigningKey(store: Store): Promise<Buffer> {
  return Buffer.from(await persistentSetting(store, 'urlSigningKey', () => randomBytes(32).toString('hex')), 'hex');
}

/** Sets `key` to `value`, replacing what was there. */
export async function writeSetting(store: Store, key: string, value: string): Promise<void> {
  await store.run(
    store.db
      .insertInto('settings')
      .values({ key, value })
      .onConflict((oc) => oc.column('key').doUpdateSet({ value })),
  );
}

/** The value of `key`, or undefined when it was never set. */
export async function readSetting(store: Store, key: string): Promise<string | undefined> {
  return (await store.first(store.db.selectFrom('settings').select('value').where('key', '=', key)))?.value;
}
