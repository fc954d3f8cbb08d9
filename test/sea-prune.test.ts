/**
 * The executable's old runtime dirs are removed once abandoned: real dirs with real ages, and a
 * real process that has a native addon of one of them loaded.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { test } from 'node:test';
import { mappedFiles, markRuntimeUsed, pruneRuntimes, UNUSED_FOR_MS } from '../src/sea/prune.js';
import { tempDir } from './support/server.js';

const DAY = 24 * 60 * 60 * 1000;
const ADDON = createRequire(import.meta.url).resolve('better-sqlite3/build/Release/better_sqlite3.node');

function runtimeDir(parent: string, name: string, ageMs: number): string {
  const dir = join(parent, name);
  mkdirSync(join(dir, 'bin'), { recursive: true });
  writeFileSync(join(dir, 'bin', 'ffmpeg'), 'x');
  const when = new Date(Date.now() - ageMs);
  utimesSync(dir, when, when);
  return dir;
}

/** A process that loads an addon from `dir` and keeps running; resolves once it is loaded. */
async function processUsing(addon: string) {
  const child = spawn(
    process.execPath,
    ['-e', `process.dlopen({ exports: {} }, ${JSON.stringify(addon)}); console.log('loaded'); setInterval(() => {}, 1000);`],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('loaded') && resolve());
    child.once('exit', (code) => reject(new Error(`exited with ${code}`)));
  });
  return child;
}

test('a start removes other versions’ runtime dirs unused for a week, unless a running process has them mapped', async () => {
  const parent = tempDir();
  const current = runtimeDir(parent, '0.3.0-aaaaaaaaaaaaaaaa', 30 * DAY);
  runtimeDir(parent, '0.1.0-bbbbbbbbbbbbbbbb', UNUSED_FOR_MS + DAY);
  runtimeDir(parent, '0.2.0-cccccccccccccccc', 2 * DAY);
  const running = runtimeDir(parent, '0.2.1-dddddddddddddddd', 30 * DAY);
  copyFileSync(ADDON, join(running, 'better_sqlite3.node'));
  runtimeDir(parent, '.0.3.0-aaaaaaaaaaaaaaaa.staging-x1', 30 * DAY);
  runtimeDir(parent, 'notes', 30 * DAY);
  const child = await processUsing(join(running, 'better_sqlite3.node'));
  try {
    const utimesBefore = statSync(running).mtimeMs;
    assert.ok(mappedFiles().has(join(running, 'better_sqlite3.node')), 'the addon shows in /proc/<pid>/maps');
    assert.deepEqual(pruneRuntimes(parent, '0.3.0-aaaaaaaaaaaaaaaa'), ['0.1.0-bbbbbbbbbbbbbbbb']);
    assert.deepEqual(readdirSync(parent).sort(), [
      '.0.3.0-aaaaaaaaaaaaaaaa.staging-x1', // staging leftovers have their own, shorter rule
      '0.2.0-cccccccccccccccc', // used two days ago
      '0.2.1-dddddddddddddddd', // a running process has its addon loaded
      '0.3.0-aaaaaaaaaaaaaaaa', // this start's own, however old
      'notes', // not a runtime dir
    ]);
    assert.equal(statSync(running).mtimeMs, utimesBefore);
  } finally {
    child.kill('SIGKILL');
  }
  markRuntimeUsed(current);
  assert.ok(Date.now() - statSync(current).mtimeMs < 60_000, 'a start marks its own dir as used now');
});
