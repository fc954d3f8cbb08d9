/**
 * MDX23C speed and memory on a full-size network with random weights: the published
 * hyper-parameters of MDX23C-8KFFT-InstVoc_HQ (`--preset instvoc-hq`: UVR's
 * model_2_stem_full_band_8k.yaml, MSST's configs/config_vocals_mdx23c.yaml), built here (no
 * download), converted to ONNX and run through MSST's demix on `--seconds` of synthetic music.
 * With `--msst DIR` the same weights and track also go through MSST's own PyTorch inference
 * (scripts/bench/msst_reference.py, which imports MSST from that checkout), side by side, with the
 * SNR between the two outputs (both must compute the same function).
 *
 *   node --import tsx scripts/bench/mdx23c.ts [--preset instvoc-hq] [--seconds 20] [--threads 2]
 *        [--set model.num_channels=32 …]        (other sizes: any yaml key, section.key=value)
 *        [--msst /path/to/Music-Source-Separation-Training [--python python3] [--reference-env user|worker]]
 *                                              (PyTorch in the environment the bench started in, or with the split
 *                                               worker's allocator settings, as stemsplit runs)
 *        [--in-process]                        (run here, not in a worker process as serve/split do)
 *        [--winograd-min-channels N]           (3×3 convs from N channels as Winograd; default the graph's, 1e9 none)
 *        [--checkpoint X.ckpt [--config X.yaml]] (a real checkpoint instead of random weights; no --msst)
 *
 * Prints the conversion and load times, seconds per chunk and per minute of audio, where the
 * time goes (STFT, graph, iSTFT) and the peak RSS while separating; with --msst the same for
 * PyTorch and the ratios.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { parseMdx23cConfig, type Mdx23cConfig } from '../../src/msst/mdx23c/config.js';
import { Mdx23cNetwork } from '../../src/msst/mdx23c/engine.js';
import type { CheckpointTensor } from '../../src/torch/checkpoint.js';
import { rssSampler } from './rss.js';
import {
  answerBuilt,
  buildInChild,
  chunkTimings,
  mb,
  measureDemix,
  msstSideBySide,
  printDemixRun,
  randomTensor,
  rerunAsSplitWorker,
  writeWeightBlob,
} from './synthetic.js';

const { values } = parseArgs({
  options: {
    preset: { type: 'string', default: 'instvoc-hq' },
    seconds: { type: 'string', default: '20' },
    threads: { type: 'string', default: '2' },
    set: { type: 'string', multiple: true },
    msst: { type: 'string' },
    python: { type: 'string', default: 'python3' },
    'reference-env': { type: 'string', default: 'user' },
    checkpoint: { type: 'string' },
    config: { type: 'string' },
    'build-only': { type: 'string' },
    'in-process': { type: 'boolean', default: false },
    'winograd-min-channels': { type: 'string' },
  },
});

rerunAsSplitWorker(import.meta.url, Boolean(values['build-only']) || values['in-process']);

/** MDX23C-8KFFT-InstVoc_HQ's published config (the sections inference reads). */
const PRESETS: Readonly<Record<string, Record<string, Record<string, unknown>>>> = {
  'instvoc-hq': {
    audio: { chunk_size: 261120, dim_f: 4096, dim_t: 256, hop_length: 1024, n_fft: 8192, num_channels: 2, sample_rate: 44100, min_mean_abs: 0.001 },
    model: {
      act: 'gelu',
      bottleneck_factor: 4,
      growth: 128,
      norm: 'InstanceNorm',
      num_blocks_per_scale: 2,
      num_channels: 128,
      num_scales: 5,
      num_subbands: 4,
      scale: [2, 2],
    },
    training: { instruments: ['vocals', 'other'], target_instrument: null, use_amp: true },
    inference: { batch_size: 1, dim_t: 256, num_overlap: 4 },
  },
};

/** The preset's yaml document with `--set section.key=value` applied. */
function presetDocument(): Record<string, Record<string, unknown>> {
  const preset = PRESETS[values.preset];
  if (preset === undefined) throw new Error(`--preset must be one of ${Object.keys(PRESETS).join(', ')}`);
  const document = structuredClone(preset);
  for (const pair of values.set ?? []) {
    const match = /^(\w+)\.(\w+)=(.*)$/.exec(pair);
    if (!match) throw new Error(`--set ${pair}: expected section.key=value`);
    const [, section, key, raw] = match as unknown as [string, string, string, string];
    const value = /^-?\d+(\.\d+)?$/.test(raw) ? Number(raw) : raw;
    document[section] = { ...document[section], [key]: value };
  }
  return document;
}

