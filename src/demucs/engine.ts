/**
 * Demucs checkpoints as segment models: read the official `.th` (or a bag `.yaml`), convert
 * HTDemucs to an ONNX graph once (cached by the checkpoint's SHA-256), and run it through
 * ONNX Runtime with the spectrogram and normalization done here, as HTDemucs.forward does.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { StemsplitError } from '../errors.js';
import type { SegmentModel } from '../separation/model.js';
import { combineBag } from '../separation/bag.js';
import { createOrtSession, runTensors, type OrtSessionHandle } from '../separation/onnx-session.js';
import { parseBagFile, resolveMember } from './bag-file.js';
import { cacheEntry, readCachedMeta, sha256File, storeEntry } from './cache.js';
import { readCheckpoint } from './checkpoint.js';
import { parseHTDemucsConfig } from './config.js';
import { GRAPH_INPUTS, GRAPH_OUTPUTS, buildHTDemucsGraph, type GraphOptions } from './htdemucs-graph.js';
import { writeModel } from './onnx/graph.js';
import { SegmentStft } from './stft.js';

export interface LoadDemucsOptions {
  /** Where converted graphs are kept (a `demucs/` folder is made inside). */
  readonly cacheDir: string;
  /** Threads per ONNX operator; default ONNX Runtime's choice. */
  readonly intraOpThreads?: number;
  /** The name the model answers to; default the file's name without extension. */
  readonly name?: string;
}

/** What a converted graph needs to run, stored beside it. */
export interface ConvertedModel {
  readonly format: typeof META_FORMAT;
  readonly checkpointSha256: string;
  readonly onnx: string;
  readonly sources: readonly string[];
  readonly sampleRate: number;
  readonly segmentSamples: number;
  readonly nfft: number;
  readonly audioChannels: number;
}

/** Bump when the graph layout changes, so caches convert again. */
const CONVERTER_VERSION = 1;
const META_FORMAT = 'stemsplit-demucs/1';
const GRAPH_OPTIONS: GraphOptions = { attention: 'fused' };
/** HTDemucs.forward: x = (x − mean) / (1e-5 + std), for both branches. */
const NORMALIZATION_EPS = 1e-5;

/** Loads a Demucs checkpoint (`.th`) or bag (`.yaml`) as one segment model. */
export async function loadDemucs(file: string, options: LoadDemucsOptions): Promise<SegmentModel> {
  const name = options.name ?? path.basename(file).replace(/\.(th|ya?ml)$/, '');
  if (/\.ya?ml$/.test(file)) return loadBag(file, name, options);
  const converted = await convertCheckpoint(file, options.cacheDir);
  return openConverted(converted, name, options.intraOpThreads);
}

async function loadBag(file: string, name: string, options: LoadDemucsOptions): Promise<SegmentModel> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new StemsplitError('MODEL_NOT_FOUND', `cannot read bag ${file}`, { cause: error });
  }
  const bag = parseBagFile(text, file);
  const directory = path.dirname(file);
  const members: SegmentModel[] = [];
  try {
    for (const member of bag.models) {
      const memberPath = resolveMember(directory, member);
      members.push(await loadDemucs(memberPath, { ...options, name: member }));
    }
    const sources = (members[0] as SegmentModel).sources.length;
    const weights = bag.weights ?? bag.models.map(() => new Array<number>(sources).fill(1));
    return combineBag(members, weights, name);
  } catch (error) {
    await Promise.all(members.map((member) => member.dispose()));
    throw error;
  }
}

/**
 * Converts a checkpoint to ONNX unless the cache already holds it; returns where it is.
 * Cheap on a cache hit: the checkpoint is only hashed.
 */
export async function convertCheckpoint(file: string, cacheDir: string): Promise<ConvertedModel> {
  let sha256: string;
  try {
    sha256 = await sha256File(file);
  } catch (error) {
    throw new StemsplitError('MODEL_NOT_FOUND', `cannot read checkpoint ${file}`, { cause: error });
  }
  const entry = cacheEntry(cacheDir, sha256, CONVERTER_VERSION);
  const cached = await readCachedMeta(entry);
  if (isConvertedModel(cached)) return { ...cached, onnx: entry.onnx };

  const checkpoint = readCheckpoint(file);
  if (checkpoint.klass !== 'demucs.htdemucs.HTDemucs') {
    throw new StemsplitError('MODEL_INVALID', `unsupported class ${checkpoint.klass} in checkpoint ${file} (only HTDemucs is supported)`);
  }
  const config = parseHTDemucsConfig(checkpoint.kwargs);
  const { graph } = buildHTDemucsGraph(config, checkpoint.state, GRAPH_OPTIONS);
  const converted: ConvertedModel = {
    format: META_FORMAT,
    checkpointSha256: sha256,
    onnx: entry.onnx,
    sources: config.sources,
    sampleRate: config.samplerate,
    segmentSamples: config.segmentSamples,
    nfft: config.nfft,
    audioChannels: config.audioChannels,
  };
  await storeEntry(entry, (target) => writeModel(graph.encode(), target), converted);
  return converted;
}

