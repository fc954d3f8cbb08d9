/** The same suite as idempotency.test.ts, over PostgreSQL instead of SQLite. */
process.env['STEMSPLIT_TEST_STORE'] = 'postgres';
await import('./idempotency.test.js');
