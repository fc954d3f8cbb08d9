/**
 * A studio's LAN (issue 48): the data dir is the service's alone. Started under umask 022, serve
 * leaves the data dir and every folder in it 0700 and the database and every stored file (upload,
 * source, stems) 0600; a data dir an earlier start left looser is tightened, in one line.
 */
import assert from 'node:assert/strict';
import { chmodSync, lstatSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, test } from 'node:test';
import { writeSong } from './support/audio.js';
import { runCli } from './support/process.js';
import { startTestServer, tempDir, uploadFile, waitForSplit } from './support/server.js';

/** Every entry under `root` (itself included) whose mode is not 0700 (folders) or 0600 (files), with its mode. */
function looseEntries(root: string): string[] {
  const loose: string[] = [];
  const walk = (path: string) => {
    const info = lstatSync(path);
    const mode = info.mode & 0o777;
    if (info.isDirectory()) {
      if (mode !== 0o700) loose.push(`${path} ${mode.toString(8)}`);
      for (const name of readdirSync(path)) walk(join(path, name));
    } else if (!info.isSymbolicLink() && mode !== 0o600) {
      loose.push(`${path} ${mode.toString(8)}`);
    }
  };
  walk(root);
  return loose;
}

function entries(root: string): string[] {
  const found: string[] = [];
  const walk = (path: string) => {
    found.push(path);
    if (lstatSync(path).isDirectory()) for (const name of readdirSync(path)) walk(join(path, name));
  };
  walk(root);
  return found;
}

function makeLoose(root: string): void {
  for (const path of entries(root)) chmodSync(path, lstatSync(path).isDirectory() ? 0o755 : 0o644);
}

let song: Buffer;

beforeEach(() => {
  // What a login shell gives: files 0644, folders 0755, unless the service narrows it.
  process.umask(0o022);
  if (!song) {
    const path = join(tempDir(), 'song.wav');
    writeSong(path, 2.5);
    song = readFileSync(path);
  }
});

test('a CLI command that makes the data dir under umask 022 leaves it 0700 and the database 0600', () => {
  const dataDir = join(tempDir(), 'data');
  const result = runCli(['--data-dir', dataDir, 'credits', 'show']);
  assert.equal(result.status, 0, result.stderr);
  assert.deepEqual(looseEntries(dataDir), []);
});

test('serve under umask 022: the data dir, its folders 0700, the database, upload, source and stems 0600', { timeout: 180_000 }, async () => {
  const dataDir = join(tempDir(), 'data');
  const logged: string[] = [];
  const t = await startTestServer({ dataDir }, { log: (line) => logged.push(line) });
  try {
    const input = await uploadFile(t, song);
    const created = await t.request('POST', '/audio/splits', { body: { input, stemModel: '4s' } });
    assert.equal(created.status, 200, JSON.stringify(created.json));
    const done = await waitForSplit(t, created.json.data.id);
    assert.equal(done.json.data.status, 'succeeded', JSON.stringify(done.json));
    const files = entries(dataDir).filter((path) => lstatSync(path).isFile());
    assert.ok(
      files.some((path) => path.endsWith('stemsplit.sqlite')),
      files.join('\n'),
    );
    assert.ok(
      files.some((path) => path.includes(join('stems', created.json.data.id))),
      `no stems among ${files.join(', ')}`,
    );
    assert.ok(
      files.some((path) => path.includes(`${join(dataDir, 'sources')}`) || path.includes(join(dataDir, 'uploads'))),
      'the source is kept',
    );
    assert.deepEqual(looseEntries(dataDir), []);
    assert.deepEqual(
      logged.filter((line) => /tightened/.test(line)),
      [],
      'a fresh data dir has nothing to tighten',
    );
  } finally {
    await t.close();
  }
});

test('a data dir left readable by others is tightened at the next start, saying so in one line', { timeout: 60_000 }, async () => {
  const dataDir = join(tempDir(), 'data');
  const first = await startTestServer({ dataDir });
  await uploadFile(first, song);
  await first.close();
  makeLoose(dataDir);
  const count = entries(dataDir).length;
  assert.ok(looseEntries(dataDir).length === count);

  process.umask(0o022);
  const logged: string[] = [];
  const second = await startTestServer({ dataDir }, { log: (line) => logged.push(line) });
  try {
    assert.deepEqual(looseEntries(dataDir), []);
    const said = logged.filter((line) => /tightened the data dir/.test(line));
    assert.equal(said.length, 1, logged.join('\n'));
    assert.match(said[0] ?? '', new RegExp(`${count} entries other users could read`));
  } finally {
    await second.close();
  }
});
