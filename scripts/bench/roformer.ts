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
import type { CheckpointTensor } from '../../src/torch/checkpoint.js';
import { bandBins } from '../../src/roformer/bands.js';
import { parseRoformerConfig, type RoformerConfig } from '../../src/roformer/config.js';
import { RoformerNetwork } from '../../src/roformer/engine.js';
import { rssSampler } from './rss.js';
import { benchTrack, randomTensor } from './synthetic.js';

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
  },
});

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

/** The model and inference sections of the published configs (MSST configs/viperx and configs/KimberleyJensen). */
const PRESETS: Readonly<Record<string, object>> = {
  'viperx-bs': {
    audio: { chunk_size: 352800, num_channels: 2, sample_rate: 44100 },
    model: {
      dim: 512, depth: 12, stereo: true, num_stems: 1, time_transformer_depth: 1, freq_transformer_depth: 1,
      linear_transformer_depth: 0, dim_head: 64, heads: 8, stft_n_fft: 2048, stft_hop_length: 441, stft_win_length: 2048,
      mask_estimator_depth: 2,
    },
    training: { instruments: ['vocals', 'other'], target_instrument: 'vocals' },
    inference: { batch_size: 4, num_overlap: 2 },
  },
  'kim-mel': {
    audio: { chunk_size: 352800, num_channels: 2, sample_rate: 44100 },
    model: {
      dim: 384, depth: 6, stereo: true, num_stems: 1, time_transformer_depth: 1, freq_transformer_depth: 1, num_bands: 60,
      dim_head: 64, heads: 8, sample_rate: 44100, stft_n_fft: 2048, stft_hop_length: 441, stft_win_length: 2048, mask_estimator_depth: 2,
    },
    training: { instruments: ['vocals', 'other'], target_instrument: 'vocals' },
    inference: { batch_size: 4, num_overlap: 2 },
  },
};

/** Every parameter a RoFormer of this config has, named as in its state_dict, with random values. */
function randomState(config: RoformerConfig): Map<string, CheckpointTensor> {
  const state = new Map<string, CheckpointTensor>();
  const seed = { seed: 1234 };
  const { dim, heads, dimHead } = config;
  const inner = heads * dimHead;
  const linear = (name: string, out: number, inputs: number, bias = true) => {
    state.set(`${name}.weight`, randomTensor([out, inputs], 1 / Math.sqrt(inputs), seed));
    if (bias) state.set(`${name}.bias`, randomTensor([out], 0.05, seed));
  };
  const gamma = (name: string, size: number) => state.set(name, { shape: [size], data: new Float32Array(size).fill(1) });
  const widths = bandBins(config).map((bins) => 2 * config.channels * bins.length);
  widths.forEach((width, b) => {
    gamma(`band_split.to_features.${b}.0.gamma`, width);
    linear(`band_split.to_features.${b}.1`, dim, width);
  });
  const transformer = (prefix: string, depth: number, kind: 'rotary' | 'linear') => {
    for (let j = 0; j < depth; j++) {
      const at = `${prefix}.layers.${j}`;
      gamma(`${at}.0.norm.gamma`, dim);
      if (kind === 'linear') {
        linear(`${at}.0.to_qkv.0`, 3 * inner, dim, false);
        state.set(`${at}.0.temperature`, { shape: [heads, 1, 1], data: new Float32Array(heads).fill(1) });
        linear(`${at}.0.to_out.1`, dim, inner, false);
      } else {
        linear(`${at}.0.to_qkv`, 3 * inner, dim, false);
        linear(`${at}.0.to_gates`, heads, dim);
        linear(`${at}.0.to_out.0`, dim, inner, false);
        const freqs = Float32Array.from({ length: dimHead / 2 }, (_, i) => 1 / 10000 ** ((2 * i) / dimHead));
        state.set(`${at}.0.rotary_embed.freqs`, { shape: [dimHead / 2], data: freqs });
      }
      gamma(`${at}.1.net.0.gamma`, dim);
      linear(`${at}.1.net.1`, 4 * dim, dim);
      linear(`${at}.1.net.4`, dim, 4 * dim);
    }
    if (config.type === 'mel_band_roformer') gamma(`${prefix}.norm.gamma`, dim);
  };
  for (let i = 0; i < config.depth; i++) {
    let k = 0;
    if (config.linearDepth > 0) transformer(`layers.${i}.${k++}`, config.linearDepth, 'linear');
    transformer(`layers.${i}.${k++}`, config.timeDepth, 'rotary');
    transformer(`layers.${i}.${k++}`, config.freqDepth, 'rotary');
  }
  if (config.type === 'bs_roformer') gamma('final_norm.gamma', dim);
  const linears = config.type === 'bs_roformer' ? config.maskEstimatorDepth : config.maskEstimatorDepth + 1;
  const hidden = dim * config.mlpExpansionFactor;
  for (let s = 0; s < config.numStems; s++) {
    widths.forEach((width, b) => {
      for (let l = 0; l < linears; l++) {
        linear(`mask_estimators.${s}.to_freqs.${b}.0.${2 * l}`, l === linears - 1 ? 2 * width : hidden, l === 0 ? dim : hidden);
      }
    });
  }
  return state;
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
  const stages = RoformerNetwork.writeStages(config, state, values['build-only']);
  const parameters = [...state.values()].reduce((sum, t) => sum + t.data.length, 0);
  process.stdout.write(JSON.stringify({ millions: (parameters / 1e6).toFixed(1), stages }));
  process.exit(0);
}
const loadStarted = performance.now();
if (values.checkpoint) {
  network = await RoformerNetwork.open(values.checkpoint, { cacheDir: work, intraOpThreads: threads, onTiming, ...(values.config ? { configPath: values.config } : {}) });
} else {
  const config = presetConfig();
  const args = ['--import', 'tsx', path.resolve(import.meta.dirname, 'roformer.ts'), '--preset', values.preset, '--build-only', work, ...(values.depth ? ['--depth', values.depth] : []), ...(values.set ?? []).flatMap((pair) => ['--set', pair])];
  const built = JSON.parse(execFileSync(process.execPath, args, { encoding: 'utf8' })) as { millions: string; stages: Parameters<typeof RoformerNetwork.fromStages>[2] };
  console.log(`model           ${values.preset}: ${config.type}, dim ${config.dim}, depth ${config.depth}, ${built.millions} M parameters (random), ${built.stages.length} graphs`);
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
