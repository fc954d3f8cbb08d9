/**
 * The split worker's environment: glibc's allocator settings, ORT_DISABLE_TELEMETRY, and a user's huge-page
 * tunable passed through, as the worker pool builds it and as a real worker process starts with it.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { writeSong } from './support/audio.js';
import { tempDir } from './support/temp-dir.js';
import { allocatorOf, ModelRegistry } from '../src/models/registry.js';
import { ALLOCATOR_PROFILES, DEFAULT_ALLOCATOR, ortProcessEnv, type AllocatorProfile } from '../src/onnx/process-env.js';
import { workerSplitter } from '../src/split-worker/worker-pool.js';
import { fixtureDir } from './support/fixtures.js';

const HUGE_PAGES = 'glibc.malloc.hugetlb=1';
const ORT_MALLOC_ENV = ALLOCATOR_PROFILES[DEFAULT_ALLOCATOR];
/** A time-domain Demucs (v2) fixture: its family asks for map-large-blocks. */
const DEMUCS_V2 = join('..', 'shared', 'fixtures', 'demucs-v3', 'mdx_m0.th');
/** The Demucs fixtures these tests read: a clone without them skips, saying why. */
const NO_V2 = fixtureDir('demucs-v3') === undefined || fixtureDir('demucs') === undefined ? 'needs ../shared/fixtures/demucs and demucs-v3' : false;

test('the worker gets its allocator settings; a user’s own MALLOC_* replace them and a user’s GLIBC_TUNABLES passes through', () => {
  const plain = ortProcessEnv({ PATH: '/bin' });
  for (const [name, value] of Object.entries(ORT_MALLOC_ENV)) assert.equal(plain[name], value);
  assert.equal(plain['GLIBC_TUNABLES'], undefined, 'huge pages are not the default settings’: they slow HTDemucs and the bundled models');

  const own = ortProcessEnv({ MALLOC_ARENA_MAX: '4', GLIBC_TUNABLES: HUGE_PAGES });
  assert.equal(own['MALLOC_ARENA_MAX'], '4');
  assert.equal(own['MALLOC_TOP_PAD_'], undefined);
  assert.equal(own['GLIBC_TUNABLES'], HUGE_PAGES);

  const mapped = ortProcessEnv({ PATH: '/bin' }, 'map-large-blocks');
  for (const [name, value] of Object.entries(ALLOCATOR_PROFILES['map-large-blocks'])) assert.equal(mapped[name], value);
  assert.equal(mapped['MALLOC_TOP_PAD_'], undefined);
  const theirs = ortProcessEnv({ GLIBC_TUNABLES: 'glibc.malloc.arena_max=2' }, 'map-large-blocks');
  assert.equal(theirs['GLIBC_TUNABLES'], 'glibc.malloc.arena_max=2', 'the user’s tunables replace the profile’s');
  assert.equal(theirs['MALLOC_MMAP_THRESHOLD_'], ALLOCATOR_PROFILES['map-large-blocks'].MALLOC_MMAP_THRESHOLD_);
});

