/**
 * Opens a data dir: its database (SQLite inside it, or PostgreSQL shared by several nodes), the
 * repositories over it and the file layout.
 */
import { Accounts } from './accounts.js';
import { systemClock, type Clock } from './clock.js';
import type { Store } from './database.js';
import { openPostgresStore } from './postgres.js';
import { openSqliteStore } from './sqlite.js';
import { Deliveries } from './deliveries.js';
import { dataLayout, type DataLayout } from './files.js';
import { IdempotencyKeys } from './idempotency.js';
import { Invites } from './invites.js';
import { ModelTimings } from './model-timings.js';
import { Splits } from './splits.js';
import { Uploads } from './uploads.js';

export interface DataStore {
  readonly store: Store;
  readonly layout: DataLayout;
  readonly clock: Clock;
  readonly accounts: Accounts;
  readonly invites: Invites;
  readonly uploads: Uploads;
  readonly splits: Splits;
  readonly idempotency: IdempotencyKeys;
  readonly deliveries: Deliveries;
  readonly modelTimings: ModelTimings;
  close(): Promise<void>;
}

export interface OpenDataStoreOptions {
  readonly initialCredits: number;
  readonly idempotencyTtlSeconds: number;
  readonly clock?: Clock;
  /** `postgres://…`: the shared database of several nodes; absent, the data dir's own SQLite file. */
  readonly databaseUrl?: string | undefined;
  /** PostgreSQL connections this process may hold. */
  readonly maxConnections?: number;
  readonly log?: (line: string) => void;
}

export async function openDataStore(dataDir: string, options: OpenDataStoreOptions): Promise<DataStore> {
  const layout = dataLayout(dataDir);
  const clock = options.clock ?? systemClock;
  const store = options.databaseUrl
    ? await openPostgresStore(options.databaseUrl, {
        ...(options.maxConnections ? { maxConnections: options.maxConnections } : {}),
        ...(options.log ? { log: options.log } : {}),
      })
    : await openSqliteStore(layout.database);
  const accounts = new Accounts(store, clock);
  try {
    await accounts.ensureDefault(options.initialCredits);
  } catch (error) {
    await store.close();
    throw error;
  }
  return Object.freeze({
    store,
    layout,
    clock,
    accounts,
    invites: new Invites(store, clock, accounts),
    uploads: new Uploads(store, clock),
    splits: new Splits(store, clock),
    idempotency: new IdempotencyKeys(store, clock, options.idempotencyTtlSeconds),
    deliveries: new Deliveries(store, clock),
    modelTimings: new ModelTimings(store, clock),
    close: () => store.close(),
  });
}

export { DEFAULT_ACCOUNT, type Account, type Principal, type CreatedApiKey, type ApiKeyInfo } from './accounts.js';
export { INVITE_PREFIX, INVITED_KEY_NAME, type CreatedInvite } from './invites.js';
export type { Role } from './schema.js';
export type { Split } from './splits.js';
export type { Upload } from './uploads.js';
export type { Delivery } from './deliveries.js';
export type { Clock } from './clock.js';
export { systemClock, isoAt } from './clock.js';
export { readSetting, urlSigningKey, writeSetting } from './settings.js';
export { isStemName } from './files.js';
export { newId, ID_PATTERN } from './ids.js';
export { lockDataDirForServe } from './serve-lock.js';
export { makeDataDirPrivate } from './private-files.js';
export type { Store, Dialect } from './database.js';
export { redactDatabaseUrl } from './postgres.js';
export { OutageLog } from './outage.js';
export { parseJobOptions, serializeJobOptions, type JobOptions } from './job-options.js';
