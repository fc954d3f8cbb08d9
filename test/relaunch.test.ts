// `serve` and `split` start themselves again with glibc allocator settings (src/cli/relaunch.ts).
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { ALLOCATOR_ENV, shouldRelaunch } from '../src/cli/relaunch.js';
import { killHard, startServeProcess } from './support/process.js';
import { tempDir } from './support/server.js';

const onGlibcLinux = shouldRelaunch(['serve'], {});

/** The one child of `pid` (the relaunched command). */
function onlyChild(pid: number): number {
  const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  assert.equal(children.length, 1, `expected one child of ${pid}, found ${children.join(', ')}`);
  return children[0] as number;
}

function environment(pid: number): Map<string, string> {
  const entries = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').filter(Boolean);
  return new Map(entries.map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]));
}

async function gone(pid: number, withinMs: number): Promise<boolean> {
  for (const started = Date.now(); Date.now() - started < withinMs; ) {
    const stat = existsSync(`/proc/${pid}/stat`) ? readFileSync(`/proc/${pid}/stat`, 'utf8') : '';
    // A zombie (state Z) has exited and only waits for its reaper.
    if (stat === '' || stat.split(') ')[1]?.startsWith('Z')) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return false;
}

test('only separating commands relaunch, and only once', () => {
  if (!onGlibcLinux) return;
  assert.equal(shouldRelaunch(['split', 'song.wav'], {}), true);
  assert.equal(shouldRelaunch(['--data-dir', 'x', 'serve'], {}), true);
  assert.equal(shouldRelaunch(['keys', 'list'], {}), false);
  assert.equal(shouldRelaunch(['serve'], { STEMSPLIT_RELAUNCHED: '1' }), false);
  assert.equal(shouldRelaunch(['serve'], { ...ALLOCATOR_ENV }), false);
  assert.equal(shouldRelaunch(['serve'], { STEMSPLIT_NO_RELAUNCH: '1' }), false);
});

test('serve runs in a child with the allocator settings; SIGTERM reaches it and the exit code comes back', { skip: !onGlibcLinux }, async () => {
  const { child, url } = await startServeProcess([], { STEMSPLIT_DATA_DIR: tempDir() });
  const server = onlyChild(child.pid as number);
  const env = environment(server);
  for (const [name, value] of Object.entries(ALLOCATOR_ENV)) assert.equal(env.get(name), value, name);
  assert.equal((await fetch(`${url}/v1/health`)).status, 200);

  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.kill('SIGTERM');
  assert.equal(await exited, 0);
  assert.match(stderr, /stopping: running jobs finish/);
  assert.ok(await gone(server, 5000), 'the relaunched server ended with its parent');
});

test('a relaunched server ends when its parent is killed with SIGKILL', { skip: !onGlibcLinux }, async () => {
  const { child } = await startServeProcess([], { STEMSPLIT_DATA_DIR: tempDir() });
  const server = onlyChild(child.pid as number);
  await killHard(child);
  assert.ok(await gone(server, 5000), 'no orphaned server keeps the port and the jobs');
});
