/**
 * HTDemucs constructor arguments: the checkpoint's `kwargs` over the constructor's
 * defaults (demucs/htdemucs.py). Only what inference needs is kept; options that would
 * change the network in a way this engine does not build are rejected by name.
 */
import { StemsplitError } from '../errors.js';
import { PyFraction } from '../torch/checkpoint.js';
import { PickleTuple, type PickleValue } from '../torch/pickle-values.js';

export interface HTDemucsConfig {
  readonly sources: readonly string[];
  readonly audioChannels: number;
  readonly channels: number;
  readonly channelsTime: number | null;
  readonly growth: number;
  readonly nfft: number;
  readonly depth: number;
  readonly rewrite: boolean;
  readonly freqEmb: number;
  readonly embScale: number;
  readonly kernelSize: number;
  readonly stride: number;
  readonly context: number;
  readonly contextEnc: number;
  readonly normStarts: number;
  readonly normGroups: number;
  readonly dconvMode: number;
  readonly dconvDepth: number;
  readonly dconvComp: number;
  readonly bottomChannels: number;
  readonly tLayers: number;
  readonly tHiddenScale: number;
  readonly tHeads: number;
  readonly tNormIn: boolean;
  readonly tNormInGroup: boolean;
  readonly tGroupNorm: boolean;
  readonly tNormFirst: boolean;
  readonly tNormOut: boolean;
  readonly tMaxPeriod: number;
  readonly tLayerScale: boolean;
  readonly tGelu: boolean;
  readonly tWeightPosEmbed: number;
  readonly tCrossFirst: boolean;
  readonly samplerate: number;
  /** Training segment in seconds (a Fraction or a float in the checkpoint). */
  readonly segment: number;
  /** `int(segment * samplerate)`, computed as Python does. */
  readonly segmentSamples: number;
}

type Reader = (name: string, value: PickleValue) => unknown;

const asInt: Reader = (name, value) => {
  if (typeof value === 'number' && Number.isInteger(value)) return value;
  throw unsupported(name, value);
};
const asNumber: Reader = (name, value) => {
  if (typeof value === 'number') return value;
  if (typeof value === 'boolean') return value ? 1 : 0;
  throw unsupported(name, value);
};
const asBool: Reader = (name, value) => {
  if (typeof value === 'boolean') return value;
  if (typeof value === 'number') return value !== 0;
  throw unsupported(name, value);
};
const asAny: Reader = (_, value) => value;

/** Every HTDemucs constructor argument with its default and how to read it. */
const OPTIONS: Readonly<Record<string, readonly [PickleValue, Reader]>> = {
  sources: [null, asAny],
  audio_channels: [2, asInt],
  channels: [48, asInt],
  channels_time: [null, asAny],
  growth: [2, asNumber],
  nfft: [4096, asInt],
  wiener_iters: [0, asInt],
  end_iters: [0, asInt],
  wiener_residual: [false, asBool],
  cac: [true, asBool],
  depth: [4, asInt],
  rewrite: [true, asBool],
  multi_freqs: [null, asAny],
  multi_freqs_depth: [3, asInt],
  freq_emb: [0.2, asNumber],
  emb_scale: [10, asNumber],
  emb_smooth: [true, asBool],
  kernel_size: [8, asInt],
  time_stride: [2, asInt],
  stride: [4, asInt],
  context: [1, asInt],
  context_enc: [0, asInt],
  norm_starts: [4, asInt],
  norm_groups: [4, asInt],
  dconv_mode: [1, asInt],
  dconv_depth: [2, asInt],
  dconv_comp: [8, asNumber],
  dconv_init: [1e-3, asNumber],
  bottom_channels: [0, asInt],
  t_layers: [5, asInt],
  t_emb: ['sin', asAny],
  t_hidden_scale: [4.0, asNumber],
  t_heads: [8, asInt],
  t_dropout: [0.0, asNumber],
  t_max_positions: [10000, asInt],
  t_norm_in: [true, asBool],
  t_norm_in_group: [false, asBool],
  t_group_norm: [false, asBool],
  t_norm_first: [true, asBool],
  t_norm_out: [true, asBool],
  t_max_period: [10000.0, asNumber],
  t_weight_decay: [0.0, asNumber],
  t_lr: [null, asAny],
  t_layer_scale: [true, asBool],
  t_gelu: [true, asBool],
  t_weight_pos_embed: [1.0, asNumber],
  t_sin_random_shift: [0, asInt],
  t_cape_mean_normalize: [true, asBool],
  t_cape_augment: [true, asBool],
  t_cape_glob_loc_scale: [null, asAny],
  t_sparse_self_attn: [false, asBool],
  t_sparse_cross_attn: [false, asBool],
  t_mask_type: ['diag', asAny],
  t_mask_random_seed: [42, asAny],
  t_sparse_attn_window: [500, asAny],
  t_global_window: [100, asAny],
  t_sparsity: [0.95, asAny],
  t_auto_sparsity: [false, asBool],
  t_cross_first: [false, asBool],
  rescale: [0.1, asAny],
  samplerate: [44100, asInt],
  segment: [10, asAny],
  use_train_segment: [true, asBool],
};

