/** The same suite as api.test.ts, over PostgreSQL instead of SQLite. */
import { suiteOnPostgres } from '../harness/postgres.js';

await suiteOnPostgres('api.test.ts', () => import('./api.test.js'));
