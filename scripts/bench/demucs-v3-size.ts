/**
 * Demucs v3/v2 at their released size: the structure of `hdemucs_mmi` (HDemucs, channels 48; also
 * `mdx_extra`'s members) or of `mdx`'s time-domain member (Demucs, channels 64), from the shared
 * fixture's kwargs widened back to the released ones, with random weights, through one window of
 * N seconds (the model's segment, as a bag's longer segment replaces a model's own): the load, a
 * first and a second run, the process's peak RSS, and the resident memory after each phase. No
 * released weights are needed.
 *
 *   node --import tsx scripts/bench/demucs-v3-size.ts hdemucs 20 [threads] [--cached]
 *   node --import tsx scripts/bench/demucs-v3-size.ts demucs 60
 *
 * Without `--cached` the load converts the stages into a temporary folder, in this process (as a
 * length other than the segment's is converted). With it, this process converts them into a
 * temporary cache (keyed by the fixture file, whose SHA-256 stands in for the random weights'), and
 * a second process loads them from the cache and runs, as every split after a model's first does:
 * its figures are printed, that process started with the Demucs family's allocator settings as a
 * split worker is (a user's MALLOC_* replace them).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { demucsFamily } from '../../src/demucs/family.js';
import { ortProcessEnv } from '../../src/onnx/process-env.js';
import { readDemucsCheckpoint } from '../../src/demucs/checkpoint.js';
import { openV3, type V3Weights } from '../../src/demucs/segment-model-v3.js';
import { parseV3Config } from '../../src/demucs/v3-config.js';
import { v3Parameters } from '../../src/demucs/v3-parameters.js';

const args = process.argv.slice(2);
const flag = (name: string): string | undefined => {
  const at = args.indexOf(name);
  return at < 0 ? undefined : (args.splice(at, 2)[1] ?? '');
};
const childCache = flag('--from-cache');
const cached = args.includes('--cached');
const [kind = 'hdemucs', secondsArg = '5', threadsArg = '2'] = args.filter((arg) => !arg.startsWith('--'));
if (kind !== 'hdemucs' && kind !== 'demucs') throw new Error('usage: demucs-v3-size.ts hdemucs|demucs SECONDS [THREADS] [--cached]');
const fixtures = path.resolve(process.env['STEMSPLIT_SHARED_DIR'] ?? '../shared', 'fixtures', 'demucs-v3');
const fixture = path.join(fixtures, kind === 'hdemucs' ? 'hdemucs_mmi_m0.th' : 'mdx_m0.th');
const checkpoint = readDemucsCheckpoint(fixture);
// The fixtures narrow channels and dconv_comp; everything else is the released models' kwargs.
const kwargs = new Map(checkpoint.kwargs);
kwargs.set('channels', kind === 'hdemucs' ? 48 : 64);
kwargs.set('dconv_comp', 4);
const config = parseV3Config(kind === 'hdemucs' ? 'HDemucs' : 'Demucs', kwargs);

let seed = 1;
const random = (): number => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648 - 0.5) * 0.05;
/** The same random weights each time they are read, as a checkpoint is read again for each window length. */
const readState = (): Map<string, { shape: readonly number[]; data: Float32Array }> => {
  seed = 1;
  return new Map(v3Parameters(config).map(([name, shape]) => [name, { shape, data: Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, random) }]));
};
const parameters = v3Parameters(config).reduce((sum, [, shape]) => sum + shape.reduce((a, b) => a * b, 1), 0);
const options = { intraOpThreads: Number(threadsArg), bagSegment: Number(secondsArg) };
const label = `${kind} (random, released size)`;

/** Resident memory now and the peak so far (MiB), after each phase: where the memory goes. */
const phases: string[] = [];
const phase = (name: string): void => {
  const { rss, arrayBuffers } = process.memoryUsage();
  phases.push(
    `${name} ${(rss / 2 ** 20).toFixed(0)}/${(process.resourceUsage().maxRSS / 1024).toFixed(0)} (JS buffers ${(arrayBuffers / 2 ** 20).toFixed(0)})`,
  );
};

if (cached) {
  const cacheDir = mkdtempSync(path.join(tmpdir(), 'stemsplit-v3-bench-'));
  try {
    let started = performance.now();
    await (await openV3(config, { file: label, read: readState, cache: { checkpoint: fixture, cacheDir } }, kind, options)).dispose();
    console.log(
      `converted into the cache in ${((performance.now() - started) / 1000).toFixed(1)} s (this process's peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB)`,
    );
    started = performance.now();
    const script = fileURLToPath(import.meta.url);
    const child = spawnSync(process.execPath, [...process.execArgv, script, kind, secondsArg, threadsArg, '--from-cache', cacheDir], {
      stdio: 'inherit',
      // As a split worker starts (src/split-worker/worker-pool.ts); a user's MALLOC_* replace these.
      env: ortProcessEnv(process.env, demucsFamily.allocator?.({ path: fixture })),
    });
    if (child.status !== 0) throw new Error(`the loading process failed (${child.status ?? child.signal})`);
  } finally {
    rmSync(cacheDir, { recursive: true, force: true });
  }
} else {
  phase('start');
  const weights: V3Weights =
    childCache === undefined
      ? { file: label, read: readState }
      : {
          file: label,
          read: () => {
            throw new Error('the cache should hold the stages');
          },
          cache: { checkpoint: fixture, cacheDir: childCache },
        };
  let started = performance.now();
  const model = await openV3(config, weights, kind, options);
  const opened = (performance.now() - started) / 1000;
  phase('open');
  const window = model.windowSamples?.(model.segmentSamples) ?? model.segmentSamples;
  const input = Float32Array.from({ length: 2 * window }, () => random() * 10);
  started = performance.now();
  await model.run(input);
  const first = (performance.now() - started) / 1000;
  phase('first run');
  started = performance.now();
  await model.run(input);
  const second = (performance.now() - started) / 1000;
  phase('second run');
  await model.dispose();
  console.log(`RSS now/peak (MiB) after: ${phases.join(', ')}`);
  console.log(
    `${kind}: ${(parameters / 1e6).toFixed(1)} M parameters, window ${window} samples (${secondsArg} s), ${threadsArg} threads, ` +
      `${childCache === undefined ? 'converted in this process' : 'loaded from the cache'}: load ${opened.toFixed(1)} s, first run ${first.toFixed(1)} s, ` +
      `second run ${second.toFixed(1)} s, peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB`,
  );
}
