/** The SQLite store and the retention task, on real database files. */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import BetterSqlite3 from 'better-sqlite3';
import { cleanupOnce } from '../src/jobs/cleanup.js';
import { openDataStore } from '../src/store/index.js';
import { migrationNames } from '../src/store/migrations.js';
import { writeSong } from './support/audio.js';
import { startTestServer, tempDir, uploadFile, waitForSplit } from './support/server.js';

test('the database is in WAL mode, migrations run once, and reopening keeps the data', async () => {
  const dir = tempDir();
  const first = await openDataStore(dir, { initialCredits: 3600, idempotencyTtlSeconds: 86400 });
  await first.accounts.grant('default', 10);
  await first.close();
  const second = await openDataStore(dir, { initialCredits: 3600, idempotencyTtlSeconds: 86400 });
  assert.equal(await second.accounts.balance('default'), 3610, 'the initial grant is given once, on creation');
  await second.close();
  const raw = new BetterSqlite3(join(dir, 'stemsplit.sqlite'), { readonly: true });
  assert.equal(raw.pragma('journal_mode', { simple: true }), 'wal');
  const migrations = raw.prepare('select name from kysely_migration').all() as Array<{ name: string }>;
  assert.deepEqual(
    migrations.map((m) => m.name),
    migrationNames,
  );
  raw.close();
});

/** Starts a process that opens `dataDir` when told; resolves once it is loaded and waiting. */
async function openerWaitingAt(dataDir: string) {
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./support/open-data-dir.ts', import.meta.url)), dataDir], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.once('close', (code) => resolve({ code, stdout, stderr })),
  );
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', () => stdout.includes('ready') && resolve());
    void exited.then(({ stderr: err }) => reject(new Error(`opener exited before it was ready: ${err}`)));
  });
  return { go: () => child.stdin.write('go\n'), exited };
}

test('processes opening a fresh data dir at the same moment all succeed and migrate it once', async () => {
  const dir = tempDir();
  const openers = await Promise.all(Array.from({ length: 4 }, () => openerWaitingAt(dir)));
  for (const opener of openers) opener.go();
  for (const { code, stdout, stderr } of await Promise.all(openers.map((o) => o.exited))) {
    assert.equal(code, 0, stderr);
    assert.equal(stdout, 'ready\nbalance 3600\n', 'the initial grant is given once, whoever creates the account');
  }
  const raw = new BetterSqlite3(join(dir, 'stemsplit.sqlite'), { readonly: true });
  const migrations = raw.prepare('select name from kysely_migration').all() as Array<{ name: string }>;
  assert.deepEqual(
    migrations.map((m) => m.name),
    migrationNames,
  );
  raw.close();
});

test('a data dir whose database another process keeps locked is refused in words after the wait', async () => {
  const dir = tempDir();
  await (await openDataStore(dir, { initialCredits: 3600, idempotencyTtlSeconds: 86400 })).close();
  const holder = new BetterSqlite3(join(dir, 'stemsplit.sqlite'));
  holder.exec('BEGIN IMMEDIATE');
  try {
    await assert.rejects(openDataStore(dir, { initialCredits: 3600, idempotencyTtlSeconds: 86400 }), (error: Error & { code?: string }) => {
      assert.equal(error.code, 'IO_ERROR');
      assert.match(error.message, /stemsplit\.sqlite stayed locked by another process for 5 s/);
      return true;
    });
  } finally {
    holder.exec('ROLLBACK');
    await holder.close();
  }
});

test('a data dir a newer stemsplit migrated is refused in words, and left as it was', async () => {
  const dir = tempDir();
  await (await openDataStore(dir, { initialCredits: 3600, idempotencyTtlSeconds: 86400 })).close();
  const raw = new BetterSqlite3(join(dir, 'stemsplit.sqlite'));
  raw.prepare('insert into kysely_migration (name, timestamp) values (?, ?)').run('9999_from_the_future', new Date().toISOString());
  raw.close();
  await assert.rejects(openDataStore(dir, { initialCredits: 3600, idempotencyTtlSeconds: 86400 }), (error: Error & { code?: string }) => {
    assert.equal(error.code, 'IO_ERROR');
    assert.ok(
      error.message.endsWith(
        `was last used by a newer stemsplit (it has migration 9999_from_the_future; this version knows up to ${migrationNames.at(-1)}); run that version or a later one`,
      ),
      error.message,
    );
    return true;
  });
  const after = new BetterSqlite3(join(dir, 'stemsplit.sqlite'), { readonly: true });
  assert.deepEqual(
    (after.prepare('select name from kysely_migration order by name').all() as Array<{ name: string }>).map((r) => r.name),
    [...migrationNames, '9999_from_the_future'],
  );
  assert.equal((after.prepare("select balance from accounts where name = 'default'").get() as { balance: number }).balance, 3600);
  await after.close();
});

test('the balance cannot go negative even if a caller errs', async () => {
  const data = await openDataStore(tempDir(), { initialCredits: 5, idempotencyTtlSeconds: 86400 });
  try {
    const account = await data.accounts.find('default');
    assert.ok(account);
    await assert.rejects(
      data.store.transaction(() => data.accounts.addLedgerEntry(account.id, 'charge', -6, null, 'too much')),
      /CHECK/,
    );
    assert.equal(await data.accounts.balance('default'), 5);
    assert.deepEqual(await data.accounts.ledgerTotals('default'), { grant: 5, charge: 0, refund: 0 });
  } finally {
    await data.close();
  }
});

test('cleanup removes stems past retention and expired unused uploads, and GET stops offering stems', async () => {
  const dir = tempDir();
  writeSong(join(dir, 'song.wav'), 1.5);
  const t = await startTestServer();
  try {
    const input = await uploadFile(t, readFileSync(join(dir, 'song.wav')));
    const created = await t.request('POST', '/audio/splits', { body: { input, stemModel: '4s' } });
    const done = (await waitForSplit(t, created.json.data.id)).json.data;
    assert.equal(done.status, 'succeeded');
    const stemUrl = done.stems.vocals as string;
    const stemDir = join(t.dataDir, 'stems', done.id);
    assert.ok(existsSync(stemDir));

    const unused = await t.request('POST', '/audio/uploads', { body: { filename: 'x.wav', contentType: 'audio/wav', contentLength: 10 } });
    const data = t.server.data;
    // Nothing is old enough yet.
    assert.deepEqual(await cleanupOnce(data, { stemRetentionSeconds: 7 * 86400 }), { splits: 0, uploads: 0 });
    // Seven days and an hour later, as the clock would have it:
    await data.store.run(
      data.store.db
        .updateTable('splits')
        .set({ finishedAtMs: Date.now() - 7 * 86400_000 - 1 })
        .where('id', '=', done.id),
    );
    await data.store.run(
      data.store.db
        .updateTable('uploads')
        .set({ expiresAtMs: Date.now() - 1 })
        .where('id', '=', unused.json.data.uploadId),
    );
    const removed = await cleanupOnce(data, { stemRetentionSeconds: 7 * 86400 });
    assert.ok(removed.splits >= 1 && removed.uploads >= 1);
    assert.equal(existsSync(stemDir), false);
    assert.equal(await data.uploads.get(unused.json.data.uploadId), undefined);
    const after = (await t.request('GET', `/audio/splits/${done.id}`)).json.data;
    assert.equal(after.status, 'succeeded');
    assert.equal(after.stems, undefined);
    assert.equal((await fetch(stemUrl)).status, 404);
  } finally {
    await t.close();
  }
});
