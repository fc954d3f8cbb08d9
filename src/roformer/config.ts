/**
 * An MSST (Music-Source-Separation-Training) config as users download it beside a BS-RoFormer
 * or Mel-Band RoFormer checkpoint: `audio`, `model` (the constructor's keyword arguments),
 * `training` (instruments, target) and `inference` (chunking). Every constructor option the
 * published configs use is read; an option this engine does not implement is refused by name.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse, type Tags } from 'yaml';
import { StemsplitError } from '../errors.js';

export type RoformerType = 'bs_roformer' | 'mel_band_roformer';

export interface RoformerConfig {
  readonly type: RoformerType;
  readonly dim: number;
  readonly depth: number;
  readonly channels: 1 | 2;
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
  readonly sampleRate: number;
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
  /** Stems the model writes, in order. */
  readonly instruments: readonly string[];
  /** Set for a single-target model (`training.target_instrument`). */
  readonly target: string | null;
  readonly chunkSize: number;
  readonly numOverlap: number;
  readonly batchSize: number;
  /** `inference.normalize`: whole-track mean/std normalisation. */
  readonly normalize: boolean;
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

/** `song.ckpt` → `song.yaml` (or `.yml`) beside it, as MSST users keep them. */
export function configBeside(checkpoint: string): string {
  const stem = checkpoint.replace(/\.(ckpt|pth|pt)$/i, '');
  for (const ext of ['.yaml', '.yml']) if (existsSync(stem + ext)) return stem + ext;
  throw new StemsplitError('MODEL_NOT_FOUND', `no config beside ${checkpoint} (expected ${path.basename(stem)}.yaml); name one with --model-config`);
}

/** PyYAML's `!!python/tuple` (MSST writes tuples that way): read as a list. */
const pythonTuple: Tags[number] = {
  tag: 'tag:yaml.org,2002:python/tuple',
  collection: 'seq',
  resolve: (value) => value,
};

export function readRoformerConfig(file: string, type?: RoformerType): RoformerConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new StemsplitError('MODEL_NOT_FOUND', `cannot read the model config ${file}`, { cause: error });
  }
  let document: unknown;
  try {
    document = parse(text, { customTags: [pythonTuple], uniqueKeys: false });
  } catch (error) {
    throw new StemsplitError('MODEL_INVALID', `${file} is not valid YAML: ${(error as Error).message.split('\n')[0]}`);
  }
  return parseRoformerConfig(document, file, type);
}

/**
 * The model type is not in MSST's yaml (it is MSST's `--model_type` argument): given, or told
 * apart by the options only one class has (`num_bands` / `sample_rate` → Mel-Band).
 */
