/** The same suite as api.test.ts, over PostgreSQL instead of SQLite. */
process.env['STEMSPLIT_TEST_STORE'] = 'postgres';
await import('./api.test.js');
