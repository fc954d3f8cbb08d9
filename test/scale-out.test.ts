/**
 * Several nodes, one service, on a real PostgreSQL: two API nodes over one database and one data
 * dir never overdraw and never make a job twice; `stemsplit worker` processes share the queue, and
 * a worker SIGKILLed mid-job loses it to the other once its lease lapses, with no second charge
 * and every webhook delivered; an API node that loses the database answers 503 and recovers.
 */
import assert from 'node:assert/strict';
import { type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { writeSong } from './support/audio.js';
import { ApiClient } from './support/client.js';
import { freshDatabase, postgresSkipReason, relayTo, type TestDatabase } from './support/postgres.js';
import { killHard, runCli, spawnCli } from './support/process.js';
import { startTestServer, tempDir, uploadFile, type TestServer } from './support/server.js';
import { until } from './support/wait.js';
import { receiver } from './support/webhook-receiver.js';
import { openDataStore } from '../src/store/index.js';

const unavailable = await postgresSkipReason();
const skip = unavailable ?? false;

let database: TestDatabase;
let dataDir: string;
let nodeA: TestServer;
let nodeB: TestServer;
let song: Buffer;

before(async () => {
  if (unavailable) return;
  database = await freshDatabase();
  dataDir = tempDir();
  writeSong(join(dataDir, 'song.wav'), 4.3);
  song = readFileSync(join(dataDir, 'song.wav'));
  // API-only nodes (serve --workers 0) over one database and one data dir.
  const node = { dataDir, databaseUrl: database.url, concurrency: 0, rateLimitPerMinute: 1000, allowPrivateUrls: true };
  nodeA = await startTestServer(node);
  nodeB = await startTestServer(node);
});

after(async () => {
  if (unavailable) return;
  await nodeA.close();
  await nodeB.close();
  await database.drop();
});

/** An account with `credits` and a key on it, as `keys create` and `credits grant` make them. */
async function accountWith(name: string, credits: number): Promise<string> {
  const { key } = await nodeA.server.data.accounts.createKey(name, 'scale-out');
  await nodeA.server.data.accounts.grant(name, credits);
  return key;
}

async function splitsOf(account: string) {
  const { store } = nodeA.server.data;
  const id = (await nodeA.server.data.accounts.find(account))?.id ?? '';
  return store.all(store.db.selectFrom('splits').selectAll().where('accountId', '=', id));
}

test('20 concurrent creates over two API nodes never overdraw', { skip }, async () => {
  const key = await accountWith('overdraw', 10); // two jobs of 5 credits
  const inputs = await Promise.all(Array.from({ length: 20 }, () => new ApiClient(nodeA.server.url, key).upload(song, 'song.wav', 'audio/wav', 'POST')));
  const replies = await Promise.all(
    inputs.map((input, i) =>
      new ApiClient((i % 2 === 0 ? nodeA : nodeB).server.url, key).request('POST', '/audio/splits', { body: { input, stemModel: '4s' } }),
    ),
  );
  const statuses = replies.map((r) => r.status).sort();
  assert.deepEqual(statuses, [...Array(2).fill(200), ...Array(18).fill(402)], JSON.stringify(replies.map((r) => r.json)));
  assert.equal(await nodeB.server.data.accounts.balance('overdraw'), 0);
  assert.deepEqual(await nodeA.server.data.accounts.ledgerTotals('overdraw'), { grant: 10, charge: -10, refund: 0 });
  assert.equal((await splitsOf('overdraw')).length, 2);
});

test('20 concurrent duplicates of one Idempotency-Key over two API nodes make one job', { skip }, async () => {
  const key = await accountWith('duplicates', 100);
  const input = await new ApiClient(nodeA.server.url, key).upload(song, 'song.wav', 'audio/wav', 'POST');
  const replies = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      new ApiClient((i % 2 === 0 ? nodeA : nodeB).server.url, key).request('POST', '/audio/splits', {
        body: { input, stemModel: '4s' },
        headers: { 'idempotency-key': 'one-order' },
      }),
    ),
  );
  assert.deepEqual(new Set(replies.map((r) => r.status)), new Set([200]), JSON.stringify(replies.map((r) => r.json)));
  assert.equal(new Set(replies.map((r) => r.json.data.id)).size, 1, 'every reply names the same job');
  assert.equal(replies.filter((r) => r.headers.get('idempotent-replayed') === 'true').length, 19);
  assert.equal((await splitsOf('duplicates')).length, 1);
  assert.deepEqual(await nodeA.server.data.accounts.ledgerTotals('duplicates'), { grant: 100, charge: -5, refund: 0 });
});

