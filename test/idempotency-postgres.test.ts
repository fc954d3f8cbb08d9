/** The same suite as idempotency.test.ts, over PostgreSQL instead of SQLite. */
import { suiteOnPostgres } from './support/postgres.js';

await suiteOnPostgres('idempotency.test.ts', () => import('./idempotency.test.js'));
