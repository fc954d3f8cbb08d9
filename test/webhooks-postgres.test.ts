/** The same suite as webhooks.test.ts, over PostgreSQL instead of SQLite. */
process.env['STEMSPLIT_TEST_STORE'] = 'postgres';
await import('./webhooks.test.js');