export function parseRoformerConfig(document: unknown, file: string, type?: RoformerType): RoformerConfig {
  const fail = (detail: string) => new StemsplitError('MODEL_INVALID', `${file}: ${detail}`);
  const root = record(document, 'the config', fail);
  const audio = record(root['audio'] ?? {}, 'audio', fail);
  const model = record(root['model'], 'model', fail);
  const training = record(root['training'] ?? {}, 'training', fail);
  const inference = record(root['inference'] ?? {}, 'inference', fail);
  const modelType = type ?? ('num_bands' in model || 'sample_rate' in model ? 'mel_band_roformer' : 'bs_roformer');

  const unknown = Object.keys(model).filter((key) => !SHARED_OPTIONS.has(key) && !INERT_OPTIONS.has(key) && !TYPE_OPTIONS[modelType].has(key));
  if (unknown.length > 0) throw fail(`unsupported ${modelType} option${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}`);
  if (model['use_pope'] === true) throw fail('use_pope (PoPE positions) is not supported, only rotary embeddings');
  if (model['stft_window_fn'] !== undefined && model['stft_window_fn'] !== null) throw fail('a custom stft_window_fn is not supported');

  const int = (section: Record<string, unknown>, key: string, fallback?: number, min = 0): number => {
    const value = section[key] ?? fallback;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min) throw fail(`${key} must be an integer ≥ ${min}, got ${String(value)}`);
    return value;
  };
  const bool = (section: Record<string, unknown>, key: string, fallback: boolean): boolean => {
    const value = section[key] ?? fallback;
    if (typeof value !== 'boolean') throw fail(`${key} must be true or false, got ${String(value)}`);
    return value;
  };

  const nFft = int(model, 'stft_n_fft', 2048, 4);
  if ((nFft & (nFft - 1)) !== 0) throw fail(`stft_n_fft ${nFft} is not a power of two`);
  const winLength = int(model, 'stft_win_length', 2048, 2);
  if (winLength > nFft) throw fail(`stft_win_length ${winLength} is longer than stft_n_fft ${nFft}`);
  const bins = nFft / 2 + 1;
  const freqsPerBands = modelType === 'bs_roformer' ? bandList(model['freqs_per_bands'], bins, fail) : [];

  const instrumentsList = stringList(training['instruments'] ?? [], 'training.instruments', fail);
  const target = training['target_instrument'];
  if (target !== undefined && target !== null && typeof target !== 'string') throw fail('training.target_instrument must be a name or null');
  const instruments = typeof target === 'string' ? [target] : instrumentsList;
  const numStems = int(model, 'num_stems', 1, 1);
  if (instruments.length !== numStems) {
    throw fail(`model.num_stems is ${numStems} but the config names ${instruments.length} output stem(s) (${instruments.join(', ')})`);
  }
  const channels = bool(model, 'stereo', false) ? 2 : 1;
  const audioChannels = audio['num_channels'];
  if (audioChannels !== undefined && audioChannels !== channels) throw fail(`audio.num_channels ${String(audioChannels)} contradicts model.stereo`);

  return {
    type: modelType,
    dim: int(model, 'dim', undefined, 1),
    depth: int(model, 'depth', undefined, 1),
    channels,
    numStems,
    timeDepth: int(model, 'time_transformer_depth', 2),
    freqDepth: int(model, 'freq_transformer_depth', 2),
    linearDepth: int(model, 'linear_transformer_depth', 0),
    heads: int(model, 'heads', 8, 1),
    dimHead: evenDimHead(int(model, 'dim_head', 64, 2), fail),
    freqsPerBands,
    numBands: modelType === 'mel_band_roformer' ? int(model, 'num_bands', 60, 2) : 0,
    sampleRate: modelType === 'mel_band_roformer' ? int(model, 'sample_rate', 44100, 1) : int(audio, 'sample_rate', 44100, 1),
    nFft,
    hop: int(model, 'stft_hop_length', 512, 1),
    winLength,
    stftNormalized: bool(model, 'stft_normalized', false),
    zeroDc: bool(model, 'zero_dc', true),
    maskEstimatorDepth: int(model, 'mask_estimator_depth', modelType === 'bs_roformer' ? 2 : 1, modelType === 'bs_roformer' ? 1 : 0),
    mlpExpansionFactor: int(model, 'mlp_expansion_factor', 4, 1),
    skipConnection: bool(model, 'skip_connection', false),
    matchInputLength: bool(model, 'match_input_audio_length', false),
    instruments,
    target: typeof target === 'string' ? target : null,
    chunkSize: int(inference, 'chunk_size', int(audio, 'chunk_size', undefined, 1), 1),
    numOverlap: int(inference, 'num_overlap', 2, 1),
    batchSize: int(inference, 'batch_size', 1, 1),
    normalize: inference['normalize'] === true,
  };
}

function record(value: unknown, what: string, fail: (detail: string) => Error): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw fail(`${what} is not a mapping`);
  return value as Record<string, unknown>;
}

function stringList(value: unknown, what: string, fail: (detail: string) => Error): string[] {
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string')) throw fail(`${what} must be a list of names`);
  return value as string[];
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