test('a split worker starts with the allocator settings, ORT_DISABLE_TELEMETRY and the user’s GLIBC_TUNABLES', {
  skip: !existsSync('/proc/self/environ') && 'no /proc to read a process environment from',
}, async () => {
  const saved = { tunables: process.env['GLIBC_TUNABLES'], telemetry: process.env['ORT_DISABLE_TELEMETRY'] };
  process.env['GLIBC_TUNABLES'] = HUGE_PAGES;
  delete process.env['ORT_DISABLE_TELEMETRY'];
  const dir = tempDir();
  writeSong(join(dir, 'song.wav'), 1);
  const registry = new ModelRegistry({ bundledDir: 'models', cacheDir: dir, aliases: { '4s': ['bundled-4s'], '6s': ['bundled-6s'] } });
  const splitter = workerSplitter({ cacheDir: dir, intraOpThreads: 1 }, 1);
  try {
    await splitter.split({ inputPath: join(dir, 'song.wav'), model: registry.resolve('bundled-4s'), outDir: join(dir, 'out'), format: 'wav' }, () => undefined);
    const { env } = splitWorker();
    for (const [name, value] of Object.entries(ORT_MALLOC_ENV)) assert.equal(env.get(name), value, name);
    assert.equal(env.get('ORT_DISABLE_TELEMETRY'), '1', 'ONNX Runtime in the worker calls no one (test/reliability.test.ts watches it)');
    assert.equal(env.get('GLIBC_TUNABLES'), HUGE_PAGES, 'the user’s tunable passes through');
  } finally {
    await splitter.close();
    for (const [name, value] of [
      ['GLIBC_TUNABLES', saved.tunables],
      ['ORT_DISABLE_TELEMETRY', saved.telemetry],
    ] as const) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
});

test('a pool of one worker runs each job with its family’s allocator settings, ending the idle worker whose settings differ', {
  skip: (!existsSync('/proc/self/environ') && 'no /proc to read a process environment from') || NO_V2,
}, async () => {
  const dir = tempDir();
  writeSong(join(dir, 'song.wav'), 2);
  const registry = new ModelRegistry({ bundledDir: 'models', cacheDir: dir, aliases: { '4s': ['bundled-4s'], '6s': ['bundled-6s'] } });
  const splitter = workerSplitter({ cacheDir: dir, intraOpThreads: 1 }, 1);
  const split = (model: string, out: string) =>
    splitter.split({ inputPath: join(dir, 'song.wav'), model: registry.resolve(model), outDir: join(dir, out), format: 'wav' }, () => undefined);
  try {
    await split(DEMUCS_V2, 'v2');
    const demucsWorker = splitWorker();
    assert.equal(demucsWorker.env.get('MALLOC_MMAP_THRESHOLD_'), ALLOCATOR_PROFILES['map-large-blocks'].MALLOC_MMAP_THRESHOLD_);
    assert.equal(demucsWorker.env.get('MALLOC_TOP_PAD_'), undefined);
    assert.equal(demucsWorker.env.get('GLIBC_TUNABLES'), ALLOCATOR_PROFILES['map-large-blocks'].GLIBC_TUNABLES);
    await split('bundled-4s', 'bundled');
    const bundledWorker = splitWorker();
    for (const [name, value] of Object.entries(ORT_MALLOC_ENV)) assert.equal(bundledWorker.env.get(name), value, name);
    assert.notEqual(bundledWorker.pid, demucsWorker.pid, 'a fresh worker, the Demucs one ended');
    assert.equal(readdirSync(join(dir, 'v2')).length, 4, 'the Demucs job wrote its four stems');
  } finally {
    await splitter.close();
  }
});

test('Demucs v2, alone or in a bag, asks for map-large-blocks; HDemucs, HTDemucs, other families and a file it cannot tell keep the default', {
  skip: NO_V2,
}, () => {
  const dir = tempDir();
  const registry = new ModelRegistry({ bundledDir: 'models', cacheDir: dir, aliases: { '4s': ['bundled-4s'], '6s': ['bundled-6s'] } });
  const fixtures = join('..', 'shared', 'fixtures');
  const damaged = join(dir, 'damaged.th');
  writeFileSync(damaged, readFileSync(DEMUCS_V2).subarray(0, 90));
  const expected: [string, AllocatorProfile][] = [
    [DEMUCS_V2, 'map-large-blocks'],
    [join(fixtures, 'demucs-v3', 'mdx_m1.th'), 'map-large-blocks'],
    [join(fixtures, 'demucs-v3', 'mdx_small.yaml'), 'map-large-blocks'],
    [join(fixtures, 'demucs-v3', 'hdemucs_mmi_small.yaml'), 'keep-large-blocks'],
    [join(fixtures, 'demucs', 'htdemucs_small.th'), 'keep-large-blocks'],
    [join(fixtures, 'demucs', 'htdemucs_ft_small.yaml'), 'keep-large-blocks'],
    ['bundled-4s', 'keep-large-blocks'],
    [damaged, 'keep-large-blocks'],
  ];
  for (const [model, profile] of expected) assert.equal(allocatorOf(registry.resolve(model)), profile, model);
  assert.equal(allocatorOf(registry.resolve(`${DEMUCS_V2}+bundled-4s`)), 'keep-large-blocks', 'an ensemble whose members differ');
});

/** The one split worker under this process and its environment; fails unless exactly one runs. */
function splitWorker(): { pid: number; env: Map<string, string> } {
  const [worker, ...others] = childrenOf(process.pid).filter((pid) => readIfThere(`/proc/${pid}/cmdline`)?.includes('worker-process'));
  assert.ok(worker !== undefined && others.length === 0, 'one split worker is running');
  const env = new Map(
    readFileSync(`/proc/${worker}/environ`, 'utf8')
      .split('\0')
      .map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]),
  );
  return { pid: worker, env };
}

/** A /proc file, or undefined when its process has just exited. */
function readIfThere(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

/** The processes whose parent is `pid` (Linux's /proc). */
function childrenOf(pid: number): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((name) => {
      const stat = readIfThere(`/proc/${name}/stat`);
      return stat !== undefined && Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid;
    })
    .map(Number);
}
