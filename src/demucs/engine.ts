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
import { createOrtSession, runTensors, type Float32Tensor, type OrtSessionHandle } from '../separation/onnx-session.js';
import { parseBagFile, resolveMember } from './bag-file.js';
import { cacheEntryDir, readCachedManifest, sha256File, storeEntry } from './cache.js';
import { readCheckpoint } from './checkpoint.js';
import { parseHTDemucsConfig } from './config.js';
import { GRAPH_INPUTS, GRAPH_OUTPUTS, buildHTDemucsGraph, type GraphOptions, type TensorSpec } from './htdemucs-graph.js';
import { writeModel } from './onnx/graph.js';
import { SegmentStft, meanStd, type Normalization } from './stft.js';

export interface LoadDemucsOptions {
  /** Where converted graphs are kept (a `demucs/` folder is made inside). */
  readonly cacheDir: string;
  /** Threads per ONNX operator; default ONNX Runtime's choice. */
  readonly intraOpThreads?: number;
  /** The name the model answers to; default the file's name without extension. */
  readonly name?: string;
  /** Receives how long each part of every segment took (benchmarks). */
  readonly onTiming?: TimingSink;
}

/** Where a segment's time goes: `stft` (spectrogram and normalization), each graph stage, `istft` (inverse and sum). */
export type TimingSink = (part: string, milliseconds: number) => void;

/** One stage of a converted model: an ONNX file and the named tensors it reads and writes. */
export interface ConvertedStage {
  readonly name: string;
  /** File name inside the model's directory. */
  readonly file: string;
  readonly inputs: readonly TensorSpec[];
  readonly outputs: readonly TensorSpec[];
}

/** A converted checkpoint: what its stages need to run (`model.json` in its directory). */
export interface ConvertedModel {
  readonly format: typeof META_FORMAT;
  readonly checkpointSha256: string;
  /** Directory holding the stage files. */
  readonly directory: string;
  readonly stages: readonly ConvertedStage[];
  readonly sources: readonly string[];
  readonly sampleRate: number;
  readonly segmentSamples: number;
  readonly nfft: number;
  readonly audioChannels: number;
}

/** Bump when the graph layout changes, so caches convert again. */
const CONVERTER_VERSION = 3;
const META_FORMAT = 'stemsplit-demucs/2';
const GRAPH_OPTIONS: GraphOptions = { attention: 'fused' };
/** HTDemucs.forward: x = (x − mean) / (1e-5 + std), for both branches. */
const NORMALIZATION_EPS = 1e-5;

/** Loads a Demucs checkpoint (`.th`) or bag (`.yaml`) as one segment model. */
export async function loadDemucs(file: string, options: LoadDemucsOptions): Promise<SegmentModel> {
  const name = options.name ?? path.basename(file).replace(/\.(th|ya?ml)$/, '');
  if (/\.ya?ml$/.test(file)) return loadBag(file, name, options);
  const converted = await convertCheckpoint(file, options.cacheDir);
  return openConverted(converted, name, options);
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
  const directory = cacheEntryDir(cacheDir, sha256, CONVERTER_VERSION);
  const cached = await readCachedManifest(directory);
  if (isConvertedModel(cached)) return { ...cached, directory };

  const checkpoint = readCheckpoint(file);
  if (checkpoint.klass !== 'demucs.htdemucs.HTDemucs') {
    throw new StemsplitError('MODEL_INVALID', `unsupported class ${checkpoint.klass} in checkpoint ${file} (only HTDemucs is supported)`);
  }
  const config = parseHTDemucsConfig(checkpoint.kwargs);
  const { stages } = buildHTDemucsGraph(config, checkpoint.state, GRAPH_OPTIONS);
  const converted: ConvertedModel = {
    format: META_FORMAT,
    checkpointSha256: sha256,
    directory,
    stages: stages.map((stage, index) => ({
      name: stage.name,
      file: `${String(index).padStart(2, '0')}-${stage.name}.onnx`,
      inputs: stage.inputs,
      outputs: stage.outputs,
    })),
    sources: config.sources,
    sampleRate: config.samplerate,
    segmentSamples: config.segmentSamples,
    nfft: config.nfft,
    audioChannels: config.audioChannels,
  };
  const writeStages = (dir: string): void => {
    stages.forEach((stage, index) => writeModel(stage.graph.encode(), path.join(dir, (converted.stages[index] as ConvertedStage).file)));
  };
  await storeEntry(directory, writeStages, converted);
  return converted;
}

function isConvertedModel(value: unknown): value is ConvertedModel {
  if (typeof value !== 'object' || value === null) return false;
  const record = value as Record<string, unknown>;
  return (
    record['format'] === META_FORMAT &&
    Array.isArray(record['stages']) &&
    Array.isArray(record['sources']) &&
    typeof record['segmentSamples'] === 'number' &&
    typeof record['sampleRate'] === 'number' &&
    typeof record['nfft'] === 'number' &&
    typeof record['audioChannels'] === 'number'
  );
}

