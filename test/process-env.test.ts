/** The split worker's environment: glibc's allocator settings, and a user's huge-page tunable passed through. */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { ORT_MALLOC_ENV, ortProcessEnv } from '../src/onnx/process-env.js';

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

// Where the kernel offers transparent huge pages at all (`madvise` or `always`), the opt-in that
// docs/benchmarks.md describes works: a process started with the worker's environment built from
// a user's GLIBC_TUNABLES holds its large buffers on huge pages (glibc 2.35 and later).
const thpMode = existsSync('/sys/kernel/mm/transparent_hugepage/enabled')
  ? (/\[(\w+)\]/.exec(readFileSync('/sys/kernel/mm/transparent_hugepage/enabled', 'utf8'))?.[1] ?? 'never')
  : 'never';

test('with the user’s glibc.malloc.hugetlb=1 a worker-environment process holds a 64-MiB buffer on huge pages', { skip: thpMode === 'never' && 'the kernel offers no transparent huge pages' }, () => {
  const child = `
    const buffer = new Float32Array(16 * 1024 * 1024);
    for (let i = 0; i < buffer.length; i += 1024) buffer[i] = i;
    const rollup = require('node:fs').readFileSync('/proc/self/smaps_rollup', 'utf8');
    console.log(/AnonHugePages:\\s+(\\d+)/.exec(rollup)[1], buffer[2048]);`;
  const hugeKiB = (env: NodeJS.ProcessEnv) => Number(execFileSync(process.execPath, ['-e', child], { env, encoding: 'utf8' }).split(' ')[0]);
  const base = Object.fromEntries(Object.entries(process.env).filter(([name]) => name !== 'GLIBC_TUNABLES' && !name.startsWith('MALLOC_')));
  const opted = hugeKiB(ortProcessEnv({ ...base, GLIBC_TUNABLES: HUGE_PAGES }));
  assert.ok(opted >= 32 * 1024, `${opted} KiB on huge pages`);
  if (thpMode === 'madvise') assert.equal(hugeKiB(ortProcessEnv(base)), 0, 'without the tunable glibc asks for no huge pages');
});
