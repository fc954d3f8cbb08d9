/**
 * Schema migrations, in code so they ship inside the bundle. Append only: a released
 * migration is never edited, a change is a new entry.
 */
import { sql, type Kysely, type Migration } from 'kysely';

export const migrations: Readonly<Record<string, Migration>> = Object.freeze({
  '0001_initial': {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable('accounts')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull().unique())
        .addColumn('balance', 'integer', (c) => c.notNull().check(sql`balance >= 0`))
        .addColumn('webhookSecret', 'text', (c) => c.notNull())
        .addColumn('createdAt', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('apiKeys')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('accountId', 'text', (c) => c.notNull().references('accounts.id'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('keyHash', 'text', (c) => c.notNull().unique())
        .addColumn('createdAt', 'text', (c) => c.notNull())
        .addColumn('revokedAt', 'text')
        .addColumn('lastUsedAt', 'text')
        .execute();
      await db.schema
        .createTable('ledger')
        .addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
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
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('accountId', 'text', (c) => c.notNull().references('accounts.id'))
        .addColumn('apiKeyId', 'text', (c) => c.notNull())
        .addColumn('filename', 'text', (c) => c.notNull())
        .addColumn('contentType', 'text', (c) => c.notNull())
        .addColumn('contentLength', 'integer', (c) => c.notNull())
        .addColumn('tokenHash', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('createdAt', 'text', (c) => c.notNull())
        .addColumn('expiresAtMs', 'integer', (c) => c.notNull())
        .addColumn('completedAt', 'text')
        .execute();
      await db.schema
        .createTable('splits')
        .addColumn('id', 'text', (c) => c.primaryKey())
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
        .addColumn('finishedAtMs', 'integer')
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
        .addColumn('createdAtMs', 'integer', (c) => c.notNull())
        .addPrimaryKeyConstraint('idempotencyKeysPk', ['apiKeyId', 'key'])
        .execute();
      await db.schema
        .createTable('webhookDeliveries')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('splitId', 'text', (c) => c.notNull())
        .addColumn('accountId', 'text', (c) => c.notNull())
        .addColumn('url', 'text', (c) => c.notNull())
        .addColumn('payload', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull())
        .addColumn('nextAttemptAtMs', 'integer', (c) => c.notNull())
        .addColumn('lastError', 'text')
        .addColumn('createdAtMs', 'integer', (c) => c.notNull())
        .addColumn('deliveredAt', 'text')
        .execute();
      await db.schema.createIndex('deliveriesDue').on('webhookDeliveries').columns(['status', 'nextAttemptAtMs']).execute();
      await db.schema
        .createTable('settings')
        .addColumn('key', 'text', (c) => c.primaryKey())
        .addColumn('value', 'text', (c) => c.notNull())
        .execute();
    },
  },
});
