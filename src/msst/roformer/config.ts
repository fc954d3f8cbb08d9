/**
 * The `model` section of a BS-RoFormer or Mel-Band RoFormer's MSST config (the rest is
 * msst/config.ts). Every constructor option the published configs use is read; an option this
 * engine does not implement is refused by name.
 */
import { msstCommon, MsstDocument, readMsstDocument, type MsstCommon } from '../config.js';

export type RoformerType = 'bs_roformer' | 'mel_band_roformer';

export interface RoformerConfig extends MsstCommon {
  readonly type: RoformerType;
  readonly dim: number;
  readonly depth: number;
  readonly numStems: number;
  readonly timeDepth: number;
  readonly freqDepth: number;
  readonly linearDepth: number;
  readonly heads: number;
  readonly dimHead: number;
  /** BS-RoFormer: bins per band (sums to n_fft/2+1). */
  readonly freqsPerBands: readonly number[];
  /** Mel-Band: number of mel bands. */
  readonly numBands: number;
  readonly nFft: number;
  readonly hop: number;
  readonly winLength: number;
  readonly stftNormalized: boolean;
  readonly zeroDc: boolean;
  readonly maskEstimatorDepth: number;
  readonly mlpExpansionFactor: number;
  readonly skipConnection: boolean;
  /** Mel-Band: iSTFT back to the input's length (else hop·(frames−1)). */
  readonly matchInputLength: boolean;
}

/** BS-RoFormer's default bands (bs_roformer.py's DEFAULT_FREQS_PER_BANDS): 62 bands over 1025 bins. */
export const DEFAULT_FREQS_PER_BANDS: readonly number[] = [
  ...Array<number>(24).fill(2),
  ...Array<number>(12).fill(4),
  ...Array<number>(8).fill(12),
  ...Array<number>(8).fill(24),
  ...Array<number>(8).fill(48),
  128,
  129,
];

/** Constructor options that only matter for training (losses, dropout, checkpointing) or that change nothing at inference. */
const INERT_OPTIONS = new Set([
  'attn_dropout',
  'ff_dropout',
  'flash_attn',
  'dim_freqs_in',
  'multi_stft_resolution_loss_weight',
  'multi_stft_resolutions_window_sizes',
  'multi_stft_hop_size',
  'multi_stft_normalized',
  'multi_stft_window_fn',
  'use_torch_checkpoint',
  'sage_attention',
]);

const SHARED_OPTIONS = new Set([
  'dim',
  'depth',
  'stereo',
  'num_stems',
  'time_transformer_depth',
  'freq_transformer_depth',
  'linear_transformer_depth',
  'dim_head',
  'heads',
  'stft_n_fft',
  'stft_hop_length',
  'stft_win_length',
  'stft_normalized',
  'zero_dc',
  'mask_estimator_depth',
  'mlp_expansion_factor',
  'skip_connection',
  'use_pope',
]);

const TYPE_OPTIONS: Readonly<Record<RoformerType, ReadonlySet<string>>> = {
  bs_roformer: new Set(['freqs_per_bands']),
  mel_band_roformer: new Set(['num_bands', 'sample_rate', 'match_input_audio_length']),
};

/** `segmentSize`: the run's `--mdxc-segment-size` (msst/config.ts). */
export function readRoformerConfig(file: string, type?: RoformerType, segmentSize?: number): RoformerConfig {
  return roformerConfigOf(readMsstDocument(file, segmentSize), type);
}

/** A parsed yaml document (tests and benchmarks build them in memory). */
export function parseRoformerConfig(document: unknown, file: string, type?: RoformerType): RoformerConfig {
  return roformerConfigOf(new MsstDocument(document, file), type);
}

/**
 * The model type is not in MSST's yaml (it is MSST's `--model_type` argument): given, or told
 * apart by the options only one class has (`num_bands` / `sample_rate` → Mel-Band).
 */