/** Starts `stemsplit worker` on the shared data dir and database, with a short lease. */
function startWorkerProcess(): { child: ChildProcess; log: () => string } {
  const child = spawnCli(['--data-dir', dataDir, '--database-url', database.url, 'worker', '--concurrency', '1', '--allow-private-urls'], {
    STEMSPLIT_JOB_LEASE_SECONDS: '3',
  });
  let log = '';
  child.stderr?.on('data', (chunk: Buffer) => (log += chunk.toString()));
  return { child, log: () => log };
}

test('two workers, one SIGKILLed mid-job: every job succeeds once charged, the ledger balances, every webhook is delivered', {
  skip,
  timeout: 300_000,
}, async () => {
  const key = await accountWith('workers', 1000);
  const longer = tempDir();
  writeSong(join(longer, 'song.wav'), 24);
  const bytes = readFileSync(join(longer, 'song.wav'));
  const hook = await receiver();
  const ids: string[] = [];
  for (let i = 0; i < 4; i++) {
    const client = new ApiClient((i % 2 === 0 ? nodeA : nodeB).server.url, key);
    const input = await client.upload(bytes, `song-${i}.wav`, 'audio/wav', 'POST');
    const created = await client.request('POST', '/audio/splits', { body: { input, stemModel: '4s', webhookUrl: hook.url } });
    assert.equal(created.status, 200, created.text);
    ids.push(created.json.data.id);
  }
  const doomed = startWorkerProcess();
  const survivor = startWorkerProcess();
  try {
    const doomedPid = String(doomed.child.pid);
    const { store } = nodeA.server.data;
    // Kill the first worker while it holds a job it has started separating (early on, so it cannot finish first).
    let taken: string | undefined;
    await until(
      async () => {
        const held = await store.all(
          store.db.selectFrom('splits').select(['id', 'leaseOwner', 'progress']).where('status', '=', 'processing').where('id', 'in', ids),
        );
        taken = held.find((row) => row.leaseOwner?.split(':')[1] === doomedPid && row.progress > 0 && row.progress < 60)?.id;
        return taken !== undefined;
      },
      120_000,
      () => `the first worker never started a job: ${doomed.log()}`,
    );
    await killHard(doomed.child);
    const orphan = await store.first(
      store.db
        .selectFrom('splits')
        .select(['status', 'leaseOwner'])
        .where('id', '=', taken ?? ''),
    );
    assert.equal(orphan?.status, 'processing', 'the job was still running when its worker died');

    await until(
      async () => (await splitsOf('workers')).every((s) => s.status === 'succeeded' || s.status === 'failed'),
      240_000,
      () => survivor.log(),
    );
    const splits = await splitsOf('workers');
    assert.deepEqual(
      splits.map((s) => s.status),
      ['succeeded', 'succeeded', 'succeeded', 'succeeded'],
      survivor.log(),
    );
    const retried = splits.find((s) => s.id === taken);
    assert.ok(retried && retried.attempts >= 2, "the killed worker's job ran again on the other");
    for (const split of splits) {
      for (const stem of ['vocals', 'drums', 'bass', 'other']) assert.ok(existsSync(join(dataDir, 'stems', split.id, `${stem}.mp3`)), `${split.id}/${stem}`);
    }
    // One charge per job, no refunds: 4 × 24 s.
    assert.deepEqual(await nodeA.server.data.accounts.ledgerTotals('workers'), { grant: 1000, charge: -96, refund: 0 });
    assert.equal(await nodeA.server.data.accounts.balance('workers'), 904);
    // One outbox row per job, each delivered; the receiver saw every job succeed.
    await until(async () => {
      const rows = await store.all(store.db.selectFrom('webhookDeliveries').select(['splitId', 'status']).where('splitId', 'in', ids));
      return rows.length === 4 && rows.every((row) => row.status === 'delivered');
    }, 60_000);
    const delivered = new Set(
      hook.received
        .map((r) => JSON.parse(r.body).data)
        .filter((d) => d.status === 'succeeded')
        .map((d) => d.id),
    );
    assert.deepEqual([...delivered].sort(), [...ids].sort());
  } finally {
    await killHard(doomed.child);
    survivor.child.kill('SIGTERM');
    await new Promise((resolve) => (survivor.child.exitCode === null ? survivor.child.once('exit', resolve) : resolve(undefined)));
    hook.server.close();
  }
});

