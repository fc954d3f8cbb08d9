/**
 * BS-RoFormer and Mel-Band RoFormer checkpoints (MSST format): the checkpoint and its yaml are
 * converted to ONNX stages once (cached), and a track is separated with MSST's own chunked
 * `demix` (msst/network.ts).
 *
 *   RoformerNetwork.forward: chunk [C, L] → STFT → stages → masks → iSTFT → [S, C, L]
 *   loadRoformer:            the network as a stemsplit model
 */
import { StemsplitError } from '../../errors.js';
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
import type { OpsOptions } from '../../onnx/ops.js';
import type { CheckpointTensor } from '../../torch/checkpoint.js';
import { precisionKey, type Precision } from '../../onnx/quantize.js';
import type { StagedSessions, StageFile } from '../../onnx/stages.js';
import type { TrackModel } from '../../separation/model.js';
import { bandBins } from './bands.js';
import { readRoformerConfig, type RoformerConfig, type RoformerType } from './config.js';
import { buildRoformerStages } from './graph.js';
import { ChunkSpectrum } from './spectrum.js';

/** Bump when the graph layout changes, so caches convert again. */
const CONVERTER_VERSION = 5;

export interface LoadRoformerOptions extends MsstLoadOptions {
  readonly type?: RoformerType;
  /** `int8`: convert (and cache) the graphs with int8 matrix products; default fp32. */
  readonly precision?: Precision;
}

/** The RoFormer network on one chunk, any channel count. */
export class RoformerNetwork extends StagedChunkNetwork<RoformerConfig> {
  static readonly family = new StagedFamily<RoformerConfig, ChunkSpectrum, RoformerNetwork, OpsOptions>({
    name: 'roformer',
    converterVersion: CONVERTER_VERSION,
    spectrum: chunkSpectrum,
    build: (config, state, spectrum, file, options) => buildRoformerStages(config, state, graphShape(config, spectrum), file, options),
    network: (config, spectrum, stages, onTiming) => new RoformerNetwork(config, spectrum, stages, onTiming),
  });

  private constructor(
    config: RoformerConfig,
    private readonly spectrum: ChunkSpectrum,
    stages: StagedSessions,
    onTiming: ChunkTimingSink | undefined,
  ) {
    super(config, stages, onTiming);
  }

  // async: a missing or bad config is a rejection, as every load failure is.
  static async open(checkpoint: string, options: LoadRoformerOptions & StageRunOptions): Promise<RoformerNetwork> {
    const configPath = options.configPath ?? configBeside(checkpoint);
    const config = readRoformerConfig(configPath, options.type, options.segmentSize);
    const build = {
      options: { precision: options.precision ?? 'fp32' },
      variant: `${config.type}${precisionKey(options.precision)}${chunkVariant(config)}`,
      cacheDir: options.cacheDir,
    } as const;
    return RoformerNetwork.family.open(checkpoint, config, configPath, build, options);
  }

  /** Writes the stages of weights held in memory into `directory` (benchmarks build random full-size ones). */
  static writeStages(config: RoformerConfig, state: ReadonlyMap<string, CheckpointTensor>, directory: string, precision: Precision = 'fp32'): StageFile[] {
    return RoformerNetwork.family.writeStages(config, state, directory, { precision });
  }

  /** A network from the stages `writeStages` wrote. */
  static fromStages(config: RoformerConfig, directory: string, stages: readonly StageFile[], options: StageRunOptions = {}): Promise<RoformerNetwork> {
    return RoformerNetwork.family.fromStages(config, directory, stages, options);
  }

  /** One chunk [channels, chunkSize] (planar) → [stems, channels, chunkSize]. */
  async forward(chunk: Float32Array): Promise<Float32Array> {
    const { spectrum, config } = this;
    let started = performance.now();
    const spec = spectrum.analyze(chunk);
    const features = spectrum.features(spec);
    started = this.lap('stft', started);
    const masks = await this.stages.run({ data: features, dims: [spectrum.frames, spectrum.featureWidth] });
    started = this.lap('graph', started);
    const audio = spectrum.synthesize(spec, masks.data, config.numStems);
    this.lap('istft', started);
    if (spectrum.outputLength === config.chunkSize) return audio;
    // Mel-Band without match_input_audio_length returns hop·(frames−1) samples; pad to the chunk.
    const padded = new Float32Array(config.numStems * config.channels * config.chunkSize);
    for (let plane = 0; plane < config.numStems * config.channels; plane++) {
      padded.set(audio.subarray(plane * spectrum.outputLength, (plane + 1) * spectrum.outputLength), plane * config.chunkSize);
    }
    return padded;
  }
}

function chunkSpectrum(config: RoformerConfig, configPath: string): ChunkSpectrum {
  if (config.type === 'mel_band_roformer' && !config.matchInputLength && config.chunkSize % config.hop !== 0) {
    throw new StemsplitError(
      'MODEL_INVALID',
      `${configPath}: chunk_size ${config.chunkSize} is not a multiple of the hop ${config.hop}, which Mel-Band RoFormer's demix needs`,
    );
  }
  return new ChunkSpectrum(config, config.chunkSize, bandBins(config));
}

function graphShape(config: RoformerConfig, spectrum: ChunkSpectrum): { frames: number; bandWidths: number[] } {
  return { frames: spectrum.frames, bandWidths: bandBins(config).map((bins) => 2 * config.channels * bins.length) };
}

/** A RoFormer checkpoint as a stemsplit model (MSST's demix; `no_<target>` for a single-target model). */
export async function loadRoformer(checkpoint: string, options: LoadRoformerOptions): Promise<TrackModel> {
  return stagedMsstModel(await RoformerNetwork.open(checkpoint, options), checkpoint, options);
}
