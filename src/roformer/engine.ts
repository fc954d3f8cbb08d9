/**
 * BS-RoFormer and Mel-Band RoFormer checkpoints (MSST format) as segment models: the
 * checkpoint and its yaml are converted to one ONNX graph once (cached by both files' SHA-256
 * and the converter version), and a track is separated with MSST's own chunked `demix`.
 *
 *   RoformerNetwork.forward: chunk [C, L] → STFT → graph → masks → iSTFT → [S, C, L]
 *   loadRoformer:            the network + demix + normalisation as a stereo SegmentModel
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { StemsplitError } from '../errors.js';
import { cacheEntryDir, readCachedManifest, sha256File, storeEntry } from '../demucs/cache.js';
import { readStateDict, type CheckpointTensor } from '../demucs/checkpoint.js';
import { writeModel } from '../demucs/onnx/graph.js';
import type { SegmentModel, SeparationProgress } from '../separation/model.js';
import { createOrtSession, runTensors, type OrtSessionHandle } from '../separation/onnx-session.js';
import { TrackWindow, type StemWriter, type TrackStream } from '../separation/stream.js';
import { bandBins } from './bands.js';
import { configBeside, readRoformerConfig, type RoformerConfig, type RoformerType } from './config.js';
import { demix, demixStream, type DemixOptions, type DemixSettings, type DemixSource, type DemixWriter } from './demix.js';
import { buildRoformerStages, type RoformerStage } from './graph.js';
import { ChunkSpectrum } from './spectrum.js';

/** A demix run: progress, cancellation, and the batch size when not the config's. */
type DemixRunOptions = DemixOptions & { readonly batchSize?: number };

/** Bump when the graph layout changes, so caches convert again. */
const CONVERTER_VERSION = 5;
const META_FORMAT = 'stemsplit-roformer/1';

export interface LoadRoformerOptions {
  readonly cacheDir: string;
  /** The MSST yaml; default the checkpoint's path with `.yaml` (or `.yml`) for its extension. */
  readonly configPath?: string;
  readonly type?: RoformerType;
  readonly intraOpThreads?: number;
  readonly name?: string;
  /** Overrides `inference.batch_size` (it changes which chunks fade out at the end). */
  readonly batchSize?: number;
}

/** Where a chunk's time goes: `stft` (spectrum and features), `graph` (ONNX Runtime), `istft` (masks and inverse). */
export type RoformerTimingSink = (part: 'stft' | 'graph' | 'istft', milliseconds: number) => void;

/** The RoFormer network on one chunk, any channel count. */
/** A converted stage on disk: its file and the tensors it reads and writes. */
interface StageFile {
  readonly file: string;
  readonly inputs: readonly string[];
  readonly output: string;
}

export class RoformerNetwork {
  private constructor(
    readonly config: RoformerConfig,
    private readonly spectrum: ChunkSpectrum,
    private readonly stages: readonly { readonly stage: StageFile; readonly session: OrtSessionHandle }[],
    private readonly onTiming: RoformerTimingSink | undefined,
  ) {}

  static async open(checkpoint: string, options: LoadRoformerOptions & { onTiming?: RoformerTimingSink }): Promise<RoformerNetwork> {
    const configPath = options.configPath ?? configBeside(checkpoint);
    const config = readRoformerConfig(configPath, options.type);
    const spectrum = chunkSpectrum(config, configPath);
    const { directory, stages } = await convert(checkpoint, configPath, config, spectrum, options.cacheDir);
    return RoformerNetwork.start(config, spectrum, directory, stages, options);
  }

  /** Writes the stages of weights held in memory into `directory` (benchmarks build random full-size ones). */
  static writeStages(config: RoformerConfig, state: ReadonlyMap<string, CheckpointTensor>, directory: string): StageFile[] {
    const spectrum = chunkSpectrum(config, 'the config');
    return writeStageFiles(buildRoformerStages(config, state, { frames: spectrum.frames, bandWidths: bandWidths(config) }, 'the weights'), directory);
  }

  /** A network from the stages `writeStages` wrote. */
  static fromStages(
    config: RoformerConfig,
    directory: string,
    stages: readonly StageFile[],
    options: { intraOpThreads?: number; onTiming?: RoformerTimingSink } = {},
  ): Promise<RoformerNetwork> {
    return RoformerNetwork.start(config, chunkSpectrum(config, 'the config'), directory, stages, options);
  }

  private static async start(
    config: RoformerConfig,
    spectrum: ChunkSpectrum,
    directory: string,
    files: readonly StageFile[],
    options: { intraOpThreads?: number; onTiming?: RoformerTimingSink },
  ): Promise<RoformerNetwork> {
    const stages: { stage: StageFile; session: OrtSessionHandle }[] = [];
    try {
      for (const stage of files) {
        const session = await createOrtSession(path.join(directory, stage.file), {
          ...(options.intraOpThreads === undefined ? {} : { intraOpThreads: options.intraOpThreads }),
          // Stages run one after another: no arena keeping each one's peak (an arena that shrinks after
          // every run measured faster, 18.8 s instead of 20.5 s for two blocks, but peaked at 5.3 GB
          // instead of 2.8: it grows in powers of two), no spinning threads taking the next one's cores.
          cpuMemArena: false,
          allowSpinning: false,
        });
        stages.push({ stage, session });
      }
    } catch (error) {
      await Promise.all(stages.map(({ session }) => session.release()));
      throw error;
    }
    return new RoformerNetwork(config, spectrum, stages, options.onTiming);
  }

