/**
 * Schema migrations, in code so they ship inside the bundle. Append only: a released
 * migration is never edited, a change is a new entry. One list serves both engines; the
 * few types they spell differently come from `typesFor`, and SQLite's are what they always were.
 */
import { sql, type ColumnDataType, type Expression, type Kysely, type Migration } from 'kysely';
import type { Dialect } from './database.js';

type ColumnType = ColumnDataType | Expression<unknown>;

interface ColumnTypes {
  /** A text identifier that sorts bytewise (ids are time-ordered; PostgreSQL's locales would reorder them). */
  readonly id: ColumnType;
  /** Milliseconds since the epoch: past 2^31, so PostgreSQL needs 8 bytes. */
  readonly ms: ColumnType;
  /** The ledger's own row id, assigned in insertion order. */
  readonly serial: ColumnType;
}

function typesFor(dialect: Dialect): ColumnTypes {
  return dialect === 'postgres' ? { id: sql`text collate "C"`, ms: 'bigint', serial: 'bigserial' } : { id: 'text', ms: 'integer', serial: 'integer' };
}

export function migrationsFor(dialect: Dialect): Record<string, Migration> {
  const t = typesFor(dialect);
  return {
    '0001_initial': { up: (db) => initialSchema(db, t, dialect) },
    '0002_job_leases': { up: (db) => jobLeases(db, t) },
    '0003_output_format': { up: outputFormat },
    '0004_model_library': { up: modelLibrary },
    '0005_split_device': { up: splitDevice },
    '0006_people': { up: (db) => people(db, t) },
    '0007_mix_stems': { up: mixStemsColumn },
  };
}

/** Every migration's name, in order: the same on both engines. */
export const migrationNames: readonly string[] = Object.keys(migrationsFor('sqlite'));

