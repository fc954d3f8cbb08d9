/**
 * A studio's LAN (issue 48): what keys say about themselves. A key's last use is kept, written at
 * most once a minute, and `keys list` shows it; a refused key is told apart: "revoked" only when it
 * was a key of this server, "not an API key of this server" otherwise. Through a real server on
 * loopback over a real SQLite file, and the CLI beside it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runCli } from './support/process.js';
import { startTestServer, tempDir } from './support/server.js';

test('lastUsedAt: set on first use, written at most once a minute, shown by keys list', async () => {
  let nowMs = Date.parse('2026-11-29T10:00:00.000Z');
  const dataDir = tempDir();
  const t = await startTestServer({ dataDir }, { clock: { now: () => nowMs } });
  try {
    const lastUsed = async () => (await t.server.data.accounts.listKeys()).find((key) => key.name === 'test')?.lastUsedAt;
    assert.equal(await lastUsed(), null, 'not used yet');
    assert.equal((await t.request('GET', '/credits')).status, 200);
    assert.equal(await lastUsed(), '2026-11-29T10:00:00.000Z');
    nowMs += 59_000;
    assert.equal((await t.request('GET', '/credits')).status, 200);
    assert.equal(await lastUsed(), '2026-11-29T10:00:00.000Z', 'within the minute: no write');
    nowMs += 2_000;
    assert.equal((await t.request('GET', '/credits')).status, 200);
    assert.equal(await lastUsed(), '2026-11-29T10:01:01.000Z');

    const listed = runCli(['--data-dir', dataDir, 'keys', 'list']);
    assert.equal(listed.status, 0, listed.stderr);
    assert.match(listed.stdout, /^key_\w+ +default +test +\S+ +last used 2026-11-29T10:01Z +active$/m);
    const json = JSON.parse(runCli(['--data-dir', dataDir, 'keys', 'list', '--json']).stdout) as Array<{ name: string; lastUsedAt: string | null }>;
    assert.equal(json.find((key) => key.name === 'test')?.lastUsedAt, '2026-11-29T10:01:01.000Z');
  } finally {
    await t.close();
  }
});

test('a refused key: "revoked" only for a key this server made and revoked; a key it never made is "not an API key of this server"', async () => {
  const t = await startTestServer();
  try {
    const made = await t.server.data.accounts.createKey('default', 'to-revoke');
    await t.server.data.accounts.revokeKey(made.id);
    const revoked = await t.request('GET', '/credits', { key: made.key });
    assert.equal(revoked.status, 401);
    assert.equal(revoked.json.error.message, 'this API key was revoked');
    for (const never of ['sk_stemsplit_never-made-here', 'not-even-a-key']) {
      const unknown = await t.request('GET', '/credits', { key: never });
      assert.equal(unknown.status, 401);
      assert.equal(unknown.json.error.message, 'this is not an API key of this server');
    }
  } finally {
    await t.close();
  }
});
