/**
 * RoFormer engine speed and memory on a full-size network with random weights: the published
 * hyper-parameters of viperx's BS-RoFormer 1297 (`--preset viperx-bs`, 159.8 M parameters) or
 * of Kim's Mel-Band RoFormer vocals (`--preset kim-mel`, 228.2 M), built here (no download),
 * converted to ONNX and run through MSST's demix on `--seconds` of synthetic music.
 *
 *   node --import tsx scripts/bench/roformer.ts [--preset viperx-bs|kim-mel] [--seconds 20] [--threads 2]
 *        [--depth N] [--set field=value]          (fewer blocks, other sizes: where the memory goes)
 *        [--main-thread]                         (run on the main thread instead of a worker, as serve/split do)
 *        [--checkpoint X.ckpt --config X.yaml]   (a real checkpoint instead of random weights)
 *        [--precision fp32|int8]                 (int8: the matrix products in int8, onnx/quantize.ts)
 *        [--precision fp32,int8 --runs N]        (each variant in a fresh child process, interleaved, N times)
 *
 * Prints the conversion and load times, seconds per chunk and per minute of audio, where the
 * time goes (spectrum, graph, masks + inverse) and the peak RSS while separating.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { isMainThread, Worker } from 'node:worker_threads';
import { parsePrecision } from '../../src/onnx/quantize.js';
import { parseRoformerConfig, type RoformerConfig } from '../../src/roformer/config.js';
import { RoformerNetwork } from '../../src/roformer/engine.js';
import { PRESETS, randomState } from './roformer-random.js';
import { rssSampler } from './rss.js';

const { values } = parseArgs({
  options: {
    preset: { type: 'string', default: 'viperx-bs' },
    seconds: { type: 'string', default: '20' },
    threads: { type: 'string', default: '2' },
    checkpoint: { type: 'string' },
    config: { type: 'string' },
    'build-only': { type: 'string' },
    depth: { type: 'string' },
    set: { type: 'string', multiple: true },
    'main-thread': { type: 'boolean', default: false },
    precision: { type: 'string', default: 'fp32' },
    runs: { type: 'string', default: '1' },
  },
});

const variants = values.precision.split(',').map((name) => parsePrecision(name));
if (isMainThread && variants.length > 1) {
  // Interleaved (fp32, int8, fp32, …) so other load on the box hits every variant alike.
  const own = process.argv.slice(2).filter((arg, i, all) => arg !== '--precision' && all[i - 1] !== '--precision' && arg !== '--runs' && all[i - 1] !== '--runs');
  for (let run = 1; run <= Number(values.runs); run++) {
    for (const variant of variants) {
      console.log(`--- run ${run}, ${variant}`);
      execFileSync(process.execPath, ['--import', 'tsx', path.resolve(import.meta.dirname, 'roformer.ts'), ...own, '--precision', variant], { stdio: 'inherit' });
    }
  }
  process.exit(0);
}
const precision = variants[0] ?? 'fp32';

if (isMainThread && !values['build-only'] && !values['main-thread']) {
  // This same script, with the same argv, in a worker thread (as serve and split run models) that registers tsx first.
  const script = JSON.stringify(import.meta.url);
  const worker = new Worker(`import('tsx/esm/api').then(({ register }) => { register(); return import(${script}); })`, { eval: true, argv: process.argv.slice(2) });
  process.exit(await new Promise<number>((resolve) => worker.once('exit', resolve)));
}

function presetConfig(): RoformerConfig {
  const preset = PRESETS[values.preset];
  if (preset === undefined) throw new Error(`--preset must be one of ${Object.keys(PRESETS).join(', ')}`);
  const config = parseRoformerConfig(preset, values.preset);
  const overrides = Object.fromEntries((values.set ?? []).map((pair) => [pair.split('=')[0], Number(pair.split('=')[1])]));
  return { ...config, ...(values.depth === undefined ? {} : { depth: Number(values.depth) }), ...overrides };
}

/** `seconds` of stereo "music": two detuned tones, a bass and noise bursts. */
function benchTrack(seconds: number, rate: number, channels: number): Float32Array {
  const length = Math.round(seconds * rate);
  const data = new Float32Array(channels * length);
  let noise = 7;
  for (let c = 0; c < channels; c++) {
    for (let i = 0; i < length; i++) {
      const t = i / rate;
      noise = (Math.imul(noise, 1664525) + 1013904223) >>> 0;
      const burst = (t * 4) % 1 < 0.1 ? (noise / 4294967296 - 0.5) * 0.3 : 0;
      data[c * length + i] = 0.2 * Math.sin(2 * Math.PI * (220 + c) * t) + 0.2 * Math.sin(2 * Math.PI * 55 * t) + burst;
    }
  }
  return data;
}