test('an API node that loses PostgreSQL answers 503 DATABASE_UNAVAILABLE with Retry-After, and recovers', { skip }, async () => {
  const target = new URL(database.url);
  const outage = await relayTo(target);
  const viaRelay = new URL(database.url);
  viaRelay.port = String(outage.port);
  const node = await startTestServer({ dataDir: tempDir(), databaseUrl: viaRelay.toString(), concurrency: 0 });
  try {
    assert.equal((await node.request('GET', '/credits')).status, 200);
    // Cut while a transaction holds a connection between two statements: no uncaught error
    // takes the process down; the transaction fails in words.
    const { store } = node.server.data;
    await assert.rejects(
      store.transaction(async () => {
        await store.first(store.db.selectFrom('accounts').select('id'));
        await outage.cut();
        // The second statement meets the cut connection.
        await store.first(store.db.selectFrom('accounts').select('id'));
      }),
      { code: 'DATABASE_UNAVAILABLE' },
    );
    const down = await node.request('GET', '/credits');
    assert.equal(down.status, 503, down.text);
    assert.equal(down.json.error.code, 'SERVER_ERROR');
    assert.match(down.json.error.message, /PostgreSQL at postgres:\/\/postgres@127\.0\.0\.1:\d+\/\w+ is unreachable/);
    assert.equal(down.headers.get('retry-after'), '5');
    await outage.restore();
    await until(async () => (await node.request('GET', '/credits')).status === 200, 15_000);
  } finally {
    await outage.restore();
    await node.close();
    await outage.close();
  }
});

test('an unreachable database is refused in one line; a worker without PostgreSQL is refused in words', { skip }, async () => {
  await assert.rejects(
    openDataStore(tempDir(), { initialCredits: 0, idempotencyTtlSeconds: 60, databaseUrl: 'postgres://nobody:secret@127.0.0.1:1/none' }),
    (error: Error & { code?: string }) => {
      assert.equal(error.code, 'DATABASE_UNAVAILABLE');
      assert.match(error.message, /^PostgreSQL at postgres:\/\/nobody:\*\*\*@127\.0\.0\.1:1\/none is unreachable/);
      assert.doesNotMatch(error.message, /secret/);
      return true;
    },
  );
  const worker = runCli(['--data-dir', tempDir(), 'worker']);
  assert.notEqual(worker.status, 0);
  assert.match(worker.stderr.trim(), /^stemsplit: stemsplit worker needs --database-url postgres:\/\/…/);
  assert.equal(worker.stderr.trim().split('\n').length, 1);
  const badUrl = runCli(['--database-url', 'mysql://x', 'keys', 'list']);
  assert.notEqual(badUrl.status, 0);
  assert.match(badUrl.stderr, /--database-url must start with postgres:\/\//);
});
