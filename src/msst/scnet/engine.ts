/**
 * SCNet checkpoints (MSST format): the checkpoint and its yaml are converted to ONNX once
 * (cached), and a track is separated with MSST's own chunked `demix` (msst/network.ts).
 *
 *   ScnetNetwork.forward: chunk [C, L] → zero-pad to an even frame count → torch.stft (in JS)
 *                         → graph → torch.istft (in JS) → cut the padding → [S, C, L]
 *   loadScnet:            the network as a stemsplit model
 */
import { TorchStft } from '../../dsp/stft.js';
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
import { precisionKey, type Precision } from '../../onnx/quantize.js';
import type { StagedSessions, StageFile } from '../../onnx/stages.js';
import type { TrackModel } from '../../separation/model.js';
import type { CheckpointTensor } from '../../torch/checkpoint.js';
import { readScnetConfig, type ScnetConfig } from './config.js';
import { buildScnetStages } from './graph.js';

/** Bump when the graph layout changes, so caches convert again. */
const CONVERTER_VERSION = 5;

export interface LoadScnetOptions extends MsstLoadOptions {
  /** `int8`: convert (and cache) the graphs with int8 LSTMs and matrix products; default fp32. */
  readonly precision?: Precision;
}

/**
 * SCNet.forward's padding: zeros up to a whole number of hops, one hop more when that number
 * is even, so the centred STFT has an even frame count (the separation net rffts the frames).
 */
export function chunkPadding(length: number, hop: number): number {
  let padding = hop - (length % hop);
  if (((length + padding) / hop) % 2 === 0) padding += hop;
  return padding;
}

/** The STFT of one padded chunk. */
function chunkStft(config: ScnetConfig, configPath: string): TorchStft {
  const padded = config.chunkSize + chunkPadding(config.chunkSize, config.hop);
  try {
    return new TorchStft({ nFft: config.nFft, hop: config.hop, winLength: config.winLength, window: 'ones', normalized: config.normalized }, padded);
  } catch (error) {
    throw new StemsplitError('MODEL_INVALID', `${configPath}: ${(error as Error).message}`);
  }
}

/** The SCNet network on one chunk. */
export class ScnetNetwork extends StagedChunkNetwork<ScnetConfig> {
  static readonly family = new StagedFamily<ScnetConfig, TorchStft, ScnetNetwork, OpsOptions>({
    name: 'scnet',
    converterVersion: CONVERTER_VERSION,
    spectrum: chunkStft,
    build: (config, state, stft, file, options) => buildScnetStages(config, state, { bins: stft.bins, frames: stft.frames }, file, options),
    network: (config, stft, stages, onTiming) => new ScnetNetwork(config, stft, stages, onTiming),
  });

  private constructor(
    config: ScnetConfig,
    private readonly stft: TorchStft,
    stages: StagedSessions,
    onTiming: ChunkTimingSink | undefined,
  ) {
    super(config, stages, onTiming);
  }

  // async: a missing or bad config is a rejection, as every load failure is.
  static async open(checkpoint: string, options: LoadScnetOptions & StageRunOptions): Promise<ScnetNetwork> {
    const configPath = options.configPath ?? configBeside(checkpoint);
    const config = readScnetConfig(configPath, options.segmentSize);
    const variant = `${precisionKey(options.precision)}${chunkVariant(config)}`;
    const build = { options: { precision: options.precision ?? 'fp32' }, variant, cacheDir: options.cacheDir } as const;
    return ScnetNetwork.family.open(checkpoint, config, configPath, build, options);
  }

  /** Writes the stages of weights held in memory into `directory` (benchmarks build random full-size ones). */
  static writeStages(config: ScnetConfig, state: ReadonlyMap<string, CheckpointTensor>, directory: string, precision: Precision = 'fp32'): StageFile[] {
    return ScnetNetwork.family.writeStages(config, state, directory, { precision });
  }

  /** A network from the stages `writeStages` wrote. */
  static fromStages(config: ScnetConfig, directory: string, stages: readonly StageFile[], options: StageRunOptions = {}): Promise<ScnetNetwork> {
    return ScnetNetwork.family.fromStages(config, directory, stages, options);
  }

  /** One chunk [channels, chunkSize] (planar) → [stems, channels, chunkSize]. */
  async forward(chunk: Float32Array): Promise<Float32Array> {
    const { stft, config } = this;
    const { channels, chunkSize } = config;
    const stems = config.sources.length;
    const plane = stft.bins * stft.frames;
    let started = performance.now();
    const spectrum = new Float32Array(2 * channels * plane);
    const padded = new Float32Array(stft.length);
    for (let c = 0; c < channels; c++) {
      padded.set(chunk.subarray(c * chunkSize, (c + 1) * chunkSize));
      stft.analyze(padded, spectrum.subarray(2 * c * plane, (2 * c + 1) * plane), spectrum.subarray((2 * c + 1) * plane, (2 * c + 2) * plane));
    }
    started = this.lap('stft', started);
    const out = await this.stages.run({ data: spectrum, dims: [1, 2 * channels, stft.bins, stft.frames] });
    started = this.lap('graph', started);
    const audio = new Float32Array(stems * channels * chunkSize);
    for (let j = 0; j < stems * channels; j++) {
      const real = out.data.subarray(2 * j * plane, (2 * j + 1) * plane);
      const imag = out.data.subarray((2 * j + 1) * plane, (2 * j + 2) * plane);
      stft.synthesize(real, imag, audio.subarray(j * chunkSize, (j + 1) * chunkSize));
    }
    this.lap('istft', started);
    return audio;
  }
}

/** An SCNet checkpoint as a stemsplit model (MSST's demix; `no_<target>` for a single-target model). */
export async function loadScnet(checkpoint: string, options: LoadScnetOptions): Promise<TrackModel> {
  return stagedMsstModel(await ScnetNetwork.open(checkpoint, options), checkpoint, options);
}
