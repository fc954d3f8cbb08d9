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
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { parsePrecision } from '../../src/onnx/quantize.js';
import { parseRoformerConfig, type RoformerConfig } from '../../src/msst/roformer/config.js';
import { RoformerNetwork } from '../../src/msst/roformer/engine.js';
import { PRESETS, randomState } from './roformer-random.js';
import { rssSampler } from './rss.js';
import {
  answerBuilt,
  buildInChild,
  chunkTimings,
  mb,
  measureDemix,
  msstSideBySide,
  printDemixRun,
  rerunAsSplitWorker,
  runningAsSplitWorker,
  writeWeightBlob,
} from './synthetic.js';

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
  const own = process.argv
    .slice(2)
    .filter((arg, i, all) => arg !== '--precision' && all[i - 1] !== '--precision' && arg !== '--runs' && all[i - 1] !== '--runs');
  for (let run = 1; run <= Number(values.runs); run++) {
    for (const variant of variants) {
      console.log(`--- run ${run}, ${variant}`);
      execFileSync(process.execPath, ['--import', 'tsx', path.resolve(import.meta.dirname, 'roformer.ts'), ...own, '--precision', variant], {
        stdio: 'inherit',
      });
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
  network = await RoformerNetwork.open(values.checkpoint, {
    cacheDir: work,
    intraOpThreads: threads,
    precision,
    onTiming,
    ...(values.config ? { configPath: values.config } : {}),
  });
} else {
  const config = presetConfig();
  const args = [
    '--preset',
    values.preset,
    '--build-only',
    work,
    '--precision',
    precision,
    ...(values.msst ? ['--msst', values.msst] : []),
    ...(values.depth ? ['--depth', values.depth] : []),
    ...(values.set ?? []).flatMap((pair) => ['--set', pair]),
  ];
  const built = buildInChild(path.resolve(import.meta.dirname, 'roformer.ts'), args);
  console.log(
    `model           ${values.preset}: ${config.type}, dim ${config.dim}, depth ${config.depth}, ${built.millions} M parameters (random), ${built.stages.length} graphs, ${precision}`,
  );
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

if (values.msst) {
  const published = PUBLISHED[values.preset];
  if (published === undefined || values.checkpoint || values.depth || values.set)
    throw new Error('--msst compares a preset as published: no --checkpoint, --depth or --set');
  msstSideBySide(
    {
      python: values.python,
      msst: values.msst,
      modelType: published.modelType,
      config: path.join(values.msst, published.config),
      work,
      channels: network.settings.channels,
      threads,
      referenceEnv: values['reference-env'],
      set: ['model.flash_attn=false'],
    },
    { track: run.track, out: run.out, seconds, perMinute: (run.wallMs / 1000) * (60 / seconds), peak: run.peak },
  );
}
rmSync(work, { recursive: true, force: true });
