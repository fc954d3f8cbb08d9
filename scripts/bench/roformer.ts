/**
 * RoFormer engine speed and memory on a full-size network with random weights: the published
 * hyper-parameters of viperx's BS-RoFormer 1297 (`--preset viperx-bs`, 159.8 M parameters) or
 * of Kim's Mel-Band RoFormer vocals (`--preset kim-mel`, 228.2 M), built here (no download),
 * converted to ONNX and run through MSST's demix on `--seconds` of synthetic music.
 *
 *   node --import tsx scripts/bench/roformer.ts [--preset viperx-bs|kim-mel] [--seconds 20] [--threads 2]
 *        [--depth N] [--set field=value]          (fewer blocks, other sizes: where the memory goes)
 *        [--in-process]                         (run here, not in a worker process as serve/split do)
 *        [--checkpoint X.ckpt --config X.yaml]   (a real checkpoint instead of random weights)
 *        [--precision fp32|int8]                 (int8: the matrix products in int8, onnx/quantize.ts)
 *        [--precision fp32,int8 --runs N]        (each variant in a fresh child process, interleaved, N times)
 *        [--msst /path/to/Music-Source-Separation-Training [--python python3] [--reference-env user|worker]]
 *                                                (then MSST's own PyTorch inference of the same weights on the same
 *                                                 track, from the preset's published config in that checkout:
 *                                                 scripts/bench/msst_reference.py; flash_attn off, as torch 1.13 has none)
 *
 * Prints the conversion and load times, seconds per chunk and per minute of audio, where the
 * time goes (spectrum, graph, masks + inverse) and the peak RSS while separating.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { parsePrecision } from '../../src/onnx/quantize.js';
import { parseRoformerConfig, type RoformerConfig } from '../../src/roformer/config.js';
import { RoformerNetwork } from '../../src/roformer/engine.js';
import { PRESETS, randomState } from './roformer-random.js';
import { rssSampler } from './rss.js';
import { answerBuilt, buildInChild, chunkTimings, mb, measureDemix, printDemixRun, referenceEnv, rerunAsSplitWorker, runningAsSplitWorker, stemSnrs, writeWeightBlob } from './synthetic.js';

/** Each preset's published config in an MSST checkout, and the model type MSST builds it as. */
const PUBLISHED: Readonly<Record<string, { readonly modelType: string; readonly config: string }>> = {
  'viperx-bs': { modelType: 'bs_roformer', config: 'configs/viperx/model_bs_roformer_ep_317_sdr_12.9755.yaml' },
  'kim-mel': { modelType: 'mel_band_roformer', config: 'configs/KimberleyJensen/config_vocals_mel_band_roformer_kj.yaml' },
};

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
    'in-process': { type: 'boolean', default: false },
    precision: { type: 'string', default: 'fp32' },
    runs: { type: 'string', default: '1' },
    msst: { type: 'string' },
    python: { type: 'string', default: '/usr/bin/python3' },
    'reference-env': { type: 'string', default: 'user' },
  },
});

