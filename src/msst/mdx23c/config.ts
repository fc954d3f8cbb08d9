/**
 * An MDX23C (TFC-TDF v3) checkpoint's MSST config: the `audio` section's STFT (n_fft,
 * hop_length, dim_f) and the `model` section (the TFC_TDF_net constructor's options); the rest
 * is msst/config.ts. Every option of the official class is read; any other `model` key is
 * refused by name. Norm and activation names are read as the official `get_norm`/`get_act` read
 * them: `BatchNorm`, `InstanceNorm`, `GroupNorm<g>`, anything else no norm (nn.Identity, e.g.
 * `LayerNorm`); `gelu`, `relu`, `elu<alpha>`.
 */
import { Fft } from '../../dsp/fft.js';
import { msstCommon, MsstDocument, readMsstDocument, type MsstCommon } from '../config.js';

export type Mdx23cNorm =
  | { readonly kind: 'batch' }
  | { readonly kind: 'instance' }
  | { readonly kind: 'group'; readonly groups: number }
  | { readonly kind: 'identity' };

export type Mdx23cAct = { readonly kind: 'gelu' } | { readonly kind: 'relu' } | { readonly kind: 'elu'; readonly alpha: number };

export interface Mdx23cConfig extends MsstCommon {
  readonly nFft: number;
  readonly hop: number;
  /** Bins the network sees (the lowest dim_f of n_fft/2 + 1); the rest are zero on the way back. */
  readonly dimF: number;
  readonly norm: Mdx23cNorm;
  readonly act: Mdx23cAct;
  readonly numSubbands: number;
  readonly numScales: number;
  /** Down/upscale kernel = stride, over [time, frequency]. */
  readonly scale: readonly [number, number];
  readonly blocksPerScale: number;
  /** Channels after the first conv; each scale adds `growth`. */
  readonly numChannels: number;
  readonly growth: number;
  readonly bottleneckFactor: number;
  /** STFT frames of one chunk: 1 + chunk_size / hop_length. */
  readonly frames: number;
}

const MODEL_OPTIONS = new Set(['act', 'bottleneck_factor', 'growth', 'norm', 'num_blocks_per_scale', 'num_channels', 'num_scales', 'num_subbands', 'scale']);

/** `segmentSize`: the run's `--mdxc-segment-size` (msst/config.ts). */
export function readMdx23cConfig(file: string, segmentSize?: number): Mdx23cConfig {
  return mdx23cConfigOf(readMsstDocument(file, segmentSize));
}

/** A parsed yaml document (tests and benchmarks build them in memory). */
export function parseMdx23cConfig(document: unknown, file: string): Mdx23cConfig {
  return mdx23cConfigOf(new MsstDocument(document, file));
}

export function mdx23cConfigOf(doc: MsstDocument): Mdx23cConfig {
  const { model, audio } = doc;
  doc.refuseUnknown('mdx23c', MODEL_OPTIONS);
  const int = doc.int.bind(doc);
  const channelCount = int(audio, 'num_channels', 2, 1);
  if (channelCount > 2) throw doc.fail(`audio.num_channels ${channelCount}: only mono and stereo models are supported`);
  const channels = channelCount as 1 | 2;
  const targets =
    typeof doc.training['target_instrument'] === 'string' ? 1 : Array.isArray(doc.training['instruments']) ? doc.training['instruments'].length : 0;
  if (targets === 0) throw doc.fail('training names no instruments (instruments or target_instrument)');
  const nFft = int(audio, 'n_fft', undefined, 4);
  const hop = int(audio, 'hop_length', undefined, 1);
  const common = msstCommon(doc, { channels, numStems: targets, stemsFrom: 'the number of target instruments', stft: { hop, nFft } });
  const dimF = int(audio, 'dim_f', undefined, 1);
  const numSubbands = int(model, 'num_subbands', undefined, 1);
  const numScales = int(model, 'num_scales', undefined, 0);
  const scale = scalePair(doc);
  const config: Mdx23cConfig = {
    ...common,
    nFft,
    hop,
    dimF,
    norm: normOf(doc.string(model, 'norm')),
    act: actOf(doc, doc.string(model, 'act')),
    numSubbands,
    numScales,
    scale,
    blocksPerScale: int(model, 'num_blocks_per_scale', undefined, 1),
    numChannels: int(model, 'num_channels', undefined, 1),
    growth: int(model, 'growth', undefined, 0),
    bottleneckFactor: int(model, 'bottleneck_factor', undefined, 1),
    frames: 1 + Math.floor(common.chunkSize / hop),
  };
  checkShapes(doc, config);
  return config;
}

function scalePair(doc: MsstDocument): [number, number] {
  const isPositive = (item: unknown): item is number => typeof item === 'number' && Number.isInteger(item) && item >= 1;
  const scale = doc.list(doc.model, 'scale', isPositive, 'positive integers');
  if (scale.length !== 2) throw doc.fail(`scale must be [time, frequency], got ${scale.length} value(s)`);
  return [scale[0] as number, scale[1] as number];
}

