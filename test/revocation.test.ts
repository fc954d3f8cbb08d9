/**
 * A studio's LAN (issue 48): revocation and deletion are real. A stem URL names the key it was
 * issued to and stops working the moment that key is revoked; `DELETE /v1/audio/splits/{id}`
 * removes the job's source and stems from disk and its URLs, for the owner only. Through a real
 * server on loopback over a real SQLite file; every answer checked against the served OpenAPI.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { writeSong } from './support/audio.js';
import { ApiClient } from './support/client.js';
import { createStemUrlSigner } from '../src/api/stem-urls.js';
import { urlSigningKey } from '../src/store/index.js';
import { servedOpenApi, type ServedOpenApi } from './support/openapi.js';
import { startTestServer, tempDir, type TestServer } from './support/server.js';
import { until } from './support/wait.js';

let t: TestServer;
let openapi: ServedOpenApi;
let song: Buffer;
let longSong: Buffer;

before(async () => {
  const dir = tempDir();
  writeSong(join(dir, 'song.wav'), 2.5);
  writeSong(join(dir, 'long.wav'), 90);
  song = readFileSync(join(dir, 'song.wav'));
  longSong = readFileSync(join(dir, 'long.wav'));
  t = await startTestServer();
  openapi = await servedOpenApi(t);
});
after(() => t.close());

/** A person with their own account and key (as an admin would make them), and credits. */
async function person(name: string): Promise<{ client: ApiClient; keyId: string }> {
  const created = await t.server.data.accounts.createKey(name, 'test');
  await t.server.data.accounts.grant(name, 600);
  return { client: new ApiClient(t.server.url, created.key), keyId: created.id };
}

async function splitDone(client: ApiClient, bytes = song): Promise<{ id: string; stems: Record<string, string>; sourceUrl: string }> {
  const input = await client.upload(bytes);
  const created = await client.request('POST', '/audio/splits', { body: { input, stemModel: '4s' } });
  assert.equal(created.status, 200, created.text);
  const done = await client.waitForSplit(created.json.data.id);
  assert.equal(done.json.data.status, 'succeeded', done.text);
  return done.json.data;
}

test("a revoked key's stem and source URLs answer 401 at once; the person's next key gets working URLs", { timeout: 120_000 }, async () => {
  const bob = await person('bob-revoked');
  const split = await splitDone(bob.client);
  const vocals = split.stems['vocals'] as string;
  assert.match(vocals, /[?&]keyId=key_/, 'the URL names the key it was issued to');
  assert.equal((await fetch(vocals)).status, 200);
  assert.equal((await fetch(split.sourceUrl)).status, 200);

  await t.server.data.accounts.revokeKey(bob.keyId);
  for (const url of [vocals, split.sourceUrl]) {
    const refused = await fetch(url);
    assert.equal(refused.status, 401);
    const body = await refused.json();
    openapi.assertMatches('GET', '/files/{splitId}/{stem}.{format}', 401, body);
    assert.match((body as { error: { message: string } }).error.message, /revoked/);
  }

  const again = await t.server.data.accounts.createKey('bob-revoked', 'test');
  const fresh = await new ApiClient(t.server.url, again.key).request('GET', `/audio/splits/${split.id}`);
  assert.equal(fresh.status, 200);
  assert.equal((await fetch(fresh.json.data.stems.vocals)).status, 200, "the account's new key fetches working URLs");
});