export function roformerConfigOf(doc: MsstDocument, type?: RoformerType): RoformerConfig {
  const { model } = doc;
  const modelType = type ?? ('num_bands' in model || 'sample_rate' in model ? 'mel_band_roformer' : 'bs_roformer');
  const fail = (detail: string) => doc.fail(detail);
  doc.refuseUnknown(modelType, new Set([...SHARED_OPTIONS, ...TYPE_OPTIONS[modelType]]), INERT_OPTIONS);
  if (model['use_pope'] === true) throw fail('use_pope (PoPE positions) is not supported, only rotary embeddings');
  if (model['stft_window_fn'] !== undefined && model['stft_window_fn'] !== null) throw fail('a custom stft_window_fn is not supported');
  const int = doc.int.bind(doc);
  const bool = doc.bool.bind(doc);

  const nFft = int(model, 'stft_n_fft', 2048, 4);
  if ((nFft & (nFft - 1)) !== 0) throw fail(`stft_n_fft ${nFft} is not a power of two`);
  const winLength = int(model, 'stft_win_length', 2048, 2);
  if (winLength > nFft) throw fail(`stft_win_length ${winLength} is longer than stft_n_fft ${nFft}`);
  const bins = nFft / 2 + 1;
  const freqsPerBands = modelType === 'bs_roformer' ? bandList(model['freqs_per_bands'], bins, fail) : [];
  const numStems = int(model, 'num_stems', 1, 1);
  const channels = bool(model, 'stereo', false) ? 2 : 1;
  const hop = int(model, 'stft_hop_length', 512, 1);
  const common = msstCommon(doc, {
    channels,
    numStems,
    stemsFrom: 'model.num_stems',
    stft: { hop, nFft },
    ...(modelType === 'mel_band_roformer' ? { sampleRate: int(model, 'sample_rate', 44100, 1) } : {}),
  });

  return {
    ...common,
    type: modelType,
    dim: int(model, 'dim', undefined, 1),
    depth: int(model, 'depth', undefined, 1),
    numStems,
    timeDepth: int(model, 'time_transformer_depth', 2),
    freqDepth: int(model, 'freq_transformer_depth', 2),
    linearDepth: int(model, 'linear_transformer_depth', 0),
    heads: int(model, 'heads', 8, 1),
    dimHead: evenDimHead(int(model, 'dim_head', 64, 2), fail),
    freqsPerBands,
    numBands: modelType === 'mel_band_roformer' ? int(model, 'num_bands', 60, 2) : 0,
    nFft,
    hop,
    winLength,
    stftNormalized: bool(model, 'stft_normalized', false),
    zeroDc: bool(model, 'zero_dc', true),
    maskEstimatorDepth: int(model, 'mask_estimator_depth', modelType === 'bs_roformer' ? 2 : 1, modelType === 'bs_roformer' ? 1 : 0),
    mlpExpansionFactor: int(model, 'mlp_expansion_factor', 4, 1),
    skipConnection: bool(model, 'skip_connection', false),
    matchInputLength: bool(model, 'match_input_audio_length', false),
  };
}

function bandList(value: unknown, bins: number, fail: (detail: string) => Error): number[] {
  const bands = value === undefined || value === null ? [...DEFAULT_FREQS_PER_BANDS] : value;
  if (!Array.isArray(bands) || !bands.every((b) => Number.isInteger(b) && (b as number) > 0) || bands.length < 2) {
    throw fail('freqs_per_bands must be a list of at least two positive integers');
  }
  const total = (bands as number[]).reduce((a, b) => a + b, 0);
  if (total !== bins) throw fail(`freqs_per_bands sums to ${total}, but stft_n_fft gives ${bins} bins`);
  return bands as number[];
}

function evenDimHead(value: number, fail: (detail: string) => Error): number {
  if (value % 2 !== 0) throw fail(`dim_head ${value} must be even (rotary embeddings rotate pairs)`);
  return value;
}
