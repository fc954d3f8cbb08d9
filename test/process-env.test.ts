/**
 * The split worker's environment: glibc's allocator settings, ORT_DISABLE_TELEMETRY, and a user's huge-page
 * tunable passed through, as the worker pool builds it and as a real worker process starts with it.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { writeSong } from '../harness/audio.js';
import { tempDir } from '../harness/temp-dir.js';
import { ModelRegistry } from '../src/models/registry.js';
import { ORT_MALLOC_ENV, ortProcessEnv } from '../src/onnx/process-env.js';
import { workerSplitter } from '../src/splitting/worker-pool.js';

const HUGE_PAGES = 'glibc.malloc.hugetlb=1';

test('the worker gets the allocator settings; a user’s own MALLOC_* replace them and GLIBC_TUNABLES passes through', () => {
  const plain = ortProcessEnv({ PATH: '/bin' });
  for (const [name, value] of Object.entries(ORT_MALLOC_ENV)) assert.equal(plain[name], value);
  assert.equal(plain['GLIBC_TUNABLES'], undefined, 'huge pages are not a default: they slow Demucs and the bundled models');

  const own = ortProcessEnv({ MALLOC_ARENA_MAX: '4', GLIBC_TUNABLES: HUGE_PAGES });
  assert.equal(own['MALLOC_ARENA_MAX'], '4');
  assert.equal(own['MALLOC_TOP_PAD_'], undefined);
  assert.equal(own['GLIBC_TUNABLES'], HUGE_PAGES);
});

test('a split worker starts with the allocator settings, ORT_DISABLE_TELEMETRY and the user’s GLIBC_TUNABLES', { skip: !existsSync('/proc/self/environ') && 'no /proc to read a process environment from' }, async () => {
  const saved = { tunables: process.env['GLIBC_TUNABLES'], telemetry: process.env['ORT_DISABLE_TELEMETRY'] };
  process.env['GLIBC_TUNABLES'] = HUGE_PAGES;
  delete process.env['ORT_DISABLE_TELEMETRY'];
  const dir = tempDir();
  writeSong(join(dir, 'song.wav'), 1);
  const registry = new ModelRegistry({ bundledDir: 'models', cacheDir: dir, aliases: { '4s': ['bundled-4s'], '6s': ['bundled-6s'] } });
  const splitter = workerSplitter({ cacheDir: dir, intraOpThreads: 1 }, 1);
  try {
    await splitter.split({ inputPath: join(dir, 'song.wav'), model: registry.resolve('bundled-4s'), outDir: join(dir, 'out'), format: 'wav' }, () => undefined);
    const [worker, ...others] = childrenOf(process.pid).filter((pid) => readIfThere(`/proc/${pid}/cmdline`)?.includes('worker-process'));
    assert.ok(worker !== undefined && others.length === 0, 'one split worker is running');
    const env = new Map(readFileSync(`/proc/${worker}/environ`, 'utf8').split('\0').map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]));
    for (const [name, value] of Object.entries(ORT_MALLOC_ENV)) assert.equal(env.get(name), value, name);
    assert.equal(env.get('ORT_DISABLE_TELEMETRY'), '1', 'ONNX Runtime in the worker calls no one (test/reliability.test.ts watches it)');
    assert.equal(env.get('GLIBC_TUNABLES'), HUGE_PAGES, 'the user’s tunable passes through');
  } finally {
    await splitter.close();
    for (const [name, value] of [['GLIBC_TUNABLES', saved.tunables], ['ORT_DISABLE_TELEMETRY', saved.telemetry]] as const) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
});

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