function isConvertedModel(value: unknown): value is ConvertedModel {
  if (typeof value !== 'object' || value === null) return false;
  const record = value as Record<string, unknown>;
  return (
    record['format'] === META_FORMAT &&
    Array.isArray(record['sources']) &&
    typeof record['segmentSamples'] === 'number' &&
    typeof record['sampleRate'] === 'number' &&
    typeof record['nfft'] === 'number' &&
    typeof record['audioChannels'] === 'number'
  );
}

async function openConverted(converted: ConvertedModel, name: string, intraOpThreads?: number): Promise<SegmentModel> {
  const session = await createOrtSession(converted.onnx, {
    ...(intraOpThreads === undefined ? {} : { intraOpThreads }),
  });
  return new HTDemucsModel(name, converted, session);
}

/** Mean and unbiased standard deviation, accumulated in float64. */
function meanStd(values: Float32Array): { mean: number; std: number } {
  let sum = 0;
  for (let i = 0; i < values.length; i++) sum += values[i] as number;
  const mean = sum / values.length;
  let squares = 0;
  for (let i = 0; i < values.length; i++) squares += ((values[i] as number) - mean) ** 2;
  return { mean, std: Math.sqrt(squares / (values.length - 1)) };
}

/** (x − mean) / (eps + std) in place; returns the statistics to undo it. */
function normalizeInPlace(values: Float32Array): { mean: number; std: number } {
  const stats = meanStd(values);
  const scale = 1 / (NORMALIZATION_EPS + stats.std);
  for (let i = 0; i < values.length; i++) values[i] = ((values[i] as number) - stats.mean) * scale;
  return stats;
}

class HTDemucsModel implements SegmentModel {
  readonly sampleRate: number;
  readonly sources: readonly string[];
  readonly segmentSamples: number;
  readonly normalize = true;
  private readonly stft: SegmentStft;

  constructor(
    readonly name: string,
    private readonly converted: ConvertedModel,
    private readonly session: OrtSessionHandle,
  ) {
    this.sampleRate = converted.sampleRate;
    this.sources = converted.sources;
    this.segmentSamples = converted.segmentSamples;
    this.stft = new SegmentStft(converted.nfft, converted.segmentSamples);
  }

  async run(segment: Float32Array): Promise<Float32Array> {
    const { segmentSamples: length, stft } = this;
    const channels = this.converted.audioChannels;
    if (segment.length !== channels * length) {
      throw new StemsplitError('SEPARATION_FAILED', `${this.name} takes ${channels * length} samples per segment, got ${segment.length}`);
    }
    const spec = new Float32Array(2 * channels * stft.freqs * stft.frames);
    stft.analyze(segment, spec);
    const specStats = normalizeInPlace(spec);
    const wave = Float32Array.from(segment);
    const waveStats = normalizeInPlace(wave);

    const outputs = await runTensors(this.session, {
      [GRAPH_INPUTS.spec]: { data: spec, dims: [1, 2 * channels, stft.freqs, stft.frames] },
      [GRAPH_INPUTS.wave]: { data: wave, dims: [1, channels, length] },
    });
    const specOut = outputs[GRAPH_OUTPUTS.spec]?.data;
    const waveOut = outputs[GRAPH_OUTPUTS.wave]?.data;
    const sources = this.sources.length;
    if (specOut === undefined || waveOut === undefined || waveOut.length !== sources * channels * length) {
      throw new StemsplitError('SEPARATION_FAILED', `${this.name}: the graph's outputs have unexpected shapes`);
    }

    // Time branch, de-normalized, then the spectrogram branch's inverse STFT added on top.
    const out = new Float32Array(sources * channels * length);
    for (let i = 0; i < out.length; i++) out[i] = (waveOut[i] as number) * waveStats.std + waveStats.mean;
    for (let i = 0; i < specOut.length; i++) specOut[i] = (specOut[i] as number) * specStats.std + specStats.mean;
    const specPerSource = 2 * channels * stft.freqs * stft.frames;
    for (let s = 0; s < sources; s++) stft.synthesizeAdd(specOut, s * specPerSource, out, s * channels * length);
    return out;
  }

  dispose(): Promise<void> {
    return this.session.release();
  }
}