test("a URL issued to one key cannot be re-signed for another: changing keyId breaks the signature; another account's key is refused", {
  timeout: 120_000,
}, async () => {
  const carol = await person('carol-urls');
  const dave = await person('dave-urls');
  const split = await splitDone(carol.client);
  const url = new URL(split.stems['drums'] as string);
  url.searchParams.set('keyId', dave.keyId);
  assert.equal((await fetch(url)).status, 401);
  url.searchParams.delete('keyId');
  assert.equal((await fetch(url)).status, 401, 'a URL without its key (the form before keys were named) is refused');
  // Even a genuine signature (the server's own signer) for another account's key does not open carol's stems.
  const signer = createStemUrlSigner(await urlSigningKey(t.server.data.store), 3600);
  const forDave = signer.url(t.server.url, split.id, 'drums', 'mp3', Date.now(), dave.keyId);
  assert.equal((await fetch(forDave)).status, 401);
  assert.equal((await fetch(signer.url(t.server.url, split.id, 'drums', 'mp3', Date.now(), carol.keyId))).status, 200);
});

test('DELETE /v1/audio/splits/{id}: owner only; removes source and stems from disk, its URLs answer 404, GET and the list no longer show it', {
  timeout: 120_000,
}, async () => {
  const erin = await person('erin-deletes');
  const frank = await person('frank-deletes');
  const split = await splitDone(erin.client);
  const { layout } = t.server.data;
  const row = await t.server.data.splits.get(split.id);
  const stemDir = layout.absolute(layout.stemDir(split.id));
  const source = layout.absolute(row?.sourcePath ?? '');
  assert.ok(existsSync(stemDir) && existsSync(source));

  const foreign = await frank.client.request('DELETE', `/audio/splits/${split.id}`);
  assert.equal(foreign.status, 404, "another account's job is as invisible to DELETE as to GET");
  openapi.assertMatches('DELETE', '/audio/splits/{splitId}', 404, foreign.json);
  assert.ok(existsSync(stemDir) && existsSync(source));

  const deleted = await erin.client.request('DELETE', `/audio/splits/${split.id}`);
  assert.equal(deleted.status, 200, deleted.text);
  openapi.assertMatches('DELETE', '/audio/splits/{splitId}', 200, deleted.json);
  assert.deepEqual(deleted.json.data, { id: split.id, deleted: true });
  assert.equal(existsSync(stemDir), false, 'the stems are gone from disk');
  assert.equal(existsSync(source), false, 'the source is gone from disk');
  assert.equal((await fetch(split.stems['vocals'] as string)).status, 404);
  assert.equal((await fetch(split.sourceUrl)).status, 404);
  assert.equal((await erin.client.request('GET', `/audio/splits/${split.id}`)).status, 404);
  const listed = await erin.client.request('GET', '/audio/splits');
  assert.equal(
    listed.json.data.items.some((item: { id: string }) => item.id === split.id),
    false,
  );
  assert.equal((await erin.client.request('DELETE', `/audio/splits/${split.id}`)).status, 404, 'deleting twice finds nothing');
});

test('deleting a job while it runs cancels it (credits back) and leaves nothing of it on disk', { timeout: 240_000 }, async () => {
  const gina = await person('gina-deletes');
  const balance = async () => (await gina.client.request('GET', '/credits')).json.data.balance as number;
  const before = await balance();
  const created = await gina.client.request('POST', '/audio/splits', { body: { input: await gina.client.upload(longSong, 'long.wav'), stemModel: '4s' } });
  assert.equal(created.status, 200, created.text);
  const id = created.json.data.id as string;
  await gina.client.waitForSplit(id, { until: (split) => split.status !== 'queued', timeoutMs: 120_000 });
  const deleted = await gina.client.request('DELETE', `/audio/splits/${id}`);
  assert.equal(deleted.status, 200, deleted.text);
  assert.equal(await balance(), before, 'every credit it was charged came back');
  const { layout } = t.server.data;
  const stemDir = layout.absolute(layout.stemDir(id));
  const row = await t.server.data.splits.get(id);
  assert.equal(existsSync(layout.absolute(row?.sourcePath ?? '')), false);
  // The worker stops at its next chunk and removes its staging folder; nothing of the job stays.
  const left = () => readdirSync(dirname(stemDir)).filter((name) => name.startsWith(basename(stemDir)));
  await until(
    () => left().length === 0,
    30_000,
    () => `${left().join(', ')} stayed`,
  );
});
