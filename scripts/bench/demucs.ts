/**
 * Demucs engine speed and memory: separates `--seconds` of audio with an HTDemucs
 * checkpoint (default: the full-size fixture, 42 M parameters) through the separation
 * pipeline (overlap 0.25, shifts 0) and prints where the time goes and the peak RSS.
 *
 *   node --import tsx scripts/bench/demucs.ts [--checkpoint FILE] [--seconds 60] [--threads 2]
 *        [--cache-dir DIR] [--shifts 0] [--cold] [--runs 1] [--in-process] [--precision fp32|int8]
 *
 *   node --import tsx scripts/bench/demucs.ts --precision fp32,int8,pytorch --runs 3 [--python /usr/bin/python3]
 *
 * With several precisions (a list), each run separates the track once per precision, each in a
 * fresh child process, interleaved (fp32, int8, pytorch, fp32, …), so other load on the box hits
 * every variant alike; it prints each variant's fastest run, highest peak and the ratios.
 * `pytorch` is the official demucs (`demucs.apply.apply_model`, shifts 0, overlap 0.25, the same
 * normalization, `torch.set_num_threads(--threads)`), run by `--python` in an environment where
 * `import demucs` works (`pip install demucs`, or PYTHONPATH at a checkout); nothing of it is part
 * of stemsplit. Its peak RSS is the Python process's maximum (model loading included).
 *
 * With `--runs N` the track is separated N times and the fastest run is reported (on a
 * shared machine the fastest run is the one least disturbed by other work); the parts'
 * times and the peak RSS cover that run.
 * The checkpoint is converted first in a child process (with `--cold` into an empty cache,
 * so the conversion time is the cold start), so the measured process starts as a real one
 * does: with the converted graphs in the cache.
 * Peak RSS is sampled every 5 ms by a worker thread (ONNX Runtime blocks the one it runs on).
 * The separation runs in a process of its own started with ONNX Runtime's allocator settings, as
 * `serve` and `split` run it (src/split-worker/worker-pool.ts); `--in-process` runs it in this process
 * instead, for comparison.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { convertCheckpoint, loadDemucs } from '../../src/demucs/index.js';
import { parsePrecision } from '../../src/onnx/quantize.js';
import { separate } from '../../src/separation/index.js';
import { rssSampler } from './rss.js';
import { demucsFamily } from '../../src/demucs/family.js';
import { rerunAsSplitWorker, runningAsSplitWorker } from './synthetic.js';

const { values } = parseArgs({
  options: {
    checkpoint: { type: 'string', default: '../shared/fixtures/demucs/htdemucs_full_random.th' },
    seconds: { type: 'string', default: '60' },
    threads: { type: 'string', default: '2' },
    'cache-dir': { type: 'string', default: '.cache/bench-demucs' },
    shifts: { type: 'string', default: '0' },
    cold: { type: 'boolean', default: false },
    runs: { type: 'string', default: '1' },
    'convert-only': { type: 'boolean', default: false },
    'in-process': { type: 'boolean', default: false },
    precision: { type: 'string', default: 'fp32' },
    python: { type: 'string', default: '/usr/bin/python3' },
    json: { type: 'boolean', default: false },
  },
});

const variants = values.precision.split(',');
if (!runningAsSplitWorker() && variants.length > 1) {
  await compareVariants(variants);
  process.exit(0);
}
const precision = parsePrecision(values.precision);

rerunAsSplitWorker(import.meta.url, values['in-process'] || Boolean(values['convert-only']), demucsFamily.allocator?.({ path: values.checkpoint }));
const checkpoint = values.checkpoint;
const cacheDir = values.cold ? mkdtempSync(path.join(tmpdir(), 'stemsplit-bench-demucs-')) : values['cache-dir'];

if (values['convert-only']) {
  const started = performance.now();
  await convertCheckpoint(checkpoint, cacheDir, { precision });
  const seconds = (performance.now() - started) / 1000;
  process.stdout.write(JSON.stringify({ seconds, maxRssMb: process.resourceUsage().maxRSS / 1024 }));
  process.exit(0);
}

const mb = (bytes: number): string => (bytes / 2 ** 20).toFixed(0);

/** `seconds` of stereo audio: the fixture's 9 s test track, repeated. */
function benchTrack(seconds: number, sampleRate: number): { data: Float32Array; length: number } {
  const bytes = readFileSync('../shared/fixtures/demucs/htdemucs_small.separate.in.f32');
  const source = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
  const sourceLength = source.length / 2;
  const length = Math.round(seconds * sampleRate);
  const data = new Float32Array(2 * length);
  for (let channel = 0; channel < 2; channel++) {
    for (let i = 0; i < length; i++) data[channel * length + i] = source[channel * sourceLength + (i % sourceLength)] as number;
  }
  return { data, length };
}

