/**
 * The standalone executable as a user gets it: built by scripts/build-exe.ts, copied alone into
 * an empty folder, and run with a PATH that holds neither node nor ffmpeg, so everything it uses
 * (natives, ffmpeg, the bundled model) must come from inside the file.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, truncateSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import { VERSION } from '../src/version.js';
import { ApiClient } from './support/client.js';
import { decodedSamples, writeSong } from './support/audio.js';
import { tempDir } from './support/server.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SONG_SECONDS = 3;
const SAMPLE_RATE = 44100;
let exe: string;
let home: string;
/** Unpacked runtimes are ~115 MB each: every temp dir is removed at the end. */
const made: string[] = [];
/** Shared by the tests that are not about unpacking, so the runtime is unpacked once for them. */
let sharedCache: string;

function scratch(prefix = 'stemsplit-exe-test-'): string {
  const dir = tempDir(prefix);
  made.push(dir);
  return dir;
}

/** The executable's whole environment: an empty folder as PATH, and its own cache and data dirs. */
function exeEnv(dir: string, cacheDir = join(dir, 'cache')): Record<string, string> {
  const emptyPath = join(dir, 'empty-path');
  mkdirSync(emptyPath, { recursive: true });
  return { PATH: emptyPath, HOME: join(dir, 'home'), STEMSPLIT_CACHE_DIR: cacheDir, STEMSPLIT_DATA_DIR: join(dir, 'data') };
}

function runExe(args: readonly string[], env: Record<string, string>) {
  const result = spawnSync(exe, [...args], { cwd: home, env, encoding: 'utf8', timeout: 120_000 });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

function runtimeDirs(env: Record<string, string>): string[] {
  return readdirSync(join(env['STEMSPLIT_CACHE_DIR'] ?? '', 'runtime'));
}

before(() => {
  const buildDir = scratch('stemsplit-exe-build-');
  const built = join(buildDir, 'stemsplit-linux-x64');
  const result = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/build-exe.ts', '--out', built], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 300_000,
  });
  assert.equal(result.status, 0, `build failed:\n${result.stdout}${result.stderr}`);
  home = scratch('stemsplit-exe-home-');
  exe = join(home, 'stemsplit');
  copyFileSync(built, exe);
  chmodSync(exe, 0o755);
  rmSync(buildDir, { recursive: true });
  assert.deepEqual(readdirSync(home), ['stemsplit'], 'the executable is alone in its folder');
  sharedCache = join(scratch(), 'cache');
});

after(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

test('--version on a fresh cache unpacks one runtime dir, named by version and content hash', () => {
  const env = exeEnv(scratch(), sharedCache);
  const result = runExe(['--version'], env);
  assert.equal(result.status, 0, result.stderr);
  assert.equal(result.stdout.trim(), VERSION);
  assert.equal(result.stderr, '', 'no experimental-feature warning');
  const dirs = runtimeDirs(env);
  assert.equal(dirs.length, 1);
  assert.match(dirs[0] ?? '', new RegExp(`^${VERSION.replaceAll('.', '\\.')}-[0-9a-f]{16}$`));
  // A second start reuses the dir.
  assert.equal(runExe(['--version'], env).status, 0);
  assert.deepEqual(runtimeDirs(env), dirs);
});

test('a start removes an older version’s runtime dir that no start has used for over a week', () => {
  const env = exeEnv(scratch());
  const old = join(env['STEMSPLIT_CACHE_DIR'] ?? '', 'runtime', '0.0.1-0123456789abcdef');
  mkdirSync(join(old, 'bin'), { recursive: true });
  writeFileSync(join(old, 'bin', 'ffmpeg'), 'an old ffmpeg');
  const eightDaysAgo = new Date(Date.now() - 8 * 24 * 60 * 60 * 1000);
  utimesSync(old, eightDaysAgo, eightDaysAgo);
  const result = runExe(['--version'], env);
  assert.equal(result.status, 0, result.stderr);
  assert.deepEqual(
    runtimeDirs(env).map((name) => name.startsWith(`${VERSION}-`)),
    [true],
    'only this version’s dir is left',
  );
});

test('models list finds the bundled models inside the executable', () => {
  const result = runExe(['models', 'list'], exeEnv(scratch(), sharedCache));
  assert.equal(result.status, 0, result.stderr);
  // Every model in models/ is listed; with no Demucs pulled, 4s and 6s resolve to bundled ones.
  for (const entry of readdirSync(fileURLToPath(new URL('../models', import.meta.url))))
    assert.match(result.stdout, new RegExp(`^${entry} +[46] stems +bundled`, 'm'));
  assert.match(result.stdout, /^\S+ +4 stems +bundled \[4s\] /m);
  assert.match(result.stdout, /^\S+ +6 stems +bundled \[6s\] /m);
});

test('processes starting together on an empty cache all succeed and leave one complete runtime dir', async () => {
  const env = exeEnv(scratch());
  const starts = Array.from(
    { length: 3 },
    () =>
      new Promise<{ code: number | null; stdout: string }>((resolve) => {
        const child = spawn(exe, ['credits', 'show'], { cwd: home, env, stdio: ['ignore', 'pipe', 'inherit'] });
        let stdout = '';
        child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
        child.once('close', (code) => resolve({ code, stdout }));
      }),
  );
  for (const { code, stdout } of await Promise.all(starts)) {
    assert.equal(code, 0);
    assert.match(stdout, /default: 3600 credits/);
  }
  assert.equal(runtimeDirs(env).length, 1, 'no staging dir left behind');
});

test('split runs the bundled model and writes MP3 stems with the carried ffmpeg', () => {
  const dir = scratch();
  const env = exeEnv(dir, sharedCache);
  writeSong(join(dir, 'song.wav'), SONG_SECONDS);
  const result = runExe(['split', join(dir, 'song.wav'), '-o', join(dir, 'out')], env);
  assert.equal(result.status, 0, result.stderr);
  const stems = readdirSync(join(dir, 'out', 'song')).sort();
  assert.deepEqual(stems, ['bass.mp3', 'drums.mp3', 'other.mp3', 'vocals.mp3']);
  for (const stem of stems) {
    assert.equal(decodedSamples(join(dir, 'out', 'song', stem)), SONG_SECONDS * SAMPLE_RATE, `${stem} has the song's length`);
  }
});

/** Starts `serve --port 0` and resolves with its API base once it prints where it listens. */
function startServe(env: Record<string, string>): Promise<{ child: ChildProcess; base: string }> {
  const child = spawn(exe, ['serve', '--port', '0'], { cwd: home, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /stemsplit listening on (http:\/\/\S+\/v1)/.exec(output);
      if (match?.[1]) resolve({ child, base: match[1] });
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => reject(new Error(`serve exited with ${code}: ${output}`)));
  });
}