/** nn.BatchNorm2d, nn.InstanceNorm2d(affine), nn.GroupNorm(g), or nn.Identity for any other name, as get_norm reads it. */
function normOf(name: string): Mdx23cNorm {
  if (name === 'BatchNorm') return { kind: 'batch' };
  if (name === 'InstanceNorm') return { kind: 'instance' };
  if (name.includes('GroupNorm')) {
    const groups = name.replace('GroupNorm', '');
    // Python's int() accepts surrounding spaces and a sign; a real config writes digits.
    if (!/^\s*\+?\d+\s*$/.test(groups) || Number(groups) < 1) return { kind: 'group', groups: Number.NaN };
    return { kind: 'group', groups: Number(groups) };
  }
  return { kind: 'identity' };
}

function actOf(doc: MsstDocument, name: string): Mdx23cAct {
  if (name === 'gelu') return { kind: 'gelu' };
  if (name === 'relu') return { kind: 'relu' };
  if (name.startsWith('elu')) {
    const alpha = Number(name.slice(3));
    if (name.slice(3).trim() === '' || !Number.isFinite(alpha)) throw doc.fail(`act ${name}: elu needs its alpha, e.g. elu1.0`);
    return { kind: 'elu', alpha };
  }
  throw doc.fail(`act ${name} is not one of gelu, relu, elu<alpha>`);
}

/** The sizes the official network needs to fit together (it fails inside forward otherwise). */
function checkShapes(doc: MsstDocument, config: Mdx23cConfig): void {
  const { nFft, hop, dimF, numSubbands, numScales, scale, chunkSize, frames, norm } = config;
  const bins = Math.floor(nFft / 2) + 1;
  if (nFft % 2 !== 0) throw doc.fail(`n_fft ${nFft} must be even`);
  // Powers of two and the 12K-FFT models' 12288 (2^12·3) alike; another prime factor is a size the FFT does not take.
  if (!Fft.supports(nFft)) throw doc.fail(`n_fft ${nFft} has a prime factor other than 2, 3 and 5, which stemsplit's FFT does not take`);
  if (dimF > bins) throw doc.fail(`dim_f ${dimF} is more than the ${bins} bins of n_fft ${nFft}`);
  if (dimF % numSubbands !== 0) throw doc.fail(`dim_f ${dimF} is not divisible by num_subbands ${numSubbands}`);
  if (chunkSize <= nFft / 2) throw doc.chunkFail(`chunk_size ${chunkSize} must be longer than n_fft / 2 (${nFft / 2}) for the STFT's reflect padding`);
  // The inverse STFT returns hop·(frames − 1) samples; MSST's demix adds them onto chunk_size.
  if (chunkSize % hop !== 0)
    throw doc.chunkFail(`chunk_size ${chunkSize} is not a multiple of hop_length ${hop}, so the network's output is shorter than a chunk`);
  const [timeScale, freqScale] = scale;
  if (frames % timeScale ** numScales !== 0) {
    throw doc.chunkFail(
      `chunk_size ${chunkSize} gives ${frames} STFT frames, not divisible by scale[0]^num_scales = ${timeScale ** numScales} (the U-Net's skips would not line up)`,
    );
  }
  const subbandBins = dimF / numSubbands;
  if (subbandBins % freqScale ** numScales !== 0) {
    throw doc.fail(`dim_f / num_subbands = ${subbandBins} is not divisible by scale[1]^num_scales = ${freqScale ** numScales}`);
  }
  if (Math.floor(subbandBins / freqScale ** numScales / config.bottleneckFactor) < 1) {
    throw doc.fail(`bottleneck_factor ${config.bottleneckFactor} leaves no features at the bottleneck's ${subbandBins / freqScale ** numScales} bins`);
  }
  if (norm.kind === 'group') {
    if (!Number.isInteger(norm.groups)) throw doc.fail('a GroupNorm norm must name its group count, e.g. GroupNorm4');
    for (const width of normWidths(config)) {
      if (width % norm.groups !== 0) throw doc.fail(`GroupNorm${norm.groups} cannot split ${width} channels into equal groups`);
    }
  }
}

/** Every channel count a norm in the network sees (the decoder's blocks see 2c before their first conv). */
function normWidths(config: Mdx23cConfig): number[] {
  const widths: number[] = [];
  let c = config.numChannels;
  for (let i = 0; i < config.numScales; i++) {
    widths.push(c);
    c += config.growth;
  }
  widths.push(c);
  for (let i = 0; i < config.numScales; i++) {
    c -= config.growth;
    widths.push(c + config.growth, 2 * c, c);
  }
  return widths;
}