const cold = JSON.parse(
  execFileSync(
    process.execPath,
    [
      '--import',
      'tsx',
      path.resolve(import.meta.dirname, 'demucs.ts'),
      '--convert-only',
      '--checkpoint',
      checkpoint,
      '--cache-dir',
      cacheDir,
      '--precision',
      precision,
    ],
    {
      encoding: 'utf8',
    },
  ),
) as { seconds: number; maxRssMb: number };

const sampler = rssSampler();
const timings = new Map<string, number>();
let modelMs = 0;
const loadStarted = performance.now();
const model = await loadDemucs(checkpoint, {
  cacheDir,
  intraOpThreads: Number(values.threads),
  precision,
  onTiming: (part, ms) => timings.set(part, (timings.get(part) ?? 0) + ms),
});
const loadMs = performance.now() - loadStarted;
const loadPeak = sampler.peakBytes();

// Count the time inside the model (the rest of `separate` is the pipeline's chunking and overlap-add).
const segmentMs: number[] = [];
const timedModel = {
  name: model.name,
  sampleRate: model.sampleRate,
  sources: model.sources,
  segmentSamples: model.segmentSamples,
  normalize: model.normalize,
  async run(segment: Float32Array): Promise<Float32Array> {
    const started = performance.now();
    const out = await model.run(segment);
    const elapsed = performance.now() - started;
    modelMs += elapsed;
    segmentMs.push(elapsed);
    return out;
  },
  dispose: () => model.dispose(),
};

const seconds = Number(values.seconds);
const track = benchTrack(seconds, model.sampleRate);

interface RunResult {
  readonly wallMs: number;
  readonly cpuMs: number;
  readonly peakBytes: number;
  readonly modelMs: number;
  readonly segmentMs: readonly number[];
  readonly timings: ReadonlyMap<string, number>;
  readonly outputBytes: number;
}

async function measuredRun(): Promise<RunResult> {
  timings.clear();
  segmentMs.length = 0;
  modelMs = 0;
  sampler.reset();
  const cpuStarted = process.cpuUsage();
  const started = performance.now();
  const stems = await separate(timedModel, track, { overlap: 0.25, shifts: Number(values.shifts) });
  const wallMs = performance.now() - started;
  const cpu = process.cpuUsage(cpuStarted);
  return {
    wallMs,
    cpuMs: (cpu.user + cpu.system) / 1000,
    peakBytes: sampler.peakBytes(),
    modelMs,
    segmentMs: [...segmentMs],
    timings: new Map(timings),
    outputBytes: stems.reduce((sum, stem) => sum + stem.byteLength, 0),
  };
}

const results: RunResult[] = [];
for (let run = 0; run < Number(values.runs); run++) results.push(await measuredRun());
await sampler.stop();
await model.dispose();
const best = results.reduce((a, b) => (b.wallMs < a.wallMs ? b : a));
const { wallMs, outputBytes } = best;
const separatePeak = Math.max(...results.map((r) => r.peakBytes));

if (values.json) {
  process.stdout.write(`${JSON.stringify({ wallMs, cpuMs: best.cpuMs, peakMiB: separatePeak / 2 ** 20, segments: best.segmentMs.length })}\n`);
  process.exit(0);
}
const graphMs = [...best.timings].filter(([part]) => part.startsWith('graph:')).reduce((sum, [, ms]) => sum + ms, 0);
const line = (label: string, ms: number): string =>
  `  ${label.padEnd(22)} ${(ms / 1000).toFixed(2).padStart(8)} s  ${((100 * ms) / wallMs).toFixed(1).padStart(5)} %`;

console.log(`checkpoint      ${checkpoint} (${precision})`);
console.log(
  `process         ${runningAsSplitWorker() ? "its own, with the split worker's allocator settings, as serve and split run it" : 'this one (--in-process)'}`,
);
console.log(
  `audio           ${seconds} s, ${segmentMs.length} segments of ${model.segmentSamples} samples, shifts ${values.shifts}, ${values.threads} intra-op threads`,
);
console.log(
  `conversion      ${cold.seconds.toFixed(1)} s${values.cold ? ' (cold: empty cache)' : ' (cache as found; --cold for a cold start)'}, peak RSS ${cold.maxRssMb.toFixed(0)} MiB in its own process`,
);
console.log(`load            ${(loadMs / 1000).toFixed(2)} s from the cache, peak RSS ${mb(loadPeak)} MiB`);
if (results.length > 1) console.log(`runs            ${results.map((r) => (r.wallMs / 1000).toFixed(1)).join(', ')} s wall; the fastest is reported`);
console.log(`separation      ${(wallMs / 1000).toFixed(2)} s wall, ${(best.cpuMs / 1000).toFixed(2)} s CPU`);
console.log(`speed           ${((wallMs / 1000) * (60 / seconds)).toFixed(1)} s per minute of audio`);
console.log(
  `per segment     first ${(best.segmentMs[0] ?? 0).toFixed(0)} ms, median ${median(best.segmentMs).toFixed(0)} ms, fastest ${Math.min(...best.segmentMs).toFixed(0)} ms`,
);
console.log('where the time goes');
console.log(line('stft + normalize', best.timings.get('stft') ?? 0));
for (const [part, ms] of best.timings) if (part.startsWith('graph:')) console.log(line(part, ms));
console.log(line('graph total', graphMs));
console.log(line('istft + sum', best.timings.get('istft') ?? 0));
console.log(line('pipeline (overlap-add)', wallMs - best.modelMs));
console.log(
  `peak RSS        ${mb(separatePeak)} MiB during separation${results.length > 1 ? ' (highest over the runs)' : ''} (outputs ${mb(outputBytes)} MiB, input ${mb(track.data.byteLength)} MiB); process max ${mb(process.resourceUsage().maxRSS * 1024)} MiB`,
);