test('serve: upload, split and download a stem through the v1 API, then stop on SIGTERM', async () => {
  const dir = scratch();
  const env = exeEnv(dir, sharedCache);
  const created = runExe(['keys', 'create', '--json'], env);
  assert.equal(created.status, 0, created.stderr);
  const { key } = JSON.parse(created.stdout) as { key: string };
  writeSong(join(dir, 'song.wav'), SONG_SECONDS);
  const song = readFileSync(join(dir, 'song.wav'));

  const { child, base } = await startServe(env);
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  try {
    const client = new ApiClient(base.replace(/\/v1$/, ''), key);
    const input = await client.upload(song, 'song.wav', 'audio/wav', 'POST');
    const split = await client.request('POST', '/audio/splits', { body: { input, stemModel: '4s' } });
    assert.equal(split.status, 200, JSON.stringify(split.json));
    const page = await fetch(new URL('/', base));
    assert.equal(page.status, 200, 'the web page is served from inside the executable');
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/);

    const state = (await client.waitForSplit(split.json.data.id)).json.data;
    assert.equal(state.status, 'succeeded', JSON.stringify(state.error));
    assert.deepEqual(Object.keys(state.stems).sort(), ['bass', 'drums', 'other', 'vocals']);

    const stem = await fetch(state.stems.vocals);
    assert.equal(stem.status, 200);
    assert.equal(stem.headers.get('content-type'), 'audio/mpeg');
    const stemFile = join(dir, 'vocals.mp3');
    writeFileSync(stemFile, Buffer.from(await stem.arrayBuffer()));
    assert.equal(decodedSamples(stemFile), SONG_SECONDS * SAMPLE_RATE, 'the downloaded stem has the song length');
  } finally {
    child.kill('SIGTERM');
  }
  assert.equal(await exited, 0, 'serve stops cleanly on SIGTERM');
});

test('a runtime dir with a file missing or cut short is unpacked again', () => {
  const env = exeEnv(scratch(), sharedCache);
  assert.equal(runExe(['--version'], env).status, 0);
  const [name] = runtimeDirs(env);
  const ffmpeg = join(sharedCache, 'runtime', name ?? '', 'ffmpeg');
  const size = statSync(ffmpeg).size;
  truncateSync(ffmpeg, 1000);
  const result = runExe(['--version'], env);
  assert.equal(result.status, 0, result.stderr);
  assert.deepEqual(runtimeDirs(env), [name]);
  assert.equal(statSync(ffmpeg).size, size);
  assert.equal(spawnSync(ffmpeg, ['-version']).status, 0, 'the unpacked ffmpeg runs');
});