const mb = (bytes: number): string => (bytes / 2 ** 20).toFixed(0);
const timings = { stft: 0, graph: 0, istft: 0 };
const onTiming = (part: keyof typeof timings, ms: number) => void (timings[part] += ms);
const threads = Number(values.threads);
const work = mkdtempSync(path.join(tmpdir(), 'stemsplit-bench-roformer-'));

let network: RoformerNetwork;
const sampler = rssSampler();
if (values['build-only']) {
  // The child process that writes the random network's graph, so the measured process holds no weights of its own.
  const config = presetConfig();
  const state = randomState(config);
  const stages = RoformerNetwork.writeStages(config, state, values['build-only'], precision);
  const parameters = [...state.values()].reduce((sum, t) => sum + t.data.length, 0);
  process.stdout.write(JSON.stringify({ millions: (parameters / 1e6).toFixed(1), stages }));
  process.exit(0);
}
const loadStarted = performance.now();
if (values.checkpoint) {
  network = await RoformerNetwork.open(values.checkpoint, { cacheDir: work, intraOpThreads: threads, precision, onTiming, ...(values.config ? { configPath: values.config } : {}) });
} else {
  const config = presetConfig();
  const args = ['--import', 'tsx', path.resolve(import.meta.dirname, 'roformer.ts'), '--preset', values.preset, '--build-only', work, '--precision', precision, ...(values.depth ? ['--depth', values.depth] : []), ...(values.set ?? []).flatMap((pair) => ['--set', pair])];
  const built = JSON.parse(execFileSync(process.execPath, args, { encoding: 'utf8' })) as { millions: string; stages: Parameters<typeof RoformerNetwork.fromStages>[2] };
  console.log(`model           ${values.preset}: ${config.type}, dim ${config.dim}, depth ${config.depth}, ${built.millions} M parameters (random), ${built.stages.length} graphs, ${precision}`);
  network = await RoformerNetwork.fromStages(config, work, built.stages, { intraOpThreads: threads, onTiming });
}
const loadSeconds = (performance.now() - loadStarted) / 1000;
const loadPeak = sampler.peakBytes();
const { config } = network;
const seconds = Number(values.seconds);
const track = benchTrack(seconds, config.sampleRate, config.channels);

sampler.reset();
const chunkMs: number[] = [];
let last = performance.now();
const cpuStarted = process.cpuUsage();
const started = performance.now();
const out = await network.demixTrack(track, {
  onProgress: () => {
    const now = performance.now();
    chunkMs.push(now - last);
    last = now;
  },
});
const wallMs = performance.now() - started;
const cpu = process.cpuUsage(cpuStarted);
const peak = await sampler.stop();
await network.release();
rmSync(work, { recursive: true, force: true });

const sorted = [...chunkMs].sort((a, b) => a - b);
const medianChunk = sorted[Math.floor(sorted.length / 2)] ?? 0;
const step = Math.floor(config.chunkSize / config.numOverlap) / config.sampleRate;
const line = (label: string, ms: number) => `  ${label.padEnd(20)} ${(ms / 1000).toFixed(2).padStart(8)} s  ${((100 * ms) / wallMs).toFixed(1).padStart(5)} %`;
console.log(`audio           ${seconds} s, ${chunkMs.length} chunks of ${config.chunkSize} samples (num_overlap ${config.numOverlap}), ${threads} intra-op threads`);
console.log(`graph load      ${loadSeconds.toFixed(1)} s, peak RSS ${mb(loadPeak)} MiB`);
console.log(`separation      ${(wallMs / 1000).toFixed(1)} s wall, ${((cpu.user + cpu.system) / 1e6).toFixed(1)} s CPU (${(cpu.system / 1e6).toFixed(1)} s of it in the kernel)`);
console.log(`per chunk       median ${(medianChunk / 1000).toFixed(2)} s (one chunk per ${step.toFixed(2)} s of audio)`);
console.log(`speed           ${((wallMs / 1000) * (60 / seconds)).toFixed(1)} s per minute of audio (this track, borders included); ${((medianChunk / 1000) * (60 / step)).toFixed(1)} s per minute on a long track`);
console.log('where the time goes');
console.log(line('spectrum + features', timings.stft));
console.log(line('graph (ORT)', timings.graph));
console.log(line('masks + inverse', timings.istft));
console.log(`peak RSS        ${mb(peak)} MiB while separating (input ${mb(track.byteLength)} MiB, output ${mb(out.byteLength)} MiB); process max ${mb(process.resourceUsage().maxRSS * 1024)} MiB`);