interface StageSession {
  readonly stage: ConvertedStage;
  readonly session: OrtSessionHandle;
  /** Tensors no later stage reads: dropped once this stage has run. */
  readonly lastUse: readonly string[];
}

async function openConverted(converted: ConvertedModel, name: string, options: LoadDemucsOptions): Promise<SegmentModel> {
  const { intraOpThreads } = options;
  const sessions: StageSession[] = [];
  try {
    for (const [index, stage] of converted.stages.entries()) {
      const session = await createOrtSession(path.join(converted.directory, stage.file), {
        ...(intraOpThreads === undefined ? {} : { intraOpThreads }),
        // Each stage is its own session; an arena per session would keep every stage's
        // peak allocated at once, so allocations go straight to the system allocator.
        cpuMemArena: false,
      });
      const later = converted.stages.slice(index + 1).flatMap((s) => s.inputs.map((input) => input.name));
      const lastUse = stage.inputs.map((input) => input.name).filter((input) => !later.includes(input));
      sessions.push({ stage, session, lastUse });
    }
  } catch (error) {
    await Promise.all(sessions.map(({ session }) => session.release()));
    throw error;
  }
  return new HTDemucsModel(name, converted, sessions, options.onTiming ?? ignoreTiming);
}

const ignoreTiming: TimingSink = () => undefined;

/** (x − mean) / (eps + std) into a new array; returns it with the statistics to undo it. */
function normalized(values: Float32Array): { data: Float32Array; stats: Normalization } {
  const stats = meanStd(values);
  const scale = 1 / (NORMALIZATION_EPS + stats.std);
  const data = new Float32Array(values.length);
  for (let i = 0; i < values.length; i++) data[i] = ((values[i] as number) - stats.mean) * scale;
  return { data, stats };
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
    private readonly sessions: readonly StageSession[],
    private readonly onTiming: TimingSink,
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
    let started = performance.now();
    const spec = new Float32Array(2 * channels * stft.freqs * stft.frames);
    const specStats = stft.analyze(segment, spec, NORMALIZATION_EPS);
    const { data: wave, stats: waveStats } = normalized(segment);
    this.onTiming('stft', performance.now() - started);

    const outputs = await this.runStages(new Map([
      [GRAPH_INPUTS.spec, { data: spec, dims: [1, 2 * channels, stft.freqs, stft.frames] }],
      [GRAPH_INPUTS.wave, { data: wave, dims: [1, channels, length] }],
    ]));
    const specOut = outputs.get(GRAPH_OUTPUTS.spec);
    const waveOut = outputs.get(GRAPH_OUTPUTS.wave);
    const sources = this.sources.length;
    // Both outputs come in phase layout: [1, phases, planes, rows(, frames)].
    const [, specPhases, specPlanes, specRows] = specOut?.dims ?? [];
    const [, wavePhases, wavePlanes, waveRows] = waveOut?.dims ?? [];
    if (
      specOut === undefined || waveOut === undefined ||
      specPhases === undefined || specPlanes !== sources * 2 * channels || specRows === undefined ||
      wavePhases === undefined || wavePlanes !== sources * channels || waveRows === undefined || wavePhases * waveRows < length
    ) {
      throw new StemsplitError('SEPARATION_FAILED', `${this.name}: the graph's outputs have unexpected shapes`);
    }

    // Per source: the time branch plus the inverse STFT of the spectrogram branch, both de-normalized.
    started = performance.now();
    const out = new Float32Array(sources * channels * length);
    for (let s = 0; s < sources; s++) {
      const source = {
        spec: { data: specOut.data, phases: specPhases, planes: specPlanes, rows: specRows, firstPlane: s * 2 * channels },
        specStats,
        wave: { data: waveOut.data, phases: wavePhases, planes: wavePlanes, rows: waveRows, firstPlane: s * channels },
        waveStats,
      };
      stft.synthesize(source, out, s * channels * length);
    }
    this.onTiming('istft', performance.now() - started);
    return out;
  }

  /** Runs the stages in order; each reads its inputs by name from what earlier ones wrote. */
  private async runStages(tensors: Map<string, Float32Tensor>): Promise<Map<string, Float32Tensor>> {
    for (const { stage, session, lastUse } of this.sessions) {
      const feeds: Record<string, Float32Tensor> = {};
      for (const input of stage.inputs) {
        const tensor = tensors.get(input.name);
        if (tensor === undefined) throw new StemsplitError('SEPARATION_FAILED', `${this.name}: stage ${stage.name} lacks input ${input.name}`);
        feeds[input.name] = tensor;
      }
      const started = performance.now();
      const results = await runTensors(session, feeds);
      this.onTiming(`graph:${stage.name}`, performance.now() - started);
      for (const name of lastUse) tensors.delete(name);
      for (const [outputName, tensor] of Object.entries(results)) tensors.set(outputName, tensor);
    }
    return tensors;
  }

  async dispose(): Promise<void> {
    await Promise.all(this.sessions.map(({ session }) => session.release()));
  }
}