await model.dispose();
if (values.cold) rmSync(cacheDir, { recursive: true, force: true });

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

interface VariantRun {
  readonly wallMs: number;
  readonly cpuMs: number;
  readonly peakMiB: number;
}

/** Runs every variant `--runs` times, interleaved, each in a fresh child process; prints fastest runs, peaks and ratios. */
async function compareVariants(names: readonly string[]): Promise<void> {
  const own = path.resolve(import.meta.dirname, 'demucs.ts');
  const common = [
    '--checkpoint',
    values.checkpoint,
    '--seconds',
    values.seconds,
    '--threads',
    values.threads,
    '--cache-dir',
    values['cache-dir'],
    '--shifts',
    values.shifts,
  ];
  for (const name of names) if (name !== 'pytorch') parsePrecision(name);
  const runs = new Map<string, VariantRun[]>(names.map((name) => [name, []]));
  for (let run = 0; run < Number(values.runs); run++) {
    for (const name of names) {
      const output =
        name === 'pytorch'
          ? execFileSync(values.python, ['-c', pytorchBench(), values.checkpoint, values.seconds, values.threads, values.shifts], {
              encoding: 'utf8',
              maxBuffer: 1 << 26,
            })
          : execFileSync(process.execPath, ['--import', 'tsx', own, ...common, '--precision', name, '--json'], { encoding: 'utf8', maxBuffer: 1 << 26 });
      const result = JSON.parse(output.trim().split('\n').pop() ?? '{}') as VariantRun;
      runs.get(name)?.push(result);
      console.log(
        `run ${run + 1} ${name.padEnd(8)} ${(result.wallMs / 1000).toFixed(1)} s wall, ${(result.cpuMs / 1000).toFixed(1)} s CPU, peak ${result.peakMiB.toFixed(0)} MiB`,
      );
    }
  }
  const seconds = Number(values.seconds);
  const fastest = (name: string): number => Math.min(...(runs.get(name) ?? []).map((r) => r.wallMs));
  console.log(
    `\n${values.checkpoint}, ${seconds} s of audio, ${values.threads} threads, overlap 0.25, shifts ${values.shifts}; fastest of ${values.runs} interleaved runs, highest peak`,
  );
  console.log('variant   s per minute   peak RSS   vs pytorch   vs fp32');
  for (const name of names) {
    const best = fastest(name);
    const peak = Math.max(...(runs.get(name) ?? []).map((r) => r.peakMiB));
    const ratio = (other: string) => (runs.has(other) && other !== name ? `${(fastest(other) / best).toFixed(2)}×` : '—');
    console.log(
      `${name.padEnd(9)} ${((best / 1000) * (60 / seconds)).toFixed(1).padStart(12)}   ${peak.toFixed(0).padStart(5)} MiB   ${ratio('pytorch').padStart(10)}   ${ratio('fp32').padStart(7)}`,
    );
  }
}

/** The official demucs on the same track (the fixture clip repeated), timed around apply_model; argv: checkpoint seconds threads shifts. */
function pytorchBench(): string {
  return `
import json, resource, sys, time
import numpy as np, torch
from demucs.apply import apply_model
from demucs.states import load_model
checkpoint, seconds, threads, shifts = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
torch.set_num_threads(threads)
model = load_model(checkpoint)
model.eval()
clip = np.fromfile('../shared/fixtures/demucs/htdemucs_small.separate.in.f32', dtype=np.float32).reshape(2, -1)
length = round(seconds * model.samplerate)
wav = torch.from_numpy(np.ascontiguousarray(np.tile(clip, (1, length // clip.shape[1] + 1))[:, :length]))
ref = wav.mean(0)
wav = (wav - ref.mean()) / ref.std()
cpu = time.process_time()
started = time.perf_counter()
with torch.no_grad():
    out = apply_model(model, wav[None], shifts=shifts, split=True, overlap=0.25, progress=False)
wall = time.perf_counter() - started
out = out * ref.std() + ref.mean()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({'wallMs': wall * 1000, 'cpuMs': (time.process_time() - cpu) * 1000, 'peakMiB': peak}))
`;
}
