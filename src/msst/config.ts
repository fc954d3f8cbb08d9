/**
 * An MSST (Music-Source-Separation-Training) config as users download it beside a checkpoint:
 * `audio`, `model` (the constructor's keyword arguments), `training` (instruments, target) and
 * `inference` (chunking). This module reads what every MSST family shares and tells the family
 * apart by the constructor options only it has; each family reads its own `model` section.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { StemsplitError } from '../errors.js';
import { refuseLinkOutOfFolder } from '../model-files/regular.js';
import { readModelYaml } from '../model-files/yaml.js';

import { checkpointStem, MSST_MODEL_TYPES, type MsstModelType } from './model-types.js';

export { isMsstModelType, MSST_MODEL_TYPES, type MsstModelType } from './model-types.js';

/** What every MSST family's inference needs besides its network. */
export interface MsstCommon {
  readonly sampleRate: number;
  readonly channels: 1 | 2;
  /** Stems the network writes, in order. */
  readonly instruments: readonly string[];
  /** Set for a single-target model (`training.target_instrument`). */
  readonly target: string | null;
  readonly chunkSize: number;
  /** The chunk size is the run's (`--mdxc-segment-size`), not the yaml's: its converted graphs are their own cache entry. */
  readonly chunkOverridden: boolean;
  readonly numOverlap: number;
  readonly batchSize: number;
  /** `inference.normalize`: whole-track mean/std normalisation. */
  readonly normalize: boolean;
}

/**
 * The largest integer a config key may hold: far above every published MSST config (dims up to
 * 512, n_fft up to 8192, chunks up to 30 s), far below what would exhaust memory.
 */
const DEFAULT_INT_CEILING = 65_536;
const INT_CEILINGS: Readonly<Record<string, number>> = {
  chunk_size: 2 ** 23,
  sample_rate: 384_000,
  num_overlap: 64,
  batch_size: 64,
  num_bands: 1024,
  num_stems: 64,
};

/** A parsed yaml with typed readers that fail naming the file and the key. */
export class MsstDocument {
  readonly audio: Readonly<Record<string, unknown>>;
  readonly model: Readonly<Record<string, unknown>>;
  readonly training: Readonly<Record<string, unknown>>;
  readonly inference: Readonly<Record<string, unknown>>;

  /**
   * `segmentSize`: the run's `--mdxc-segment-size` (STFT frames per chunk), python-audio-separator's
   * `--mdxc_segment_size` with `--mdxc_override_model_segment_size`: the chunk is hop·(frames − 1)
   * samples instead of the yaml's chunk_size.
   */
  constructor(
    document: unknown,
    readonly file: string,
    readonly segmentSize?: number,
  ) {
    const root = this.record(document, 'the config');
    this.audio = this.record(root['audio'] ?? {}, 'audio');
    this.model = this.record(root['model'], 'model');
    this.training = this.record(root['training'] ?? {}, 'training');
    this.inference = this.record(root['inference'] ?? {}, 'inference');
  }

  fail(detail: string): StemsplitError {
    return new StemsplitError('MODEL_INVALID', `${this.file}: ${detail}`);
  }

  /** A chunk size the network cannot take: the yaml's fault, or the run's `--mdxc-segment-size` (a USAGE error naming it). */
  chunkFail(detail: string): StemsplitError {
    if (this.segmentSize === undefined) return this.fail(detail);
    return new StemsplitError('USAGE', `${SEGMENT_FLAG} ${this.segmentSize}: this model cannot take it: ${detail}`);
  }