export function parseHTDemucsConfig(kwargs: ReadonlyMap<string, PickleValue>): HTDemucsConfig {
  for (const name of kwargs.keys()) {
    if (!(name in OPTIONS)) throw new StemsplitError('MODEL_INVALID', `unsupported HTDemucs option ${name} in checkpoint`);
  }
  const read = <T>(name: string): T => {
    const [fallback, reader] = OPTIONS[name] as readonly [PickleValue, Reader];
    return reader(name, kwargs.has(name) ? (kwargs.get(name) as PickleValue) : fallback) as T;
  };
  rejectUnsupported(kwargs, read);

  const segment = readSegment(kwargs.has('segment') ? (kwargs.get('segment') as PickleValue) : 10);
  const samplerate = read<number>('samplerate');
  const channelsTime = kwargs.get('channels_time') ?? null;
  if (channelsTime !== null && !(typeof channelsTime === 'number' && Number.isInteger(channelsTime))) {
    throw unsupported('channels_time', channelsTime);
  }
  const config: HTDemucsConfig = {
    sources: readSources(kwargs.get('sources')),
    audioChannels: read('audio_channels'),
    channels: read('channels'),
    channelsTime,
    growth: read('growth'),
    nfft: read('nfft'),
    depth: read('depth'),
    rewrite: read('rewrite'),
    freqEmb: read('freq_emb'),
    embScale: read('emb_scale'),
    kernelSize: read('kernel_size'),
    stride: read('stride'),
    context: read('context'),
    contextEnc: read('context_enc'),
    normStarts: read('norm_starts'),
    normGroups: read('norm_groups'),
    dconvMode: read('dconv_mode'),
    dconvDepth: read('dconv_depth'),
    dconvComp: read('dconv_comp'),
    bottomChannels: read('bottom_channels'),
    tLayers: read('t_layers'),
    tHiddenScale: read('t_hidden_scale'),
    tHeads: read('t_heads'),
    tNormIn: read('t_norm_in'),
    tNormInGroup: read('t_norm_in_group'),
    tGroupNorm: read('t_group_norm'),
    tNormFirst: read('t_norm_first'),
    tNormOut: read('t_norm_out'),
    tMaxPeriod: read('t_max_period'),
    tLayerScale: read('t_layer_scale'),
    tGelu: read('t_gelu'),
    tWeightPosEmbed: read('t_weight_pos_embed'),
    tCrossFirst: read('t_cross_first'),
    samplerate,
    segment: segment.seconds,
    segmentSamples: segment.samples(samplerate),
  };
  checkStructure(config);
  return config;
}

function unsupported(name: string, value: PickleValue | undefined): StemsplitError {
  return new StemsplitError('MODEL_INVALID', `unsupported HTDemucs option ${name}=${describe(value)} in checkpoint`);
}

