/**
 * A process that opens a data dir on cue, for tests of processes starting together: it says
 * `ready` once loaded, opens the dir when a line arrives on stdin, and prints the default balance.
 */
import { once } from 'node:events';
import { openDataStore } from '../../src/store/index.js';

const dataDir = process.argv[2];
if (!dataDir) throw new Error('usage: open-data-dir.ts <data dir>');
process.stdout.write('ready\n');
await once(process.stdin, 'data');
process.stdin.destroy();
const data = await openDataStore(dataDir, { initialCredits: 3600, idempotencyTtlSeconds: 86400 });
process.stdout.write(`balance ${await data.accounts.balance('default')}\n`);
await data.close();
