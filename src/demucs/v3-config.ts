/**
 * Constructor arguments of Demucs v3's HDemucs (demucs/hdemucs.py) and Demucs v2's time-domain
 * Demucs (demucs/demucs.py): the checkpoint's `kwargs` over the constructor's defaults. Values
 * that would change the network in a way this engine does not build are refused by name.
 */
import { StemsplitError } from '../errors.js';
import { PyFraction } from '../torch/checkpoint.js';
import { PickleTuple, type PickleValue } from '../torch/pickle-values.js';

/** What both classes share: the U-Net's layers and their DConv residual branches. */
interface CommonConfig {
  readonly sources: readonly string[];
  readonly audioChannels: number;
  readonly channels: number;
  readonly growth: number;
  readonly depth: number;
  readonly rewrite: boolean;
  readonly kernelSize: number;
  readonly stride: number;
  readonly context: number;
  readonly normStarts: number;
  readonly normGroups: number;
  readonly dconv: DConvConfig;
  readonly samplerate: number;
  /** The model's own segment in seconds (`model.segment`, which a bag may raise). */
  readonly segment: number;
}

export interface DConvConfig {
  /** 1: encoder only, 2: decoder only, 3: both. */
  readonly mode: number;
  readonly depth: number;
  readonly compress: number;
  /** Layers from this index on have local attention in their DConv branches. */
  readonly attnFrom: number;
  /** Layers from this index on have a BiLSTM in their DConv branches. */
  readonly lstmFrom: number;
}

export interface HDemucsConfig extends CommonConfig {
  readonly klass: 'HDemucs';
  readonly nfft: number;
  readonly cac: boolean;
  /** The MDX-era padding bug: zeros instead of reflection before the STFT, and no offset after the iSTFT. */
  readonly hybridOld: boolean;
  /** Frequency bands of MultiWrap (ratios; empty: off) and how many outer layers it wraps. */
  readonly multiFreqs: readonly number[];
  readonly multiFreqsDepth: number;
  readonly freqEmb: number;
  readonly embScale: number;
  readonly timeStride: number;
  readonly contextEnc: number;
}

export interface DemucsConfig extends CommonConfig {
  readonly klass: 'Demucs';
  readonly glu: boolean;
  readonly gelu: boolean;
  readonly normalize: boolean;
  readonly resample: boolean;
}

export type V3Config = HDemucsConfig | DemucsConfig;

type Defaults = Readonly<Record<string, PickleValue>>;

const COMMON: Defaults = {
  sources: null,
  audio_channels: 2,
  growth: 2,
  depth: 6,
  rewrite: true,
  kernel_size: 8,
  stride: 4,
  context: 1,
  norm_starts: 4,
  norm_groups: 4,
  dconv_mode: 1,
  dconv_depth: 2,
  dconv_comp: 4,
  dconv_attn: 4,
  dconv_lstm: 4,
  dconv_init: 1e-4,
  rescale: 0.1,
  samplerate: 44100,
  segment: 40,
};

const HDEMUCS: Defaults = {
  ...COMMON,
  channels: 48,
  channels_time: null,
  nfft: 4096,
  wiener_iters: 0,
  end_iters: 0,
  wiener_residual: false,
  cac: true,
  hybrid: true,
  hybrid_old: false,
  multi_freqs: null,
  multi_freqs_depth: 2,
  freq_emb: 0.2,
  emb_scale: 10,
  emb_smooth: true,
  time_stride: 2,
  context_enc: 0,
};

const DEMUCS: Defaults = {
  ...COMMON,
  channels: 64,
  lstm_layers: 0,
  gelu: true,
  glu: true,
  normalize: true,
  resample: true,
};

/** The class names these configs are for, as a checkpoint's `klass` names them. */
export const V3_CLASSES: Readonly<Record<string, V3Config['klass']>> = {
  'demucs.hdemucs.HDemucs': 'HDemucs',
  'demucs.demucs.Demucs': 'Demucs',
};