function describe(value: PickleValue | undefined): string {
  if (value === null || value === undefined) return 'None';
  if (typeof value === 'string') return `'${value}'`;
  if (typeof value === 'boolean') return value ? 'True' : 'False';
  if (typeof value === 'number' || typeof value === 'bigint') return String(value);
  if (Array.isArray(value)) return `[${value.map(describe).join(', ')}]`;
  if (value instanceof PickleTuple) return `(${value.items.map(describe).join(', ')})`;
  if (value instanceof PyFraction) return `Fraction(${value.numerator}, ${value.denominator})`;
  return typeof value;
}

/** Options whose non-default values change inference in ways this engine does not build. */
function rejectUnsupported(kwargs: ReadonlyMap<string, PickleValue>, read: <T>(name: string) => T): void {
  const require = (name: string, ok: boolean): void => {
    if (!ok) throw unsupported(name, kwargs.get(name));
  };
  require('cac', read<boolean>('cac'));
  const multiFreqs = kwargs.get('multi_freqs') ?? null;
  require('multi_freqs', multiFreqs === null || (Array.isArray(multiFreqs) && multiFreqs.length === 0));
  require('t_emb', read<PickleValue>('t_emb') === 'sin');
  require('t_sin_random_shift', read<number>('t_sin_random_shift') === 0);
  require('t_sparse_self_attn', !read<boolean>('t_sparse_self_attn'));
  require('t_sparse_cross_attn', !read<boolean>('t_sparse_cross_attn'));
  require('t_auto_sparsity', !read<boolean>('t_auto_sparsity'));
  require('audio_channels', read<number>('audio_channels') === 2);
  const dconvMode = read<number>('dconv_mode');
  require('dconv_mode', dconvMode >= 0 && dconvMode <= 3);
  const nfft = read<number>('nfft');
  require('nfft', nfft >= 16 && (nfft & (nfft - 1)) === 0);
}

function readSources(value: PickleValue | undefined): string[] {
  const items = Array.isArray(value) ? value : value instanceof PickleTuple ? value.items : undefined;
  if (items === undefined || items.length === 0 || !items.every((item) => typeof item === 'string')) {
    throw unsupported('sources', value);
  }
  // Stem names are lower-case in every family, whatever case a checkpoint uses.
  return (items as string[]).map((name) => name.toLowerCase());
}

interface Segment {
  readonly seconds: number;
  samples(samplerate: number): number;
}

/** `int(segment * samplerate)`: exact for a Fraction, float arithmetic for a float (as Python). */
function readSegment(value: PickleValue): Segment {
  if (value instanceof PyFraction) {
    return {
      seconds: value.valueOf(),
      samples: (rate) => Math.trunc((value.numerator * rate) / value.denominator),
    };
  }
  if (typeof value === 'number' && value > 0) return { seconds: value, samples: (rate) => Math.trunc(value * rate) };
  throw unsupported('segment', value);
}

/**
 * The released models keep a frequency axis down to the transformer (depth 4, nfft 4096).
 * A deeper network would merge the branches into a time-only tail, which no released
 * HTDemucs uses and this engine does not build.
 */
function checkStructure(config: HTDemucsConfig): void {
  let freqs = config.nfft / 2;
  for (let index = 0; index < config.depth; index++) {
    if (freqs <= config.kernelSize) {
      throw new StemsplitError(
        'MODEL_INVALID',
        `unsupported HTDemucs option depth=${config.depth} with nfft=${config.nfft} (layer ${index} would merge the frequency branch into the time branch)`,
      );
    }
    freqs = Math.floor(freqs / config.stride);
  }
  const transformerChannels = config.bottomChannels || config.channels * config.growth ** (config.depth - 1);
  if (config.tLayers > 0 && transformerChannels % config.tHeads !== 0) throw unsupported('t_heads', config.tHeads);
  if (config.tLayers > 0 && transformerChannels % 4 !== 0) throw unsupported('bottom_channels', config.bottomChannels);
}
