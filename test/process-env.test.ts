/** The split worker's environment: glibc's allocator settings and transparent huge pages for ORT's tensors. */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { ORT_GLIBC_TUNABLES, ORT_MALLOC_ENV, ortProcessEnv } from '../src/onnx/process-env.js';

function without(env: NodeJS.ProcessEnv, ...names: string[]): NodeJS.ProcessEnv {
  const copy = { ...env };
  for (const name of names) delete copy[name];
  return copy;
}

test('the worker gets the allocator settings and huge pages; a user’s own MALLOC_* and GLIBC_TUNABLES win', () => {
  const plain = ortProcessEnv({ PATH: '/bin' });
  assert.equal(plain['GLIBC_TUNABLES'], ORT_GLIBC_TUNABLES);
  for (const [name, value] of Object.entries(ORT_MALLOC_ENV)) assert.equal(plain[name], value);

  const own = ortProcessEnv({ MALLOC_ARENA_MAX: '4', GLIBC_TUNABLES: 'glibc.malloc.hugetlb=0' });
  assert.equal(own['MALLOC_ARENA_MAX'], '4');
  assert.equal(own['MALLOC_TOP_PAD_'], undefined);
  assert.equal(own['GLIBC_TUNABLES'], 'glibc.malloc.hugetlb=0');
});

// Where the kernel offers transparent huge pages at all: a process started with the worker's
// environment gets its large tensors on them (glibc 2.35+, as Debian 12 and every current distribution ship).
const thpMode = existsSync('/sys/kernel/mm/transparent_hugepage/enabled')
  ? (/\[(\w+)\]/.exec(readFileSync('/sys/kernel/mm/transparent_hugepage/enabled', 'utf8'))?.[1] ?? 'never')
  : 'never';

test('a process with the worker’s environment holds a 64-MiB buffer on huge pages', { skip: thpMode === 'never' && 'the kernel offers no transparent huge pages' }, () => {
  const child = `
    const buffer = new Float32Array(16 * 1024 * 1024);
    for (let i = 0; i < buffer.length; i += 1024) buffer[i] = i;
    const rollup = require('node:fs').readFileSync('/proc/self/smaps_rollup', 'utf8');
    console.log(/AnonHugePages:\\s+(\\d+)/.exec(rollup)[1], buffer[2048]);`;
  const hugeKiB = (env: NodeJS.ProcessEnv) => Number(execFileSync(process.execPath, ['-e', child], { env, encoding: 'utf8' }).split(' ')[0]);
  const base = without(process.env, 'GLIBC_TUNABLES', ...Object.keys(process.env).filter((name) => name.startsWith('MALLOC_')));
  const withWorkerEnv = hugeKiB(ortProcessEnv(base));
  assert.ok(withWorkerEnv >= 32 * 1024, `${withWorkerEnv} KiB on huge pages`);
  if (thpMode === 'madvise') assert.equal(hugeKiB(base), 0, 'without the tunable glibc asks for no huge pages');
});
