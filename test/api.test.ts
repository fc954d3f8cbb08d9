/**
 * The v1 API end to end: a real server on a loopback port, a real SQLite file, real audio
 * through the bundled ONNX model. Every response is checked against the OpenAPI document.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { decodedSamples, writeSong } from './support/audio.js';
import { ApiClient } from './support/client.js';
import { servedOpenApi, type ServedOpenApi } from './support/openapi.js';
import { startTestServer, tempDir, uploadFile, waitForSplit, type TestServer } from './support/server.js';

const SONG_SECONDS = 4.3;
let t: TestServer;
/** The description this server serves, which its answers must match. */
let openapi: ServedOpenApi;
let song: Buffer;
/** What the server logged, as `serve` prints it on stderr. */
const logged: string[] = [];

before(async () => {
  const dir = tempDir();
  writeSong(join(dir, 'song.wav'), SONG_SECONDS);
  song = readFileSync(join(dir, 'song.wav'));
  t = await startTestServer({}, { log: (line) => logged.push(line) });
  openapi = await servedOpenApi(t);
});
after(() => t.close());

function expectError(response: { status: number; json: { success: boolean; error: { code: string; message: string } } }, status: number, code: string) {
  assert.equal(response.status, status, JSON.stringify(response.json));
  assert.equal(response.json.success, false);
  assert.equal(response.json.error.code, code);
  assert.ok(response.json.error.message.length > 0);
}

describe('authentication', () => {
  test('missing, malformed, unknown and revoked keys get 401 UNAUTHORIZED', async () => {
    for (const path of ['/credits', '/audio/splits/split_01J00000000000000000000000']) {
      const missing = await t.request('GET', path, { key: null });
      expectError(missing, 401, 'UNAUTHORIZED');
      openapi.assertMatches('GET', path.startsWith('/credits') ? '/credits' : '/audio/splits/{splitId}', 401, missing.json);
      expectError(await t.request('GET', path, { key: 'sk_stemsplit_wrong' }), 401, 'UNAUTHORIZED');
      expectError(await t.request('GET', path, { headers: { authorization: 'Basic abc' }, key: null }), 401, 'UNAUTHORIZED');
    }
    const created = await t.server.data.accounts.createKey('default', 'to-revoke');
    assert.equal((await t.request('GET', '/credits', { key: created.key })).status, 200);
    await t.server.data.accounts.revokeKey(created.id);
    expectError(await t.request('GET', '/credits', { key: created.key }), 401, 'UNAUTHORIZED');
  });

  test('keys are stored only as SHA-256 hashes', async () => {
    const rows = await t.server.data.accounts.listKeys();
    assert.ok(rows.length > 0);
    const { store } = t.server.data;
    if (store.dialect === 'sqlite') {
      const dbBytes = readFileSync(join(t.dataDir, 'stemsplit.sqlite'));
      assert.equal(dbBytes.includes(Buffer.from(t.key)), false, 'the raw key must not be in the database file');
    } else {
      const keyRows = await store.all(store.db.selectFrom('apiKeys').selectAll());
      assert.ok(keyRows.length > 0);
      assert.equal(JSON.stringify(keyRows).includes(t.key), false, 'the raw key must not be in the database');
    }
  });
});

describe('credits', () => {
  test('a fresh data dir has the documented initial grant of 3600 seconds', async () => {
    const response = await t.request('GET', '/credits');
    assert.equal(response.status, 200);
    openapi.assertMatches('GET', '/credits', 200, response.json);
    assert.equal(response.json.data.unit, 'seconds');
    assert.ok(Number.isInteger(response.json.data.balance));
  });
});

