/**
 * MDX23C checkpoints (MSST format, `model_type: mdx23c`): the checkpoint and its yaml are
 * converted to an ONNX graph once (cached), and a track is separated with MSST's own chunked
 * `demix` (msst/network.ts).
 *
 *   Mdx23cNetwork.forward: chunk [C, L] → STFT (dim_f bins, sub-bands) → graph → iSTFT → [S, C, L]
 *   loadMdx23c:            the network as a stemsplit model
 */
import { configBeside } from '../config.js';
import {
  chunkVariant,
  StagedChunkNetwork,
  StagedFamily,
  stagedMsstModel,
  type ChunkTimingSink,
  type MsstLoadOptions,
  type StageRunOptions,
} from '../staged.js';
import type { StagedSessions, StageFile } from '../../onnx/stages.js';
import type { TrackModel } from '../../separation/model.js';
import type { CheckpointTensor } from '../../torch/checkpoint.js';
import { readMdx23cConfig, type Mdx23cConfig } from './config.js';
import { buildMdx23cStages, type Mdx23cGraphOptions } from './graph.js';
import { ChunkSpectrum } from './spectrum.js';

/** Bump when the graph layout changes, so caches convert again. */
const CONVERTER_VERSION = 5;

export type LoadMdx23cOptions = MsstLoadOptions;

/** The MDX23C network on one chunk. */
export class Mdx23cNetwork extends StagedChunkNetwork<Mdx23cConfig> {
  static readonly family = new StagedFamily<Mdx23cConfig, ChunkSpectrum, Mdx23cNetwork, Mdx23cGraphOptions>({
    name: 'mdx23c',
    converterVersion: CONVERTER_VERSION,
    spectrum: (config) => new ChunkSpectrum(config, config.chunkSize),
    build: buildMdx23cStages,
    network: (config, spectrum, stages, onTiming) => new Mdx23cNetwork(config, spectrum, stages, onTiming),
  });

  private constructor(
    config: Mdx23cConfig,
    private readonly spectrum: ChunkSpectrum,
    stages: StagedSessions,
    onTiming: ChunkTimingSink | undefined,
  ) {
    super(config, stages, onTiming);
  }

  // async: a missing or bad config is a rejection, as every load failure is.
  static async open(checkpoint: string, options: LoadMdx23cOptions & StageRunOptions): Promise<Mdx23cNetwork> {
    const configPath = options.configPath ?? configBeside(checkpoint);
    const config = readMdx23cConfig(configPath, options.segmentSize);
    return Mdx23cNetwork.family.open(checkpoint, config, configPath, { options: {}, variant: chunkVariant(config), cacheDir: options.cacheDir }, options);
  }

  /** Writes the graph of weights held in memory into `directory` (benchmarks build random full-size ones). */
  static writeStages(config: Mdx23cConfig, state: ReadonlyMap<string, CheckpointTensor>, directory: string, options: Mdx23cGraphOptions = {}): StageFile[] {
    return Mdx23cNetwork.family.writeStages(config, state, directory, options);
  }

  /** A network from the stages `writeStages` wrote. */
  static fromStages(config: Mdx23cConfig, directory: string, stages: readonly StageFile[], options: StageRunOptions = {}): Promise<Mdx23cNetwork> {
    return Mdx23cNetwork.family.fromStages(config, directory, stages, options);
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
}

/** An MDX23C checkpoint as a stemsplit model (MSST's demix; `no_<target>` for a single-target model). */
export async function loadMdx23c(checkpoint: string, options: LoadMdx23cOptions): Promise<TrackModel> {
  return stagedMsstModel(await Mdx23cNetwork.open(checkpoint, options), checkpoint, options);
}
