/**
 * MDX23C checkpoints (MSST format, `model_type: mdx23c`): the checkpoint and its yaml are
 * converted to an ONNX graph once (cached), and a track is separated with MSST's own chunked
 * `demix` (msst/network.ts).
 *
 *   Mdx23cNetwork.forward: chunk [C, L] → STFT (dim_f bins, sub-bands) → graph → iSTFT → [S, C, L]
 *   loadMdx23c:            the network as a stemsplit model
 */
import path from 'node:path';
import { configBeside } from '../msst/config.js';
import { demixTrack, msstModel, type ChunkNetwork, type DemixRunOptions } from '../msst/network.js';
import { convertCached, StagedSessions, writeStageFiles, type StageFile } from '../onnx/stages.js';
import type { TrackModel } from '../separation/model.js';
import type { CheckpointTensor } from '../torch/checkpoint.js';
import { readStateDict } from '../torch/checkpoint.js';
import { readMdx23cConfig, type Mdx23cConfig } from './config.js';
import { buildMdx23cStages } from './graph.js';
import { ChunkSpectrum } from './spectrum.js';

/** Bump when the graph layout changes, so caches convert again. */
const CONVERTER_VERSION = 1;

export interface LoadMdx23cOptions {
  readonly cacheDir: string;
  /** The MSST yaml; default the checkpoint's path with `.yaml` (or `.yml`) for its extension. */
  readonly configPath?: string;
  readonly intraOpThreads?: number;
  readonly name?: string;
  /** Overrides `inference.batch_size` (it changes which chunks fade out at the end). */
  readonly batchSize?: number;
}

/** Where a chunk's time goes: `stft`, `graph` (ONNX Runtime), `istft`. */
export type Mdx23cTimingSink = (part: 'stft' | 'graph' | 'istft', milliseconds: number) => void;

interface StartOptions {
  readonly intraOpThreads?: number;
  readonly onTiming?: Mdx23cTimingSink;
}

/** The MDX23C network on one chunk. */
export class Mdx23cNetwork implements ChunkNetwork {
  private constructor(
    readonly config: Mdx23cConfig,
    private readonly spectrum: ChunkSpectrum,
    private readonly stages: StagedSessions,
    private readonly onTiming: Mdx23cTimingSink | undefined,
  ) {}

  get settings(): Mdx23cConfig {
    return this.config;
  }

  static async open(checkpoint: string, options: LoadMdx23cOptions & StartOptions): Promise<Mdx23cNetwork> {
    const configPath = options.configPath ?? configBeside(checkpoint);
    const config = readMdx23cConfig(configPath);
    const spectrum = new ChunkSpectrum(config, config.chunkSize);
    const { directory, stages } = await convertCached({
      checkpoint,
      configPath,
      family: 'mdx23c',
      converterVersion: CONVERTER_VERSION,
      cacheDir: options.cacheDir,
      build: () => buildMdx23cStages(config, readStateDict(checkpoint), spectrum, checkpoint),
    });
    return Mdx23cNetwork.start(config, spectrum, directory, stages, options);
  }

  /** Writes the graph of weights held in memory into `directory` (benchmarks build random full-size ones). */
  static writeStages(config: Mdx23cConfig, state: ReadonlyMap<string, CheckpointTensor>, directory: string): StageFile[] {
    return writeStageFiles(buildMdx23cStages(config, state, new ChunkSpectrum(config, config.chunkSize), 'the weights'), directory);
  }

  /** A network from the stages `writeStages` wrote. */
  static fromStages(config: Mdx23cConfig, directory: string, stages: readonly StageFile[], options: StartOptions = {}): Promise<Mdx23cNetwork> {
    return Mdx23cNetwork.start(config, new ChunkSpectrum(config, config.chunkSize), directory, stages, options);
  }

  private static async start(
    config: Mdx23cConfig,
    spectrum: ChunkSpectrum,
    directory: string,
    files: readonly StageFile[],
    options: StartOptions,
  ): Promise<Mdx23cNetwork> {
    const stages = await StagedSessions.open(directory, files, {
      ...(options.intraOpThreads === undefined ? {} : { intraOpThreads: options.intraOpThreads }),
      cpuMemArena: false,
    });
    return new Mdx23cNetwork(config, spectrum, stages, options.onTiming);
  }

  /** One chunk [channels, chunkSize] (planar) → [stems, channels, chunkSize]. */
  async forward(chunk: Float32Array): Promise<Float32Array> {
    const { spectrum } = this;
    let started = performance.now();
    const input = spectrum.analyze(chunk);
    started = this.lap('stft', started);
    const output = await this.stages.run({ data: input, dims: [1, spectrum.inputChannels, spectrum.frames, spectrum.subbandBins] });
    started = this.lap('graph', started);
    const audio = spectrum.synthesize(output.data, this.config.instruments.length);
    this.lap('istft', started);
    return audio;
  }

  private lap(part: 'stft' | 'graph' | 'istft', started: number): number {
    const now = performance.now();
    this.onTiming?.(part, now - started);
    return now;
  }

  /** MSST's demix of a whole track [channels, length] → [stems, channels, length]. */
  demixTrack(track: Float32Array, options: DemixRunOptions = {}): Promise<Float32Array> {
    return demixTrack(this, track, options);
  }

  release(): Promise<void> {
    return this.stages.release();
  }
}

/** An MDX23C checkpoint as a stemsplit model (MSST's demix; `no_<target>` for a single-target model). */
export async function loadMdx23c(checkpoint: string, options: LoadMdx23cOptions): Promise<TrackModel> {
  const network = await Mdx23cNetwork.open(checkpoint, options);
  const name = options.name ?? path.basename(checkpoint).replace(/\.(ckpt|pth|pt|chpt)$/i, '');
  return msstModel(network, name, options.batchSize === undefined ? {} : { batchSize: options.batchSize });
}
