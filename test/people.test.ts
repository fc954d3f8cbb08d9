/**
 * A studio's LAN (issue 48): people with their own access. An admin invites a member through the
 * API; the invite is exchanged once for the member's own key, and never again, nor after its time;
 * the member splits with their own credits, gets 403 on the people endpoints and 404 on others'
 * splits; revoking the member's key ends their stem URLs; an admin grants credits and deletes any
 * split. `serve` prints an invite, never a working key. Through a real server on loopback over a
 * real SQLite file (and a real `stemsplit serve` process), answers checked against the OpenAPI.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { writeSong } from './support/audio.js';
import { ApiClient } from './support/client.js';
import { killHard, spawnCli } from './support/process.js';
import { servedOpenApi, type ServedOpenApi } from './support/openapi.js';
import { startTestServer, tempDir, type TestServer } from './support/server.js';
import { until } from './support/wait.js';

let t: TestServer;
let openapi: ServedOpenApi;
let song: Buffer;
let nowMs = Date.now();

before(async () => {
  const dir = tempDir();
  writeSong(join(dir, 'song.wav'), 2.5);
  song = readFileSync(join(dir, 'song.wav'));
  t = await startTestServer({}, { clock: { now: () => nowMs } });
  openapi = await servedOpenApi(t);
});
after(() => t.close());

const anonymous = () => new ApiClient(t.server.url, null);

async function split(client: ApiClient): Promise<{ id: string; stems: Record<string, string> }> {
  const created = await client.request('POST', '/audio/splits', { body: { input: await client.upload(song), stemModel: '4s' } });
  assert.equal(created.status, 200, created.text);
  const done = await client.waitForSplit(created.json.data.id);
  assert.equal(done.json.data.status, 'succeeded', done.text);
  return done.json.data;
}

describe('an admin and a member', () => {
  let invite: string;
  let member: ApiClient;
  let memberKeyId: string;

  test('the first start made the default account the admin: its key lists the people', async () => {
    const people = await t.request('GET', '/accounts');
    assert.equal(people.status, 200, people.text);
    openapi.assertMatches('GET', '/accounts', 200, people.json);
    assert.deepEqual(
      people.json.data.items.map((p: { account: string; role: string }) => [p.account, p.role]),
      [['default', 'admin']],
    );
  });

  test("an admin invites a member with credits; the invite is exchanged once for the member's own key", async () => {
    const made = await t.request('POST', '/invites', { body: { account: 'bob', credits: 60 } });
    assert.equal(made.status, 200, made.text);
    openapi.assertMatches('POST', '/invites', 200, made.json);
    invite = made.json.data.invite;
    assert.match(invite, /^inv_stemsplit_/);
    assert.equal(made.json.data.url, `${t.server.url}/#invite=${encodeURIComponent(invite)}`);

    const exchanged = await anonymous().request('POST', '/invites/exchange', { body: { invite } });
    assert.equal(exchanged.status, 200, exchanged.text);
    openapi.assertMatches('POST', '/invites/exchange', 200, exchanged.json);
    assert.equal(exchanged.json.data.account, 'bob');
    assert.equal(exchanged.json.data.role, 'member');
    member = new ApiClient(t.server.url, exchanged.json.data.key);
    memberKeyId = exchanged.json.data.id;

    const twice = await anonymous().request('POST', '/invites/exchange', { body: { invite } });
    assert.equal(twice.status, 401);
    openapi.assertMatches('POST', '/invites/exchange', 401, twice.json);
    assert.match(twice.json.error.message, /already used/);
    assert.match(
      (await anonymous().request('POST', '/invites/exchange', { body: { invite: 'inv_stemsplit_made-up' } })).json.error.message,
      /not an invite of this server/,
    );
  });

  test('an invite past its time no longer works', async () => {
    const made = await t.request('POST', '/invites', { body: { account: 'late', expiresInSeconds: 60 } });
    assert.equal(made.status, 200, made.text);
    nowMs += 61_000;
    const late = await anonymous().request('POST', '/invites/exchange', { body: { invite: made.json.data.invite } });
    assert.equal(late.status, 401);
    assert.match(late.json.error.message, /expired/);
  });

  test("the member splits with their own credits; the admin's balance is untouched", { timeout: 120_000 }, async () => {
    const adminBefore = (await t.request('GET', '/credits')).json.data.balance;
    assert.equal((await member.request('GET', '/credits')).json.data.balance, 60);
    await split(member);
    assert.equal((await member.request('GET', '/credits')).json.data.balance, 57);
    assert.equal((await t.request('GET', '/credits')).json.data.balance, adminBefore);
  });

  test("a member's key gets 403 on the people endpoints and 404 on others' splits", { timeout: 120_000 }, async () => {
    const calls: Array<[string, string, string, unknown?]> = [
      ['GET', '/accounts', '/accounts'],
      ['GET', '/keys', '/keys'],
      ['POST', '/keys', '/keys', { account: 'bob' }],
      ['DELETE', `/keys/${memberKeyId}`, '/keys/{keyId}'],
      ['POST', '/credits/grants', '/credits/grants', { account: 'bob', seconds: 3600 }],
      ['POST', '/invites', '/invites', { account: 'mallory' }],
    ];
    for (const [method, path, documented, body] of calls) {
      const refused = await member.request(method, path, body === undefined ? {} : { body });
      assert.equal(refused.status, 403, `${method} ${path}: ${refused.text}`);
      assert.equal(refused.json.error.code, 'FORBIDDEN');
      openapi.assertMatches(method, documented, 403, refused.json);
    }
    const admins = await split(t.client);
    assert.equal((await member.request('GET', `/audio/splits/${admins.id}`)).status, 404);
    assert.equal((await member.request('DELETE', `/audio/splits/${admins.id}`)).status, 404);
  });

  test("the admin sees the member's use, grants credits, makes a key; revoking the member ends their key and stem URLs at once", {
    timeout: 120_000,
  }, async () => {
    const bobs = await split(member);
    assert.equal((await fetch(bobs.stems['vocals'] as string)).status, 200);

    const people = (await t.request('GET', '/accounts')).json.data.items as Array<{
      account: string;
      balance: number;
      lastUsedAt: string | null;
      activeKeys: number;
    }>;
    const bob = people.find((p) => p.account === 'bob');
    assert.equal(bob?.balance, 54);
    assert.equal(bob?.activeKeys, 1);
    assert.ok(bob?.lastUsedAt, "the member's last use is shown");

    const granted = await t.request('POST', '/credits/grants', { body: { account: 'bob', seconds: 100 } });
    assert.equal(granted.status, 200, granted.text);
    openapi.assertMatches('POST', '/credits/grants', 200, granted.json);
    assert.deepEqual(granted.json.data, { account: 'bob', balance: 154, unit: 'seconds' });
    assert.equal((await t.request('POST', '/credits/grants', { body: { account: 'nobody', seconds: 1 } })).status, 404);

    const made = await t.request('POST', '/keys', { body: { account: 'carol', name: 'laptop' } });
    assert.equal(made.status, 200, made.text);
    openapi.assertMatches('POST', '/keys', 200, made.json);
    assert.equal(made.json.data.role, 'member');
    assert.equal((await new ApiClient(t.server.url, made.json.data.key).request('GET', '/credits')).status, 200);

    const keys = await t.request('GET', '/keys');
    openapi.assertMatches('GET', '/keys', 200, keys.json);
    assert.equal(JSON.stringify(keys.json).includes(made.json.data.key), false, 'the list never shows a key');
    assert.ok(keys.json.data.items.some((k: { id: string; account: string }) => k.id === memberKeyId && k.account === 'bob'));

    const revoked = await t.request('DELETE', `/keys/${memberKeyId}`);
    assert.equal(revoked.status, 200, revoked.text);
    openapi.assertMatches('DELETE', '/keys/{keyId}', 200, revoked.json);
    assert.ok(revoked.json.data.revokedAt);
    assert.equal((await fetch(bobs.stems['vocals'] as string)).status, 401, "the member's stem URLs stop at once");
    const refused = await member.request('GET', '/credits');
    assert.equal(refused.status, 401);
    assert.equal(refused.json.error.message, 'this API key was revoked');

    const deleted = await t.request('DELETE', `/audio/splits/${bobs.id}`);
    assert.equal(deleted.status, 200, "an admin may delete anyone's split");
  });
});

test('serve prints a one-time invite, never a working key; the invite makes the browser an admin key, once', { timeout: 90_000 }, async () => {
  const dataDir = tempDir();
  const child = spawnCli(['--data-dir', dataDir, 'serve', '--port', '0']);
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  try {
    await until(
      () => /^Open \S+#invite=\S+ /m.test(output) && /one-time invite/.test(output),
      60_000,
      () => output,
    );
    const link = new URL(/^Open (\S+) /m.exec(output)?.[1] ?? '');
    const origin = link.origin;
    assert.equal(/sk_stemsplit_/.test(output), false, `no key in serve's output:\n${output}`);
    const invite = decodeURIComponent(link.hash.slice('#invite='.length));
    const client = new ApiClient(origin, null);
    const exchanged = await client.request('POST', '/invites/exchange', { body: { invite } });
    assert.equal(exchanged.status, 200, exchanged.text);
    assert.equal(exchanged.json.data.role, 'admin');
    assert.equal((await new ApiClient(origin, exchanged.json.data.key).request('GET', '/keys')).status, 200);
    assert.equal((await client.request('POST', '/invites/exchange', { body: { invite } })).status, 401);
    await until(
      () => / GET \/v1\/keys 200 /.test(output),
      10_000,
      () => output,
    );
    assert.equal(/sk_stemsplit_/.test(output), false, `the access log holds no key:\n${output}`);
    assert.equal(output.split(invite).length - 1, 1, 'the invite is in the link serve printed, and nowhere else');
  } finally {
    await killHard(child);
  }
});
