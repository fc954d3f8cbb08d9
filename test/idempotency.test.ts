/** Idempotency-Key, the rate limit and the credit balance under concurrent creates. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { writeSong } from './support/audio.js';
import { ApiClient } from './support/client.js';
import { IdempotencyGate } from '../src/api/idempotency.js';
import { openDataStore } from '../src/store/index.js';
import { servedOpenApi, type ServedOpenApi } from './support/openapi.js';
import { startTestServer, tempDir, uploadFile, waitForSplit, type TestServer } from './support/server.js';

let t: TestServer;
/** The description this server serves, which its answers must match. */
let openapi: ServedOpenApi;
let song: Buffer;

before(async () => {
  const dir = tempDir();
  writeSong(join(dir, 'song.wav'), 2.5);
  song = readFileSync(join(dir, 'song.wav'));
  t = await startTestServer({ rateLimitPerMinute: 1000 });
  openapi = await servedOpenApi(t);
});
after(() => t.close());

async function countSplits(): Promise<number> {
  const row = await t.server.data.store.first(t.server.data.store.db.selectFrom('splits').select((eb) => eb.fn.countAll<number>().as('n')));
  return Number(row?.n ?? 0);
}

test('the same key and body replay the first response: one job, one charge', async () => {
  const input = await uploadFile(t, song);
  const balance = (await t.request('GET', '/credits')).json.data.balance;
  const before = await countSplits();
  const headers = { 'idempotency-key': 'order-1' };
  const first = await t.request('POST', '/audio/splits', { body: { input, stemModel: '4s' }, headers });
  assert.equal(first.status, 200, first.text);
  // Same meaning, other key order and spacing: still the same request.
  const second = await t.request('POST', '/audio/splits', { body: `{ "stemModel": "4s", "input": ${JSON.stringify(input)} }`, headers });
  assert.equal(second.status, 200);
  assert.equal(second.text, first.text);
  assert.equal(second.headers.get('idempotent-replayed'), 'true');
  assert.equal(await countSplits(), before + 1);
  assert.equal((await t.request('GET', '/credits')).json.data.balance, balance - 3);
  await waitForSplit(t, first.json.data.id);
});

test('the same key with another body gets 422 naming the key', async () => {
  const input = await uploadFile(t, song);
  const headers = { 'idempotency-key': 'order-2' };
  assert.equal((await t.request('POST', '/audio/splits', { body: { input, stemModel: '4s' }, headers })).status, 200);
  const other = await t.request('POST', '/audio/splits', { body: { input, stemModel: '6s' }, headers });
  assert.equal(other.status, 422);
  assert.equal(other.json.error.code, 'VALIDATION_ERROR');
  assert.match(other.json.error.message, /order-2/);
});

test('keys are per API key: another key may use the same Idempotency-Key', async () => {
  const otherKey = (await t.server.data.accounts.createKey('default', 'second')).key;
  const a = await t.request('POST', '/audio/splits', { body: { input: await uploadFile(t, song) }, headers: { 'idempotency-key': 'shared' } });
  const b = await t.request('POST', '/audio/splits', {
    body: { input: await uploadFile(t, song) },
    headers: { 'idempotency-key': 'shared' },
    key: otherKey,
  });
  assert.equal(a.status, 200);
  assert.equal(b.status, 200, b.text);
  assert.notEqual(a.json.data.id, b.json.data.id);
});

test('20 concurrent duplicates make exactly one job and one charge', async () => {
  const input = await uploadFile(t, song);
  const balance = (await t.request('GET', '/credits')).json.data.balance;
  const before = await countSplits();
  const responses = await Promise.all(
    Array.from({ length: 20 }, () => t.request('POST', '/audio/splits', { body: { input }, headers: { 'idempotency-key': 'burst' } })),
  );
  for (const response of responses) assert.equal(response.status, 200, response.text);
  assert.equal(new Set(responses.map((r) => r.json.data.id)).size, 1);
  assert.equal(await countSplits(), before + 1);
  assert.equal((await t.request('GET', '/credits')).json.data.balance, balance - 3);
});

test('a failed request (402) is remembered like a success and replayed', async () => {
  const poorKey = (await t.server.data.accounts.createKey('idem-poor', 'p')).key;
  const body = { input: await new ApiClient(t.server.url, poorKey).upload(song, 's.wav') };
  const first = await t.request('POST', '/audio/splits', { body, key: poorKey, headers: { 'idempotency-key': 'p1' } });
  assert.equal(first.status, 402);
  await t.server.data.accounts.grant('idem-poor', 100);
  const replay = await t.request('POST', '/audio/splits', { body, key: poorKey, headers: { 'idempotency-key': 'p1' } });
  assert.equal(replay.status, 402, 'the stored answer is replayed, as Stripe does');
  const fresh = await t.request('POST', '/audio/splits', { body, key: poorKey, headers: { 'idempotency-key': 'p2' } });
  assert.equal(fresh.status, 200);
});