describe('uploads and splits', () => {
  test('reserve, upload like the SDKs, split 4s: 4 MP3 stems as long as the source, charged ceil(seconds)', async () => {
    const before = (await t.request('GET', '/credits')).json.data.balance;
    const reserved = await t.request('POST', '/audio/uploads', { body: { filename: 'song.wav', contentType: 'audio/wav', contentLength: song.length } });
    assert.equal(reserved.status, 200);
    openapi.assertMatches('POST', '/audio/uploads', 200, reserved.json);
    assert.deepEqual(Object.keys(reserved.json.data), ['uploadId', 'uploadUrl', 'expiresAt', 'uploadHeaders']);
    const { uploadUrl, uploadHeaders, uploadId } = reserved.json.data;
    const sent = await fetch(uploadUrl, { method: 'POST', headers: { ...uploadHeaders, 'content-type': 'audio/wav' }, body: song });
    const sentBody = (await sent.json()) as { data: { url: string; key: string } };
    assert.equal(sent.status, 200);
    openapi.assertMatches('POST', '/uploads/{uploadId}', 200, sentBody);

    const created = await t.request('POST', '/audio/splits', {
      body: { input: { type: 'uploaded_file', uploadId, fileUrl: sentBody.data.url, storageKey: sentBody.data.key }, stemModel: '4s' },
    });
    assert.equal(created.status, 200, created.text);
    openapi.assertMatches('POST', '/audio/splits', 200, created.json);
    assert.equal(created.json.data.status, 'queued');
    assert.equal(created.json.data.creditsUsed, Math.ceil(SONG_SECONDS));
    assert.match(created.json.data.id, /^split_[0-9A-Z]{26}$/);
    assert.equal((await t.request('GET', '/credits')).json.data.balance, before - Math.ceil(SONG_SECONDS));

    const done = await waitForSplit(t, created.json.data.id);
    openapi.assertMatches('GET', '/audio/splits/{splitId}', 200, done.json);
    const split = done.json.data;
    assert.equal(split.status, 'succeeded', JSON.stringify(split.error));
    assert.equal(split.progress, 100);
    assert.equal(split.filename, 'song.wav');
    assert.equal(split.durationSeconds, Math.ceil(SONG_SECONDS));
    assert.equal(split.error, null);
    assert.deepEqual(Object.keys(split.stems).sort(), ['bass', 'drums', 'other', 'vocals']);
    // Scalars first, nested objects last: naive SDK parsers rely on it.
    assert.deepEqual(Object.keys(split).slice(-2), ['stems', 'error']);
    const charge = (await t.server.data.accounts.statement('default', 50)).find((entry) => entry.splitId === split.id);
    assert.equal(charge?.kind, 'charge');
    assert.equal(charge?.amount, -Math.ceil(SONG_SECONDS), 'the statement shows the charge with its job');

    const dir = tempDir();
    for (const [stem, url] of Object.entries(split.stems as Record<string, string>)) {
      const response = await fetch(url);
      assert.equal(response.status, 200, `${stem}: ${response.status}`);
      assert.equal(response.headers.get('content-type'), 'audio/mpeg');
      const file = join(dir, `${stem}.mp3`);
      writeFileSync(file, Buffer.from(await response.arrayBuffer()));
      assert.equal(decodedSamples(file), Math.round(SONG_SECONDS * 44100), `${stem} must be exactly as long as the source`);
    }
  });

  test('6s gives six stems and says which model ran', async () => {
    const input = await uploadFile(t, song);
    const created = await t.request('POST', '/audio/splits', { body: { input, stemModel: '6s' } });
    assert.equal(created.status, 200, created.text);
    const split = (await waitForSplit(t, created.json.data.id)).json.data;
    assert.equal(split.status, 'succeeded');
    assert.deepEqual(Object.keys(split.stems).sort(), ['bass', 'drums', 'guitar', 'other', 'piano', 'vocals']);
    assert.equal(typeof split.model, 'string');
    assert.ok(split.model.length > 0);
    const line = new RegExp(`^split ${split.id} succeeded: ${SONG_SECONDS.toFixed(1)} s of audio with ${split.model} on ${split.device} in \\d+\\.\\d s$`);
    assert.ok(
      logged.some((l) => line.test(l)),
      `the server logs each finished job:\n${logged.join('\n')}`,
    );
  });

  test('stemModel defaults to 6s; stem URLs are issued afresh, and forged or expired ones are refused', async () => {
    const input = await uploadFile(t, song);
    const created = await t.request('POST', '/audio/splits', { body: { input } });
    const split = (await waitForSplit(t, created.json.data.id)).json.data;
    assert.equal(split.stemModel, '6s');
    const url = new URL(split.stems.vocals);
    const forged = new URL(url);
    forged.searchParams.set('signature', '0'.repeat(64));
    const forgedResponse = await fetch(forged);
    assert.equal(forgedResponse.status, 401);
    assert.equal(((await forgedResponse.json()) as { error: { code: string } }).error.code, 'UNAUTHORIZED');
    const expired = new URL(url);
    expired.searchParams.set('expires', '1000');
    assert.equal((await fetch(expired)).status, 401);
    const otherStem = new URL(url.toString().replace('/vocals.mp3', '/drums.mp3'));
    assert.equal((await fetch(otherStem)).status, 401, 'a signature is bound to its stem');
    const ranged = await fetch(url, { headers: { range: 'bytes=0-99' } });
    assert.equal(ranged.status, 206);
    assert.equal((await ranged.arrayBuffer()).byteLength, 100);
  });

  test('the upload endpoint enforces token and contentLength and never keeps a partial file', async () => {
    const reserved = await t.request('POST', '/audio/uploads', { body: { filename: 'a.wav', contentType: 'audio/wav', contentLength: song.length } });
    const { uploadUrl, uploadHeaders, uploadId } = reserved.json.data;
    const wrongToken = await fetch(uploadUrl, { method: 'PUT', headers: { 'x-stemsplit-upload-token': 'nope' }, body: song });
    assert.equal(wrongToken.status, 401);
    const short = await fetch(uploadUrl, { method: 'PUT', headers: uploadHeaders, body: song.subarray(0, 100) });
    assert.equal(short.status, 422);
    // The server answers 422 as soon as it sees the length is wrong; a client still sending
    // may see the connection close instead. Either way nothing is kept (the next upload works).
    const long = await fetch(uploadUrl, { method: 'PUT', headers: uploadHeaders, body: Buffer.concat([song, song]) }).catch((e: Error) => e);
    if (!(long instanceof Error)) assert.equal(long.status, 422);
    else assert.match(String(long.cause ?? long), /other side closed|reset|EPIPE/i);
    const splitBeforeUpload = await t.request('POST', '/audio/splits', {
      body: { input: { type: 'uploaded_file', uploadId, fileUrl: uploadUrl, storageKey: `uploads/${uploadId}` } },
    });
    expectError(splitBeforeUpload, 422, 'VALIDATION_ERROR');
    const ok = await fetch(uploadUrl, { method: 'PUT', headers: uploadHeaders, body: song });
    assert.equal(ok.status, 200);
    const again = await fetch(uploadUrl, { method: 'PUT', headers: uploadHeaders, body: song });
    assert.equal(again.status, 422);
    assert.equal((await fetch(uploadUrl.replace(uploadId, 'upl_01J00000000000000000000000'), { method: 'PUT', body: song })).status, 404);
  });

  test('mismatched, used, foreign and expired reservations get 422', async () => {
    const input = await uploadFile(t, song);
    expectError(await t.request('POST', '/audio/splits', { body: { input: { ...input, storageKey: 'uploads/other' } } }), 422, 'VALIDATION_ERROR');
    expectError(
      await t.request('POST', '/audio/splits', { body: { input: { ...input, fileUrl: `${t.base}/uploads/upl_01J00000000000000000000000` } } }),
      422,
      'VALIDATION_ERROR',
    );
    const first = await t.request('POST', '/audio/splits', { body: { input } });
    assert.equal(first.status, 200);
    const reuse = await t.request('POST', '/audio/splits', { body: { input } });
    expectError(reuse, 422, 'VALIDATION_ERROR');
    openapi.assertMatches('POST', '/audio/splits', 422, reuse.json);

    const foreignKey = (await t.server.data.accounts.createKey('someone-else', 'foreign')).key;
    await t.server.data.accounts.grant('someone-else', 100);
    const mine = await uploadFile(t, song);
    expectError(await t.request('POST', '/audio/splits', { body: { input: mine }, key: foreignKey }), 422, 'VALIDATION_ERROR');

    // Expire the reservation by moving its deadline into the past, as the clock would.
    await t.server.data.store.run(t.server.data.store.db.updateTable('uploads').set({ expiresAtMs: 0 }).where('id', '=', mine.uploadId));
    expectError(await t.request('POST', '/audio/splits', { body: { input: mine } }), 422, 'VALIDATION_ERROR');
  });

  test('undecodable audio gets 422 and costs nothing', async () => {
    const balance = (await t.request('GET', '/credits')).json.data.balance;
    const input = await uploadFile(t, Buffer.from('this is not audio at all, just text pretending to be a wav file'));
    const response = await t.request('POST', '/audio/splits', { body: { input } });
    expectError(response, 422, 'VALIDATION_ERROR');
    assert.match(response.json.error.message, /decod/i);
    assert.equal((await t.request('GET', '/credits')).json.data.balance, balance);
  });

  test("audio longer than the server's limit is 422, costs nothing, and the upload can still be used", async () => {
    const limited = await startTestServer({ maxMinutes: 3 / 60 });
    try {
      const input = await uploadFile(limited, song);
      const refused = await limited.request('POST', '/audio/splits', { body: { input, stemModel: '4s' } });
      expectError(refused, 422, 'VALIDATION_ERROR');
      assert.equal(refused.json.error.message, 'the source lasts 0 min 4 s; this server splits at most 0 min 3 s of audio per job');
      assert.equal((await limited.request('GET', '/credits')).json.data.balance, 3600);
    } finally {
      await limited.close();
    }
  });

  test('402 INSUFFICIENT_CREDITS when the balance is short', async () => {
    const poor = (await t.server.data.accounts.createKey('poor', 'poor')).key;
    await t.server.data.accounts.grant('poor', 2);
    const input = await new ApiClient(t.server.url, poor).upload(song, 's.wav', 'audio/wav', 'POST');
    const response = await t.request('POST', '/audio/splits', { body: { input }, key: poor });
    expectError(response, 402, 'INSUFFICIENT_CREDITS');
    openapi.assertMatches('POST', '/audio/splits', 402, response.json);
    assert.equal((await t.request('GET', '/credits', { key: poor })).json.data.balance, 2);
  });

  test("404 NOT_FOUND for unknown jobs, other accounts' jobs and unknown endpoints", async () => {
    const missing = await t.request('GET', '/audio/splits/split_01J00000000000000000000000');
    expectError(missing, 404, 'NOT_FOUND');
    openapi.assertMatches('GET', '/audio/splits/{splitId}', 404, missing.json);
    expectError(await t.request('GET', '/audio/splits/..%2F..%2Fetc%2Fpasswd'), 404, 'NOT_FOUND');
    const input = await uploadFile(t, song);
    const created = await t.request('POST', '/audio/splits', { body: { input } });
    const stranger = (await t.server.data.accounts.createKey('stranger', 's')).key;
    expectError(await t.request('GET', `/audio/splits/${created.json.data.id}`, { key: stranger }), 404, 'NOT_FOUND');
    const unknown = await fetch(`${t.server.url}/nothing-here`);
    assert.equal(unknown.status, 404);
    assert.equal(((await unknown.json()) as { error: { code: string } }).error.code, 'NOT_FOUND');
  });

  test("GET /audio/splits pages through the key's jobs, newest first", async () => {
    const first = await t.request('GET', '/audio/splits?limit=2');
    assert.equal(first.status, 200);
    openapi.assertMatches('GET', '/audio/splits', 200, first.json);
    assert.equal(first.json.data.items.length, 2);
    assert.ok(first.json.data.items[0].id > first.json.data.items[1].id);
    const second = await t.request('GET', `/audio/splits?limit=2&cursor=${first.json.data.nextCursor}`);
    assert.ok(second.json.data.items.every((s: { id: string }) => s.id < first.json.data.items[1].id));
    expectError(await t.request('GET', '/audio/splits?limit=0'), 422, 'VALIDATION_ERROR');
  });
});