async function initialSchema(db: Kysely<unknown>, t: ColumnTypes, dialect: Dialect): Promise<void> {
  await db.schema
    .createTable('accounts')
    .addColumn('id', t.id, (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull().unique())
    .addColumn('balance', 'integer', (c) => c.notNull().check(sql`balance >= 0`))
    .addColumn('webhookSecret', 'text', (c) => c.notNull())
    .addColumn('createdAt', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('apiKeys')
    .addColumn('id', t.id, (c) => c.primaryKey())
    .addColumn('accountId', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('keyHash', 'text', (c) => c.notNull().unique())
    .addColumn('createdAt', 'text', (c) => c.notNull())
    .addColumn('revokedAt', 'text')
    .addColumn('lastUsedAt', 'text')
    .execute();
  await db.schema
    .createTable('ledger')
    .addColumn('id', t.serial, (c) => (dialect === 'sqlite' ? c.primaryKey().autoIncrement() : c.primaryKey()))
    .addColumn('accountId', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('amount', 'integer', (c) => c.notNull())
    .addColumn('splitId', 'text')
    .addColumn('note', 'text', (c) => c.notNull())
    .addColumn('createdAt', 'text', (c) => c.notNull())
    .execute();
  // One charge and at most one refund per job, enforced by the database itself.
  await db.schema
    .createIndex('ledgerOnePerSplitAndKind')
    .on('ledger')
    .columns(['splitId', 'kind'])
    .unique()
    .where(sql.ref('splitId'), 'is not', null)
    .execute();
  await db.schema
    .createTable('uploads')
    .addColumn('id', t.id, (c) => c.primaryKey())
    .addColumn('accountId', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('apiKeyId', 'text', (c) => c.notNull())
    .addColumn('filename', 'text', (c) => c.notNull())
    .addColumn('contentType', 'text', (c) => c.notNull())
    .addColumn('contentLength', 'integer', (c) => c.notNull())
    .addColumn('tokenHash', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('createdAt', 'text', (c) => c.notNull())
    .addColumn('expiresAtMs', t.ms, (c) => c.notNull())
    .addColumn('completedAt', 'text')
    .execute();
  await db.schema
    .createTable('splits')
    .addColumn('id', t.id, (c) => c.primaryKey())
    .addColumn('accountId', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('apiKeyId', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('stemModel', 'text', (c) => c.notNull())
    .addColumn('modelName', 'text', (c) => c.notNull())
    .addColumn('filename', 'text', (c) => c.notNull())
    .addColumn('durationSeconds', 'integer', (c) => c.notNull())
    .addColumn('creditsUsed', 'integer', (c) => c.notNull())
    .addColumn('progress', 'integer', (c) => c.notNull())
    .addColumn('sourcePath', 'text', (c) => c.notNull())
    .addColumn('webhookUrl', 'text')
    .addColumn('baseUrl', 'text', (c) => c.notNull())
    .addColumn('stemNames', 'text')
    .addColumn('errorCode', 'text')
    .addColumn('errorMessage', 'text')
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('createdAt', 'text', (c) => c.notNull())
    .addColumn('updatedAt', 'text', (c) => c.notNull())
    .addColumn('finishedAtMs', t.ms)
    .addColumn('purgedAt', 'text')
    .execute();
  await db.schema.createIndex('splitsByStatus').on('splits').columns(['status', 'id']).execute();
  await db.schema.createIndex('splitsByApiKey').on('splits').columns(['apiKeyId', 'id']).execute();
  await db.schema
    .createTable('idempotencyKeys')
    .addColumn('apiKeyId', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('requestHash', 'text', (c) => c.notNull())
    .addColumn('responseStatus', 'integer')
    .addColumn('responseBody', 'text')
    .addColumn('createdAtMs', t.ms, (c) => c.notNull())
    .addPrimaryKeyConstraint('idempotencyKeysPk', ['apiKeyId', 'key'])
    .execute();
  await db.schema
    .createTable('webhookDeliveries')
    .addColumn('id', t.id, (c) => c.primaryKey())
    .addColumn('splitId', 'text', (c) => c.notNull())
    .addColumn('accountId', 'text', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('nextAttemptAtMs', t.ms, (c) => c.notNull())
    .addColumn('lastError', 'text')
    .addColumn('createdAtMs', t.ms, (c) => c.notNull())
    .addColumn('deliveredAt', 'text')
    .execute();
  await db.schema.createIndex('deliveriesDue').on('webhookDeliveries').columns(['status', 'nextAttemptAtMs']).execute();
  await db.schema
    .createTable('settings')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('value', 'text', (c) => c.notNull())
    .execute();
}

/**
 * Which worker holds a job, until when. A worker renews its lease while it runs the job; a
 * job whose lease ran out (its worker died) is claimed again by the next free worker.
 */
async function jobLeases(db: Kysely<unknown>, t: ColumnTypes): Promise<void> {
  await db.schema.alterTable('splits').addColumn('leaseOwner', 'text').execute();
  await db.schema.alterTable('splits').addColumn('leaseExpiresAtMs', t.ms).execute();
}

/** The file format of a job's stems (`outputFormat`): MP3 as the spec has it, or WAV/FLAC (an addition). */
async function outputFormat(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('splits')
    .addColumn('outputFormat', 'text', (c) => c.notNull().defaultTo('mp3'))
    .execute();
}

/** The device that ran a job ("GPU: NVIDIA H200 (Vulkan)", "CPU"), set once its worker has loaded the model. */
async function splitDevice(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('splits').addColumn('device', 'text').execute();
}

/**
 * A job's own model choices (an ensemble's algorithm and weights, two stems, the bit depth: an
 * addition of the API) and each model's measured speed, shown by GET /v1/models and models list.
 */
async function modelLibrary(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('splits').addColumn('jobOptions', 'text').execute();
  await db.schema
    .createTable('modelTimings')
    .addColumn('modelName', 'text', (c) => c.primaryKey())
    .addColumn('processingSeconds', 'double precision', (c) => c.notNull())
    .addColumn('audioSeconds', 'double precision', (c) => c.notNull())
    .addColumn('jobs', 'integer', (c) => c.notNull())
    .addColumn('updatedAt', 'text', (c) => c.notNull())
    .execute();
}

/**
 * A studio's LAN (issue 48): each account is an `admin` or a `member` (the `default` account, the
 * one the first start makes, is the admin); a job deleted by its owner keeps its row (its ledger
 * entries name it) but is gone from the API (`deletedAt`); one-time invites a page exchanges for a
 * person's own key, kept as SHA-256 hashes like keys.
 */
async function people(db: Kysely<unknown>, t: ColumnTypes): Promise<void> {
  await db.schema
    .alterTable('accounts')
    .addColumn('role', 'text', (c) => c.notNull().defaultTo('member'))
    .execute();
  await sql`update accounts set role = 'admin' where name = 'default'`.execute(db);
  await db.schema.alterTable('splits').addColumn('deletedAt', 'text').execute();
  await db.schema
    .createTable('invites')
    .addColumn('id', t.id, (c) => c.primaryKey())
    .addColumn('accountId', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('tokenHash', 'text', (c) => c.notNull().unique())
    .addColumn('createdAt', 'text', (c) => c.notNull())
    .addColumn('expiresAtMs', t.ms, (c) => c.notNull())
    .addColumn('usedAt', 'text')
    .addColumn('apiKeyId', 'text')
    .execute();
}

/** Which of a job's stems add up to the mix (separation/mix-set.ts), as JSON; null for jobs made before. */
async function mixStemsColumn(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('splits').addColumn('mixStems', 'text').execute();
}
