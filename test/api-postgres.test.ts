/** The same suite as api.test.ts, over PostgreSQL instead of SQLite. */
import { suiteOnPostgres } from './support/postgres.js';

await suiteOnPostgres('api.test.ts', () => import('./api.test.js'));