describe('bad requests get 422 VALIDATION_ERROR, never 500', () => {
  const bodies: Array<[string, unknown]> = [
    ['malformed JSON', '{"input": '],
    ['an array', '[]'],
    ['a string', '"hello"'],
    ['no input', {}],
    ['input of the wrong type', { input: 'http://x' }],
    ['an unknown input type', { input: { type: 'ftp', url: 'x' } }],
    ['a URL that is a number', { input: { type: 'direct_url', url: 42 } }],
    ['a non-http URL', { input: { type: 'direct_url', url: 'file:///etc/passwd' } }],
    ['a bad stemModel', { input: { type: 'direct_url', url: 'http://example.test/a.mp3' }, stemModel: '5s' }],
    ['a bad outputFormat', { input: { type: 'direct_url', url: 'http://example.test/a.mp3' }, outputFormat: 'ogg' }],
    ['a bad webhookUrl', { input: { type: 'direct_url', url: 'http://example.test/a.mp3' }, webhookUrl: 'javascript:alert(1)' }],
    ['an unknown field', { input: { type: 'direct_url', url: 'http://example.test/a.mp3' }, colour: 'red' }],
    ['an oversized body', { input: { type: 'direct_url', url: 'http://example.test/a.mp3' }, webhookUrl: `http://x.test/${'a'.repeat(100_000)}` }],
  ];
  for (const [name, body] of bodies) {
    test(`POST /audio/splits with ${name}`, async () => {
      const response = await t.request('POST', '/audio/splits', { body });
      expectError(response, 422, 'VALIDATION_ERROR');
      openapi.assertMatches('POST', '/audio/splits', 422, response.json);
    });
  }
  const uploads: Array<[string, unknown]> = [
    ['no fields', {}],
    ['a bad content type', { filename: 'a.ogg', contentType: 'audio/ogg', contentLength: 10 }],
    ['a zero length', { filename: 'a.wav', contentType: 'audio/wav', contentLength: 0 }],
    ['a length over 50 MiB', { filename: 'a.wav', contentType: 'audio/wav', contentLength: 52428801 }],
    ['a fractional length', { filename: 'a.wav', contentType: 'audio/wav', contentLength: 1.5 }],
    ['a string length', { filename: 'a.wav', contentType: 'audio/wav', contentLength: '10' }],
    ['a filename that is not a string', { filename: ['a'], contentType: 'audio/wav', contentLength: 10 }],
  ];
  for (const [name, body] of uploads) {
    test(`POST /audio/uploads with ${name}`, async () => {
      const response = await t.request('POST', '/audio/uploads', { body });
      expectError(response, 422, 'VALIDATION_ERROR');
      openapi.assertMatches('POST', '/audio/uploads', 422, response.json);
    });
  }
  test('an Idempotency-Key over 128 characters', async () => {
    const response = await t.request('POST', '/audio/splits', { body: {}, headers: { 'idempotency-key': 'k'.repeat(129) } });
    expectError(response, 422, 'VALIDATION_ERROR');
  });
  test('path traversal in a file name is reduced to its last segment', async () => {
    const reserved = await t.request('POST', '/audio/uploads', { body: { filename: '../../etc/passwd.wav', contentType: 'audio/wav', contentLength: 10 } });
    assert.equal(reserved.status, 200);
    const upload = await t.server.data.uploads.get(reserved.json.data.uploadId);
    assert.equal(upload?.filename, 'passwd.wav');
  });
});

test('GET /v1/openapi.json is OpenAPI 3.1, version 0.1.0', async () => {
  const response = await fetch(`${t.base}/openapi.json`);
  const doc = (await response.json()) as { openapi: string; info: { version: string } };
  assert.equal(doc.openapi, '3.1.0');
  assert.equal(doc.info.version, '0.1.0');
});