  /** An integer from `min` up to the key's ceiling (INT_CEILINGS), so no config makes stemsplit allocate without bound. */
  int(section: Readonly<Record<string, unknown>>, key: string, fallback?: number, min = 0): number {
    const value = section[key] ?? fallback;
    const max = INT_CEILINGS[key] ?? DEFAULT_INT_CEILING;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max)
      throw this.fail(`${key} must be an integer from ${min} to ${max}, got ${String(value)}`);
    return value;
  }

  number(section: Readonly<Record<string, unknown>>, key: string, fallback?: number): number {
    const value = section[key] ?? fallback;
    if (typeof value !== 'number' || !Number.isFinite(value)) throw this.fail(`${key} must be a number, got ${String(value)}`);
    return value;
  }

  bool(section: Readonly<Record<string, unknown>>, key: string, fallback: boolean): boolean {
    const value = section[key] ?? fallback;
    if (typeof value !== 'boolean') throw this.fail(`${key} must be true or false, got ${String(value)}`);
    return value;
  }

  string(section: Readonly<Record<string, unknown>>, key: string, fallback?: string): string {
    const value = section[key] ?? fallback;
    if (typeof value !== 'string') throw this.fail(`${key} must be a name, got ${String(value)}`);
    return value;
  }

  list<T>(section: Readonly<Record<string, unknown>>, key: string, check: (item: unknown) => item is T, what: string, fallback?: readonly T[]): T[] {
    const value = section[key] ?? fallback;
    if (!Array.isArray(value) || !value.every(check)) throw this.fail(`${key} must be a list of ${what}`);
    return [...(value as T[])];
  }

  /** Refuses `model` keys that are neither `known` nor `inert`, naming them all. */
  refuseUnknown(type: MsstModelType, known: ReadonlySet<string>, inert: ReadonlySet<string> = new Set()): void {
    const unknown = Object.keys(this.model).filter((key) => !known.has(key) && !inert.has(key));
    if (unknown.length > 0) throw this.fail(`unsupported ${type} option${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}`);
  }

  record(value: unknown, what: string): Record<string, unknown> {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw this.fail(`${what} is not a mapping`);
    return value as Record<string, unknown>;
  }
}

/** The flag that overrides the yaml's chunk size (msst/family.ts' options table). */
export const SEGMENT_FLAG = '--mdxc-segment-size';

/** The yaml as MSST reads it (PyYAML's full_load: `!!python/tuple` is a list, code-building tags are refused), with the run's segment size if any. */
export function readMsstDocument(file: string, segmentSize?: number): MsstDocument {
  return new MsstDocument(readModelYaml(file), file, segmentSize);
}

/** `song.ckpt` → `song.yaml` (or `.yml`) beside it, as MSST users keep them. */
export function configBeside(checkpoint: string): string {
  const stem = checkpointStem(checkpoint);
  for (const ext of ['.yaml', '.yml']) {
    if (!existsSync(stem + ext)) continue;
    refuseLinkOutOfFolder(stem + ext, path.dirname(checkpoint), 'config beside the checkpoint');
    return stem + ext;
  }
  throw new StemsplitError('MODEL_NOT_FOUND', `no config beside ${checkpoint} (expected ${path.basename(stem)}.yaml); name one with --model-config`);
}

/** SCNet's constructor options that no other family's has (a yaml may list only some of them). */
const SCNET_ONLY_KEYS = [
  'band_SR',
  'num_dplayer',
  'band_stride',
  'band_kernel',
  'conv_depths',
  'conv_kernel',
  'compress',
  'expand',
  'dims',
  'nfft',
  'hop_size',
  'win_size',
];

/**
 * The model type is not in MSST's yaml (it is MSST's `--model_type` argument): given, or told
 * apart by the constructor options only one class has.
 */
export function msstModelType(doc: MsstDocument, given?: MsstModelType): MsstModelType {
  if (given) return given;
  const has = (key: string) => key in doc.model;
  if (SCNET_ONLY_KEYS.some(has)) return 'scnet';
  if (has('num_subbands') || has('num_scales') || has('bottleneck_factor')) return 'mdx23c';
  if (has('num_bands') || has('sample_rate')) return 'mel_band_roformer';
  if (has('dim') && has('depth')) return 'bs_roformer';
  throw doc.fail(
    `cannot tell the model type from its options (${Object.keys(doc.model).join(', ') || 'none'}); name it with --model-type ${MSST_MODEL_TYPES.join('|')}`,
  );
}

