/** The same suite as api-cancel.test.ts, over PostgreSQL instead of SQLite. */
import { suiteOnPostgres } from './support/postgres.js';

await suiteOnPostgres('api-cancel.test.ts', () => import('./api-cancel.test.js'));