export function parseV3Config(klass: V3Config['klass'], kwargs: ReadonlyMap<string, PickleValue>): V3Config {
  const defaults = klass === 'HDemucs' ? HDEMUCS : DEMUCS;
  for (const name of kwargs.keys()) if (!(name in defaults)) throw unsupported(klass, name, kwargs.get(name));
  const value = (name: string): PickleValue => (kwargs.has(name) ? (kwargs.get(name) as PickleValue) : (defaults[name] as PickleValue));
  const read = readers(klass, value);
  const common = {
    sources: read.sources('sources'),
    audioChannels: read.int('audio_channels'),
    channels: read.int('channels'),
    growth: read.number('growth'),
    depth: read.int('depth'),
    rewrite: read.bool('rewrite'),
    kernelSize: read.int('kernel_size'),
    stride: read.int('stride'),
    context: read.int('context'),
    normStarts: read.int('norm_starts'),
    normGroups: read.int('norm_groups'),
    dconv: {
      mode: read.int('dconv_mode'),
      depth: read.int('dconv_depth'),
      compress: read.number('dconv_comp'),
      attnFrom: read.int('dconv_attn'),
      lstmFrom: read.int('dconv_lstm'),
    },
    samplerate: read.int('samplerate'),
    segment: read.seconds('segment'),
  };
  read.require('audio_channels', common.audioChannels === 2);
  read.require('dconv_mode', common.dconv.mode >= 0 && common.dconv.mode <= 3);
  // Far above every released model, far below what would exhaust memory before a tensor is read.
  const within = (name: string, value: number, min: number, max: number): void => read.require(name, value >= min && value <= max);
  within('depth', common.depth, 1, 16);
  within('channels', common.channels, 1, 4096);
  within('growth', common.growth, 1, 4);
  within('kernel_size', common.kernelSize, 1, 64);
  within('stride', common.stride, 1, 64);
  within('context', common.context, 0, 16);
  within('norm_groups', common.normGroups, 1, 4096);
  within('dconv_depth', Math.abs(common.dconv.depth), 0, 16);
  within('dconv_comp', common.dconv.compress, 1, 4096);
  within('samplerate', common.samplerate, 1, 384_000);
  within('segment', common.segment, 0.01, 600);
  within('sources', common.sources.length, 1, 64);
  if (klass === 'Demucs') {
    read.require('lstm_layers', read.int('lstm_layers') === 0);
    return { klass, ...common, glu: read.bool('glu'), gelu: read.bool('gelu'), normalize: read.bool('normalize'), resample: read.bool('resample') };
  }
  read.require('hybrid', read.bool('hybrid'));
  read.require('channels_time', value('channels_time') === null);
  read.require('wiener_iters', read.int('wiener_iters') === 0);
  read.require('wiener_residual', !read.bool('wiener_residual'));
  const nfft = read.int('nfft');
  read.require('nfft', nfft >= 16 && nfft <= 65_536 && (nfft & (nfft - 1)) === 0);
  const multi = value('multi_freqs');
  const multiFreqs = multi === null ? [] : read.numbers('multi_freqs');
  return {
    klass,
    ...common,
    nfft,
    cac: read.bool('cac'),
    hybridOld: read.bool('hybrid_old'),
    multiFreqs,
    multiFreqsDepth: read.int('multi_freqs_depth'),
    freqEmb: read.number('freq_emb'),
    embScale: read.number('emb_scale'),
    timeStride: read.int('time_stride'),
    contextEnc: read.int('context_enc'),
  };
}

/** Samples of a segment: `int(segment · samplerate)` as Python computes it (exact for a Fraction). */
export function segmentSamples(segment: number | PyFraction, samplerate: number): number {
  if (segment instanceof PyFraction) return Math.trunc((segment.numerator * samplerate) / segment.denominator);
  return Math.trunc(segment * samplerate);
}

function readers(klass: string, value: (name: string) => PickleValue) {
  const fail = (name: string): StemsplitError => unsupported(klass, name, value(name));
  return {
    int(name: string): number {
      const v = value(name);
      if (typeof v === 'number' && Number.isInteger(v)) return v;
      throw fail(name);
    },
    number(name: string): number {
      const v = value(name);
      if (typeof v === 'number') return v;
      if (typeof v === 'boolean') return v ? 1 : 0;
      throw fail(name);
    },
    bool(name: string): boolean {
      const v = value(name);
      if (typeof v === 'boolean') return v;
      if (typeof v === 'number') return v !== 0;
      throw fail(name);
    },
    seconds(name: string): number {
      const v = value(name);
      if (v instanceof PyFraction) return v.valueOf();
      if (typeof v === 'number' && v > 0) return v;
      throw fail(name);
    },
    numbers(name: string): number[] {
      const v = value(name);
      const items = Array.isArray(v) ? v : v instanceof PickleTuple ? v.items : undefined;
      if (items === undefined || !items.every((item) => typeof item === 'number')) throw fail(name);
      return items as number[];
    },
    sources(name: string): string[] {
      const v = value(name);
      const items = Array.isArray(v) ? v : v instanceof PickleTuple ? v.items : undefined;
      if (items === undefined || items.length === 0 || !items.every((item) => typeof item === 'string')) throw fail(name);
      // Stem names are lower-case in every family, whatever case a checkpoint uses.
      return (items as string[]).map((item) => item.toLowerCase());
    },
    require(name: string, ok: boolean): void {
      if (!ok) throw fail(name);
    },
  };
}

function unsupported(klass: string, name: string, value: PickleValue | undefined): StemsplitError {
  const shown = value === undefined ? 'missing' : JSON.stringify(value, (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v));
  return new StemsplitError('MODEL_INVALID', `unsupported ${klass} option ${name}=${shown} in checkpoint`);
}
