/**
 * `stemsplit` on the PATH, as README's quick start puts it there: `npm link` (or `npm install -g .`)
 * links the clone's `bin/stemsplit` into npm's bin folder. The link is made here the same way (a
 * symlink in a temporary bin folder on PATH) and used from a folder outside the clone, and a
 * SIGTERM sent to the process the user started stops the split it runs (no npm process between them).
 * It runs the build `npm install` made (dist/), so it skips in words where there is none.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, test } from 'node:test';
import { writeSong } from './support/audio.js';
import { tempDir } from './support/server.js';
import { until } from './support/wait.js';
import { VERSION } from '../src/version.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const skip = existsSync(join(ROOT, 'dist', 'cli', 'run.js')) ? false : 'no build in dist/: run npm run build (npm install does)';

const work = tempDir('stemsplit-path-');
after(() => rmSync(work, { recursive: true, force: true }));
const bin = join(work, 'bin');
const music = join(work, 'music');
mkdirSync(bin);
mkdirSync(music);
symlinkSync(join(ROOT, 'bin', 'stemsplit'), join(bin, 'stemsplit'));
const env = {
  ...process.env,
  PATH: `${bin}${delimiter}${process.env['PATH'] ?? ''}`,
  STEMSPLIT_DATA_DIR: join(work, 'data'),
  STEMSPLIT_CACHE_DIR: join(work, 'cache'),
};

test('stemsplit runs from the PATH in a folder outside the clone', { skip }, () => {
  const version = spawnSync('stemsplit', ['--version'], { cwd: music, env, encoding: 'utf8' });
  assert.equal(version.status, 0, version.stderr);
  assert.equal(version.stdout.trim(), VERSION);
  writeSong(join(music, 'song.wav'), 1);
  const split = spawnSync('stemsplit', ['split', 'song.wav'], { cwd: music, env, encoding: 'utf8', timeout: 120_000 });
  assert.equal(split.status, 0, split.stderr);
  assert.deepEqual(readdirSync(join(music, 'separated', 'song')).sort(), ['bass.mp3', 'drums.mp3', 'other.mp3', 'vocals.mp3']);
});

test('SIGTERM to the stemsplit a user or supervisor started stops its split: exit 143, nothing left running', { skip }, async () => {
  writeSong(join(music, 'long.wav'), 120);
  const child = spawn('stemsplit', ['split', 'long.wav', '-o', 'stopped'], { cwd: music, env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('close', (status) => resolve(status)));
  await until(
    () => /\d+% separate/.test(stderr),
    60_000,
    () => `separation never began: ${stderr}`,
  );
  // The process the user started handles the signal itself: its one child is its split worker
  // (src/split-worker/worker-pool.ts), whose children are ffmpeg's decoder and encoders. No
  // launcher in between to drop the signal.
  const children = childrenOf(child.pid as number);
  assert.equal(children.length, 1, `one split worker under stemsplit: ${JSON.stringify(children)}`);
  const [worker] = children as [{ pid: number; args: string }];
  assert.match(worker.args, /worker-process/, 'the child is the split worker');
  const grandchildren = childrenOf(worker.pid);
  assert.deepEqual([...new Set(grandchildren.map(({ args }) => args.split(/\s+/)[0]?.split('/').pop()))], ['ffmpeg'], "the worker's children are ffmpeg");
  child.kill('SIGTERM');
  assert.equal(await exited, 143, stderr);
  assert.match(stderr, /stemsplit: stopped by SIGTERM; nothing was written for long\n$/);
  const all = [worker, ...grandchildren];
  await until(
    () => all.every(({ pid }) => !alive(pid)),
    5_000,
    () => 'the split worker or an ffmpeg of the stopped split is still running',
  );
  assert.deepEqual(existsSync(join(music, 'stopped')) ? readdirSync(join(music, 'stopped')) : [], []);
});

/** The processes whose parent is `pid`, with their command lines. */
function childrenOf(pid: number): { pid: number; args: string }[] {
  return spawnSync('ps', ['-o', 'pid=,args=', '--ppid', String(pid)], { encoding: 'utf8' })
    .stdout.trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [id = '', ...args] = line.trim().split(/\s+/);
      return { pid: Number(id), args: args.join(' ') };
    });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
