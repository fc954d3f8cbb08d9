/** The same suite as webhooks.test.ts, over PostgreSQL instead of SQLite. */
import { suiteOnPostgres } from './support/postgres.js';

await suiteOnPostgres('webhooks.test.ts', () => import('./webhooks.test.js'));