const variants = values.precision.split(',').map((name) => parsePrecision(name));
if (!runningAsSplitWorker() && variants.length > 1) {
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

rerunAsSplitWorker(import.meta.url, Boolean(values['build-only']) || values['in-process']);

function presetConfig(): RoformerConfig {
  const preset = PRESETS[values.preset];
  if (preset === undefined) throw new Error(`--preset must be one of ${Object.keys(PRESETS).join(', ')}`);
  const config = parseRoformerConfig(preset, values.preset);
  const overrides = Object.fromEntries((values.set ?? []).map((pair) => [pair.split('=')[0], Number(pair.split('=')[1])]));
  return { ...config, ...(values.depth === undefined ? {} : { depth: Number(values.depth) }), ...overrides };
}

const { timings, onTiming } = chunkTimings();
const threads = Number(values.threads);
const work = mkdtempSync(path.join(tmpdir(), 'stemsplit-bench-roformer-'));

let network: RoformerNetwork;
const sampler = rssSampler();
if (values['build-only']) {
  // The child process that writes the random network's graph, so the measured process holds no weights of its own.
  const config = presetConfig();
  const state = randomState(config);
  const stages = RoformerNetwork.writeStages(config, state, values['build-only'], precision);
  if (values.msst) writeWeightBlob(state, values['build-only'], 'weights.bin');
  answerBuilt(state, stages);
}
const loadStarted = performance.now();
if (values.checkpoint) {
  network = await RoformerNetwork.open(values.checkpoint, { cacheDir: work, intraOpThreads: threads, precision, onTiming, ...(values.config ? { configPath: values.config } : {}) });
} else {
  const config = presetConfig();
  const args = ['--preset', values.preset, '--build-only', work, '--precision', precision, ...(values.msst ? ['--msst', values.msst] : []), ...(values.depth ? ['--depth', values.depth] : []), ...(values.set ?? []).flatMap((pair) => ['--set', pair])];
  const built = buildInChild(path.resolve(import.meta.dirname, 'roformer.ts'), args);
  console.log(`model           ${values.preset}: ${config.type}, dim ${config.dim}, depth ${config.depth}, ${built.millions} M parameters (random), ${built.stages.length} graphs, ${precision}`);
  network = await RoformerNetwork.fromStages(config, work, built.stages, { intraOpThreads: threads, onTiming });
}
const loadSeconds = (performance.now() - loadStarted) / 1000;
const loadPeak = sampler.peakBytes();
const { config } = network;
const seconds = Number(values.seconds);
const run = await measureDemix(network, seconds, sampler);

printDemixRun(run, {
  ...config,
  seconds,
  threads,
  load: `${loadSeconds.toFixed(1)} s, peak RSS ${mb(loadPeak)} MiB`,
  parts: ['spectrum + features', 'graph (ORT)', 'masks + inverse'],
  timings,
});

if (values.msst) compareWithMsst(values.msst, run.track, run.out, (run.wallMs / 1000) * (60 / seconds), run.peak);
rmSync(work, { recursive: true, force: true });

/** MSST's PyTorch inference of the same random weights on the same track, from the preset's published config. */
function compareWithMsst(msst: string, track: Float32Array, out: Float32Array, perMinute: number, peak: number): void {
  const published = PUBLISHED[values.preset];
  if (published === undefined || values.checkpoint || values.depth || values.set) throw new Error('--msst compares a preset as published: no --checkpoint, --depth or --set');
  writeFileSync(path.join(work, 'track.f32'), track);
  const report = JSON.parse(
    execFileSync(
      values.python,
      [
        path.resolve(import.meta.dirname, 'msst_reference.py'), '--msst', msst, '--model-type', published.modelType, '--config', path.join(msst, published.config),
        '--weights', work, '--track', path.join(work, 'track.f32'), '--channels', String(network.settings.channels), '--out', path.join(work, 'msst.f32'),
        '--threads', String(threads), '--set', 'model.flash_attn=false',
      ],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1 << 24, env: referenceEnv(values['reference-env']) },
    ).trim().split('\n').pop() as string,
  ) as { torch: string; threads: number; batch_size: number; load_seconds: number; seconds: number; cpu_seconds: number; peak_rss_bytes: number; max_rss_bytes: number };
  const theirs = readFileSync(path.join(work, 'msst.f32'));
  const reference = new Float32Array(theirs.buffer, theirs.byteOffset, theirs.byteLength / 4);
  // MSST writes the target instrument alone where the config names one; compare the stems it wrote.
  const stems = reference.length / track.length;
  const snrs = stemSnrs(reference, out.subarray(0, reference.length), stems);
  const theirsPerMinute = report.seconds * (60 / seconds);
  console.log(`MSST PyTorch    torch ${report.torch}, ${report.threads} threads, batch_size ${report.batch_size}: load ${report.load_seconds.toFixed(1)} s, separation ${report.seconds.toFixed(1)} s wall, ${report.cpu_seconds.toFixed(1)} s CPU`);
  console.log(`                ${theirsPerMinute.toFixed(1)} s per minute of audio; peak RSS ${mb(report.peak_rss_bytes)} MiB while separating, process max ${mb(report.max_rss_bytes)} MiB`);
  console.log(`side by side    stemsplit ${(theirsPerMinute / perMinute).toFixed(2)}× faster, peak RSS ${mb(peak)} vs ${mb(report.peak_rss_bytes)} MiB`);
  console.log(`stems vs MSST   ${snrs.map((s) => s.toFixed(1)).join(' / ')} dB`);
}