  /** The stages in order: each reads the previous one's output first, then any skip tensors by name. */
  private async runStages(features: Float32Array): Promise<Float32Array> {
    const { spectrum } = this;
    const tensors = new Map<string, { data: Float32Array; dims: readonly number[] }>();
    let current = { data: features, dims: [spectrum.frames, spectrum.featureWidth] as readonly number[] };
    for (const { stage, session } of this.stages) {
      const feeds: Record<string, { data: Float32Array; dims: readonly number[] }> = {};
      stage.inputs.forEach((name, i) => {
        feeds[name] = i === 0 ? current : (tensors.get(name) as { data: Float32Array; dims: readonly number[] });
      });
      const result = await runTensors(session, feeds, [stage.output]);
      current = result[stage.output] as { data: Float32Array; dims: readonly number[] };
      tensors.set(stage.output, current);
    }
    return current.data;
  }

  /** One chunk [channels, chunkSize] (planar) → [stems, channels, chunkSize]. */
  async forward(chunk: Float32Array): Promise<Float32Array> {
    const { spectrum, config } = this;
    let started = performance.now();
    const spec = spectrum.analyze(chunk);
    const features = spectrum.features(spec);
    started = this.lap('stft', started);
    const masks = await this.runStages(features);
    started = this.lap('graph', started);
    const audio = spectrum.synthesize(spec, masks, config.numStems);
    this.lap('istft', started);
    if (spectrum.outputLength === config.chunkSize) return audio;
    // Mel-Band without match_input_audio_length returns hop·(frames−1) samples; pad to the chunk.
    const padded = new Float32Array(config.numStems * config.channels * config.chunkSize);
    for (let plane = 0; plane < config.numStems * config.channels; plane++) {
      padded.set(audio.subarray(plane * spectrum.outputLength, (plane + 1) * spectrum.outputLength), plane * config.chunkSize);
    }
    return padded;
  }

  private lap(part: 'stft' | 'graph' | 'istft', started: number): number {
    const now = performance.now();
    this.onTiming?.(part, now - started);
    return now;
  }