/** Every parameter a TFC_TDF_net of this config has, named as in its state_dict, with random values. */
function randomState(config: Mdx23cConfig): Map<string, CheckpointTensor> {
  const state = new Map<string, CheckpointTensor>();
  const seed = { seed: 4321 };
  const weight = (name: string, shape: number[], fanIn: number) => state.set(name, randomTensor(shape, 1 / Math.sqrt(fanIn), seed));
  const norm = (name: string, channels: number) => {
    const { kind } = config.norm;
    if (kind === 'identity') return;
    state.set(`${name}.weight`, randomTensor([channels], 0.1, seed, 1));
    state.set(`${name}.bias`, randomTensor([channels], 0.05, seed));
    if (kind === 'batch') {
      state.set(`${name}.running_mean`, randomTensor([channels], 0.1, seed));
      state.set(`${name}.running_var`, { shape: [channels], data: new Float32Array(channels).fill(1) });
    }
  };
  const [timeScale, freqScale] = config.scale;
  const tfcTdf = (prefix: string, inChannels: number, channels: number, bins: number) => {
    const narrow = Math.floor(bins / config.bottleneckFactor);
    for (let j = 0; j < config.blocksPerScale; j++) {
      const block = `${prefix}.blocks.${j}`;
      const input = j === 0 ? inChannels : channels;
      norm(`${block}.tfc1.0`, input);
      weight(`${block}.tfc1.2.weight`, [channels, input, 3, 3], 9 * input);
      norm(`${block}.tdf.0`, channels);
      weight(`${block}.tdf.2.weight`, [narrow, bins], bins);
      norm(`${block}.tdf.3`, channels);
      weight(`${block}.tdf.5.weight`, [bins, narrow], narrow);
      norm(`${block}.tfc2.0`, channels);
      weight(`${block}.tfc2.2.weight`, [channels, channels, 3, 3], 9 * channels);
      weight(`${block}.shortcut.weight`, [channels, input, 1, 1], input);
    }
  };
  const inputChannels = config.channels * 2 * config.numSubbands;
  let c = config.numChannels;
  let bins = config.dimF / config.numSubbands;
  const g = config.growth;
  weight('first_conv.weight', [c, inputChannels, 1, 1], inputChannels);
  for (let i = 0; i < config.numScales; i++) {
    tfcTdf(`encoder_blocks.${i}.tfc_tdf`, c, c, bins);
    norm(`encoder_blocks.${i}.downscale.conv.0`, c);
    weight(`encoder_blocks.${i}.downscale.conv.2.weight`, [c + g, c, timeScale, freqScale], c * timeScale * freqScale);
    bins /= freqScale;
    c += g;
  }
  tfcTdf('bottleneck_block', c, c, bins);
  for (let i = 0; i < config.numScales; i++) {
    norm(`decoder_blocks.${i}.upscale.conv.0`, c);
    weight(`decoder_blocks.${i}.upscale.conv.2.weight`, [c, c - g, timeScale, freqScale], c);
    bins *= freqScale;
    c -= g;
    tfcTdf(`decoder_blocks.${i}.tfc_tdf`, 2 * c, c, bins);
  }
  weight('final_conv.0.weight', [c, c + inputChannels, 1, 1], c + inputChannels);
  weight('final_conv.2.weight', [config.instruments.length * inputChannels, c, 1, 1], c);
  return state;
}

const threads = Number(values.threads);

if (values['build-only']) {
  // The child process that writes the random network's graph (and the weights for PyTorch), so the measured process holds no weights of its own.
  const config = parseMdx23cConfig(presetDocument(), values.preset);
  const state = randomState(config);
  const winograd = values['winograd-min-channels'];
  const stages = Mdx23cNetwork.writeStages(config, state, values['build-only'], winograd === undefined ? {} : { winogradMinChannels: Number(winograd) });
  if (values.msst) writeWeightBlob(state, values['build-only'], 'weights.bin');
  answerBuilt(state, stages);
}

const work = mkdtempSync(path.join(tmpdir(), 'stemsplit-bench-mdx23c-'));
const { timings, onTiming } = chunkTimings();
const sampler = rssSampler();
const loadStarted = performance.now();
let network: Mdx23cNetwork;
const configFile = path.join(work, 'model.yaml');
if (values.checkpoint) {
  if (values.msst) throw new Error('--msst compares random weights; leave out --checkpoint');
  network = await Mdx23cNetwork.open(values.checkpoint, {
    cacheDir: work,
    intraOpThreads: threads,
    onTiming,
    ...(values.config ? { configPath: values.config } : {}),
  });
} else {
  const document = presetDocument();
  writeFileSync(configFile, stringify(document));
  const config = parseMdx23cConfig(document, values.preset);
  const args = [
    '--preset',
    values.preset,
    '--build-only',
    work,
    ...(values.set ?? []).flatMap((pair) => ['--set', pair]),
    ...(values.msst ? ['--msst', values.msst] : []),
  ];
  if (values['winograd-min-channels'] !== undefined) args.push('--winograd-min-channels', values['winograd-min-channels']);
  const built = buildInChild(path.resolve(import.meta.dirname, 'mdx23c.ts'), args);
  console.log(
    `model           ${values.preset}: n_fft ${config.nFft}, dim_f ${config.dimF}, ${config.numChannels}+${config.growth} channels × ${config.numScales} scales, ${built.millions} M parameters (random)`,
  );
  network = await Mdx23cNetwork.fromStages(config, work, built.stages, { intraOpThreads: threads, onTiming });
}
const loadSeconds = (performance.now() - loadStarted) / 1000;
const loadPeak = sampler.peakBytes();
const { config } = network;
const seconds = Number(values.seconds);
const run = await measureDemix(network, seconds, sampler);
const { track, out, peak } = run;

const perMinute = printDemixRun(run, {
  ...config,
  seconds,
  threads,
  load: `${loadSeconds.toFixed(1)} s, peak RSS ${mb(loadPeak)} MiB`,
  parts: ['STFT', 'graph (ORT)', 'iSTFT'],
  timings,
});

if (values.msst) {
  msstSideBySide(
    {
      python: values.python,
      msst: values.msst,
      modelType: 'mdx23c',
      config: configFile,
      work,
      channels: config.channels,
      threads,
      referenceEnv: values['reference-env'],
    },
    { track, out, seconds, perMinute, peak },
  );
}
rmSync(work, { recursive: true, force: true });