/**
 * The settings every family shares. `training.target_instrument` makes a single-target model;
 * otherwise `training.instruments` are the stems, as many as the network writes (`numStems`).
 * Stem names are lower-cased, whatever case the yaml uses (UVR's copies say `Vocals`, `Kick`).
 */
export function msstCommon(
  doc: MsstDocument,
  network: {
    readonly channels: 1 | 2;
    readonly numStems: number;
    readonly sampleRate?: number /** Where the stem count comes from, for errors. */;
    readonly stemsFrom: string;
    /** The network's STFT: a run's segment size is frames of `hop`, and a chunk must outlast the reflect padding of n_fft / 2. */
    readonly stft: { readonly hop: number; readonly nFft: number };
  },
): MsstCommon {
  const { audio, training, inference } = doc;
  const isName = (item: unknown): item is string => typeof item === 'string';
  const instrumentsList = doc.list(training, 'instruments', isName, 'names', []).map((name) => name.toLowerCase());
  const rawTarget = training['target_instrument'];
  if (rawTarget !== undefined && rawTarget !== null && typeof rawTarget !== 'string') throw doc.fail('training.target_instrument must be a name or null');
  const target = typeof rawTarget === 'string' ? rawTarget.toLowerCase() : null;
  const instruments = target !== null ? [target] : instrumentsList;
  if (instruments.length !== network.numStems) {
    throw doc.fail(`${network.stemsFrom} is ${network.numStems} but the config names ${instruments.length} output stem(s) (${instruments.join(', ')})`);
  }
  const audioChannels = audio['num_channels'];
  if (audioChannels !== undefined && audioChannels !== network.channels)
    throw doc.fail(`audio.num_channels ${String(audioChannels)} contradicts the model's ${network.channels} channel(s)`);
  return {
    sampleRate: network.sampleRate ?? doc.int(audio, 'sample_rate', 44100, 1),
    channels: network.channels,
    instruments,
    target,
    ...chunkOf(doc, network.stft),
    numOverlap: doc.int(inference, 'num_overlap', 2, 1),
    batchSize: doc.int(inference, 'batch_size', 1, 1),
    normalize: inference['normalize'] === true,
  };
}

/**
 * The chunk: the yaml's `inference.chunk_size` (or `audio.chunk_size`), or with a run's segment size
 * python-audio-separator's MDXC chunk, hop·(segment_size − 1) (mdxc_separator.py `demix`; for a
 * RoFormer it takes model.stft_hop_length, for MDX23C audio.hop_length: each network's own STFT hop,
 * as here). A segment size that gives the yaml's chunk is no override at all.
 */
function chunkOf(doc: MsstDocument, stft: { readonly hop: number; readonly nFft: number }): { chunkSize: number; chunkOverridden: boolean } {
  const { audio, inference } = doc;
  const yaml = () => doc.int(inference, 'chunk_size', doc.int(audio, 'chunk_size', undefined, 1), 1);
  if (doc.segmentSize === undefined) return { chunkSize: yaml(), chunkOverridden: false };
  const chunkSize = stft.hop * (doc.segmentSize - 1);
  if (chunkSize <= stft.nFft / 2) {
    throw doc.chunkFail(
      `a chunk of ${chunkSize} samples (hop ${stft.hop} × ${doc.segmentSize - 1}) is too short for its STFT's padding of n_fft / 2 = ${stft.nFft / 2}`,
    );
  }
  const most = INT_CEILINGS['chunk_size'] as number;
  if (chunkSize > most) throw doc.chunkFail(`a chunk of ${chunkSize} samples (hop ${stft.hop} × ${doc.segmentSize - 1}) is more than ${most}`);
  const stated = inference['chunk_size'] ?? audio['chunk_size'];
  return { chunkSize, chunkOverridden: chunkSize !== stated };
}