  /** MSST's demix of a streamed track, its blocks written as they settle. */
  demixStream(source: DemixSource, write: DemixWriter, options: DemixRunOptions = {}): Promise<void> {
    const { config } = this;
    return demixStream((chunk) => this.forward(chunk), source, config.channels, config.numStems, this.#settings(options.batchSize), write, options);
  }

  /** MSST's demix of a whole track [channels, length] → [stems, channels, length]. */
  demixTrack(track: Float32Array, options: DemixRunOptions = {}): Promise<Float32Array> {
    const { config } = this;
    return demix((chunk) => this.forward(chunk), track, config.channels, config.numStems, this.#settings(options.batchSize), options);
  }

  /** The config's chunking, with its batch size unless the caller names one. */
  #settings(batchSize: number | undefined): DemixSettings {
    const { config } = this;
    return { chunkSize: config.chunkSize, numOverlap: config.numOverlap, batchSize: batchSize ?? config.batchSize };
  }

  async release(): Promise<void> {
    await Promise.all(this.stages.map(({ session }) => session.release()));
  }
}

function chunkSpectrum(config: RoformerConfig, configPath: string): ChunkSpectrum {
  if (config.type === 'mel_band_roformer' && !config.matchInputLength && config.chunkSize % config.hop !== 0) {
    throw new StemsplitError('MODEL_INVALID', `${configPath}: chunk_size ${config.chunkSize} is not a multiple of the hop ${config.hop}, which Mel-Band RoFormer's demix needs`);
  }
  return new ChunkSpectrum(config, config.chunkSize, bandBins(config));
}

/** Converts unless the cache holds this checkpoint + config already; returns the entry's directory and stages. */
async function convert(
  checkpoint: string,
  configPath: string,
  config: RoformerConfig,
  spectrum: ChunkSpectrum,
  cacheDir: string,
): Promise<{ directory: string; stages: readonly StageFile[] }> {
  let checkpointSha: string;
  try {
    checkpointSha = await sha256File(checkpoint);
  } catch (error) {
    throw new StemsplitError('MODEL_NOT_FOUND', `cannot read checkpoint ${checkpoint}`, { cause: error });
  }
  const configSha = createHash('sha256').update(readFileSync(configPath)).update(config.type).digest('hex');
  const key = createHash('sha256').update(`${checkpointSha}:${configSha}`).digest('hex');
  const directory = cacheEntryDir(cacheDir, key, CONVERTER_VERSION, 'roformer');
  const cached = (await readCachedManifest(directory)) as { format?: unknown; stages?: StageFile[] } | undefined;
  if (cached?.format === META_FORMAT && Array.isArray(cached.stages)) return { directory, stages: cached.stages };

  const state = readStateDict(checkpoint);
  const built = buildRoformerStages(config, state, { frames: spectrum.frames, bandWidths: bandWidths(config) }, checkpoint);
  const stages = built.map(stageFile);
  const manifest = { format: META_FORMAT, checkpointSha256: checkpointSha, configSha256: configSha, type: config.type, instruments: config.instruments, stages };
  await storeEntry(directory, (dir) => void writeStageFiles(built, dir), manifest);
  return { directory, stages };
}

function stageFile(stage: RoformerStage, index: number): StageFile {
  return { file: `${String(index).padStart(2, '0')}-${stage.name}.onnx`, inputs: stage.inputs, output: stage.output };
}

function writeStageFiles(stages: readonly RoformerStage[], directory: string): StageFile[] {
  return stages.map((stage, index) => {
    const file = stageFile(stage, index);
    writeModel(stage.graph.encode(), path.join(directory, file.file));
    return file;
  });
}

function bandWidths(config: RoformerConfig): number[] {
  return bandBins(config).map((bins) => 2 * config.channels * bins.length);
}

/**
 * A RoFormer as the pipeline's stereo SegmentModel. It owns whole-track inference
 * (`separateTrack`: MSST's demix, with `inference.normalize` when the config asks); a
 * single-target model also writes `no_<target>`, the mixture minus the target.
 */
export async function loadRoformer(checkpoint: string, options: LoadRoformerOptions): Promise<SegmentModel> {
  const network = await RoformerNetwork.open(checkpoint, options);
  const { config } = network;
  const name = options.name ?? path.basename(checkpoint).replace(/\.(ckpt|pth|pt|bin)$/i, '');
  const sources = config.target === null ? [...config.instruments] : [config.target, `no_${config.target}`];
  return {
    name,
    sampleRate: config.sampleRate,
    sources,
    segmentSamples: config.chunkSize,
    normalize: config.normalize,
    async run() {
      throw new StemsplitError('SEPARATION_FAILED', `${name} separates whole tracks (MSST demix), not single segments`);
    },
    streamTrack: (input, write, run) => streamStereo(network, input, write, options.batchSize, run),
    dispose: () => network.release(),
  };
}

/**
 * MSST's demix over a streamed stereo track: `inference.normalize` by the mono mix's mean and
 * population std (from the first pass), the model's channels fed from the window (a mono model
 * gets the mix of both), stems written as each block settles, duplicated to stereo for a mono
 * model; a single-target model also writes `no_<target>`, the mixture minus the target.
 */
async function streamStereo(
  network: RoformerNetwork,
  input: TrackStream,
  write: StemWriter,
  batchSize: number | undefined,
  options: { readonly onProgress?: (progress: SeparationProgress) => void; readonly signal?: AbortSignal },
): Promise<void> {
  const { config } = network;
  const { length } = input;
  const stats = input.statistics;
  if (config.normalize && stats === undefined) throw new StemsplitError('SEPARATION_FAILED', 'MSST normalisation needs the whole track\'s statistics');
  const mean = config.normalize && stats ? stats.mean : 0;
  const spread = config.normalize && stats ? Math.sqrt(stats.squares / stats.frames) : 1;
  const std = spread > 0 ? spread : 1;
  const window = new TrackWindow(input, 2 * config.chunkSize);
  const value =
    config.channels === 2
      ? (channel: number, position: number) => (window.sample(channel, position) - mean) / std
      : (_channel: number, position: number) => ((window.sample(0, position) + window.sample(1, position)) / 2 - mean) / std;
  const source: DemixSource = { length, ensure: (end) => window.ensure(end), discardBefore: (position) => window.discardBefore(position), value };
  const toStems: DemixWriter = async (planes, start, count) => {
    const stems: Float32Array[] = [];
    for (let s = 0; s < config.numStems; s++) {
      const stereo = new Float32Array(2 * count);
      for (let c = 0; c < 2; c++) {
        const plane = planes[s * config.channels + Math.min(c, config.channels - 1)] as Float32Array;
        for (let i = 0; i < count; i++) stereo[c * count + i] = (plane[i] as number) * std + mean;
      }
      stems.push(stereo);
    }
    if (config.target !== null) {
      const target = stems[0] as Float32Array;
      const rest = new Float32Array(2 * count);
      for (let c = 0; c < 2; c++) {
        for (let i = 0; i < count; i++) rest[c * count + i] = window.sample(c, start + i) - (target[c * count + i] as number);
      }
      stems.push(rest);
    }
    await write(stems, count);
  };
  try {
    await network.demixStream(source, toStems, {
      ...(batchSize !== undefined ? { batchSize } : {}),
      onProgress: (done, total) => options.onProgress?.({ done, total }),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    await window.finish();
  } catch (error) {
    await window.close().catch(() => undefined);
    throw error;
  }
}