test('credits never go negative under 20 concurrent creates', async () => {
  const key = (await t.server.data.accounts.createKey('race', 'race')).key;
  await t.server.data.accounts.grant('race', 20); // enough for 6 jobs of 3 s
  const client = new ApiClient(t.server.url, key);
  const inputs = [];
  for (let i = 0; i < 20; i++) inputs.push(await client.upload(song, `s${i}.wav`));
  const responses = await Promise.all(inputs.map((input) => t.request('POST', '/audio/splits', { body: { input }, key })));
  const created = responses.filter((r) => r.status === 200);
  const refused = responses.filter((r) => r.status === 402);
  assert.equal(created.length, 6);
  assert.equal(refused.length, 14);
  for (const r of refused) openapi.assertMatches('POST', '/audio/splits', 402, r.json);
  const balance = (await t.request('GET', '/credits', { key })).json.data.balance;
  assert.equal(balance, 2);
  const totals = await t.server.data.accounts.ledgerTotals('race');
  assert.equal(totals.grant + totals.charge + totals.refund, balance, 'balance = grants − charges + refunds');
});

test('the rate limit counts every request, valid or not, and answers 429 with its headers', async () => {
  const limited = await startTestServer({ rateLimitPerMinute: 3 });
  try {
    const statuses: number[] = [];
    let last;
    for (let i = 0; i < 5; i++) {
      last = await limited.request('POST', '/audio/splits', { body: '{bad json' });
      statuses.push(last.status);
      if (i === 0) {
        assert.equal(last.headers.get('ratelimit-limit'), '3');
        assert.equal(last.headers.get('ratelimit-remaining'), '2');
      }
    }
    assert.deepEqual(statuses, [422, 422, 422, 429, 429]);
    assert.ok(last);
    assert.equal(last.json.error.code, 'RATE_LIMITED');
    openapi.assertMatches('POST', '/audio/splits', 429, last.json);
    const retryAfter = Number(last.headers.get('retry-after'));
    assert.ok(retryAfter >= 1 && retryAfter <= 60);
    assert.equal(last.headers.get('ratelimit-remaining'), '0');
    assert.ok(Number(last.headers.get('ratelimit-reset')) >= 1);
    // Other keys have their own budget; other endpoints are not limited.
    const other = (await limited.server.data.accounts.createKey('default', 'other')).key;
    assert.equal((await limited.request('POST', '/audio/splits', { body: '{bad json', key: other })).status, 422);
    assert.equal((await limited.request('GET', '/credits')).status, 200);
  } finally {
    await limited.close();
  }
});

test('a process killed right after the work committed its response leaves that response for the retry', async () => {
  const dir = tempDir('stemsplit-idem-crash-');
  const store = join(process.cwd(), 'src', 'store', 'index.ts');
  const gate = join(process.cwd(), 'src', 'api', 'idempotency.ts');
  // The first process stores the response inside the work's own transaction (as the split's creation does), then dies.
  const crashing = `
    import { openDataStore } from ${JSON.stringify(store)};
    import { IdempotencyGate } from ${JSON.stringify(gate)};
    const data = await openDataStore(${JSON.stringify(dir)}, { initialCredits: 0, idempotencyTtlSeconds: 86400 });
    await new IdempotencyGate(data.idempotency).run('key_a', 'job-1', 'hash-1', async (remember) => {
      await data.store.transaction(() => remember({ status: 200, body: '{"id":"split_1"}' }));
      process.kill(process.pid, 'SIGKILL');
      return { status: 500, body: 'never reached' };
    });`;
  const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', crashing], { encoding: 'utf8' });
  assert.equal(child.signal, 'SIGKILL', child.stderr);

  const data = await openDataStore(dir, { initialCredits: 0, idempotencyTtlSeconds: 86400 });
  try {
    const retry = await new IdempotencyGate(data.idempotency).run('key_a', 'job-1', 'hash-1', async () => {
      throw new Error('the retry ran the work again');
    });
    assert.deepEqual(retry, { status: 200, body: '{"id":"split_1"}', replayed: true });
  } finally {
    await data.close();
  }
});
