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
import { readStateDict } from '../demucs/checkpoint.js';
import { writeModel } from '../demucs/onnx/graph.js';
import type { SegmentModel, SeparationProgress } from '../separation/model.js';
import { createOrtSession, runTensors, type OrtSessionHandle } from '../separation/onnx-session.js';
import type { StereoTrack } from '../separation/pipeline.js';
import { bandBins } from './bands.js';
import { configBeside, readRoformerConfig, type RoformerConfig, type RoformerType } from './config.js';
import { demix } from './demix.js';
import { buildRoformerGraph, GRAPH_INPUT, GRAPH_OUTPUT } from './graph.js';
import { ChunkSpectrum } from './spectrum.js';

/** Bump when the graph layout changes, so caches convert again. */
const CONVERTER_VERSION = 1;
const GRAPH_FILE = 'network.onnx';
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

/** The RoFormer network on one chunk, any channel count. */
export class RoformerNetwork {
  private constructor(
    readonly config: RoformerConfig,
    private readonly spectrum: ChunkSpectrum,
    private readonly session: OrtSessionHandle,
  ) {}

  static async open(checkpoint: string, options: LoadRoformerOptions): Promise<RoformerNetwork> {
    const configPath = options.configPath ?? configBeside(checkpoint);
    const config = readRoformerConfig(configPath, options.type);
    if (config.type === 'mel_band_roformer' && !config.matchInputLength && config.chunkSize % config.hop !== 0) {
      throw new StemsplitError('MODEL_INVALID', `${configPath}: chunk_size ${config.chunkSize} is not a multiple of the hop ${config.hop}, which Mel-Band RoFormer's demix needs`);
    }
    const spectrum = new ChunkSpectrum(config, config.chunkSize, bandBins(config));
    const graphFile = await convert(checkpoint, configPath, config, spectrum, options.cacheDir);
    const session = await createOrtSession(graphFile, options.intraOpThreads === undefined ? {} : { intraOpThreads: options.intraOpThreads });
    return new RoformerNetwork(config, spectrum, session);
  }

  /** One chunk [channels, chunkSize] (planar) → [stems, channels, chunkSize]. */
  async forward(chunk: Float32Array): Promise<Float32Array> {
    const { spectrum, config } = this;
    const spec = spectrum.analyze(chunk);
    const features = spectrum.features(spec);
    const result = await runTensors(this.session, { [GRAPH_INPUT]: { data: features, dims: [spectrum.frames, spectrum.featureWidth] } }, [GRAPH_OUTPUT]);
    const audio = spectrum.synthesize(spec, (result[GRAPH_OUTPUT] as { data: Float32Array }).data, config.numStems);
    if (spectrum.outputLength === config.chunkSize) return audio;
    // Mel-Band without match_input_audio_length returns hop·(frames−1) samples; pad to the chunk.
    const padded = new Float32Array(config.numStems * config.channels * config.chunkSize);
    for (let plane = 0; plane < config.numStems * config.channels; plane++) {
      padded.set(audio.subarray(plane * spectrum.outputLength, (plane + 1) * spectrum.outputLength), plane * config.chunkSize);
    }
    return padded;
  }

  /** MSST's demix of a whole track [channels, length] → [stems, channels, length]. */
  demixTrack(track: Float32Array, options: { batchSize?: number; onProgress?: (done: number, total: number) => void; signal?: AbortSignal } = {}): Promise<Float32Array> {
    const { config } = this;
    return demix((chunk) => this.forward(chunk), track, config.channels, config.numStems, {
      chunkSize: config.chunkSize,
      numOverlap: config.numOverlap,
      batchSize: options.batchSize ?? config.batchSize,
    }, {
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
  }

  release(): Promise<void> {
    return this.session.release();
  }
}

/** Converts unless the cache holds this checkpoint + config already; returns the graph file. */
async function convert(checkpoint: string, configPath: string, config: RoformerConfig, spectrum: ChunkSpectrum, cacheDir: string): Promise<string> {
  let checkpointSha: string;
  try {
    checkpointSha = await sha256File(checkpoint);
  } catch (error) {
    throw new StemsplitError('MODEL_NOT_FOUND', `cannot read checkpoint ${checkpoint}`, { cause: error });
  }
  const configSha = createHash('sha256').update(readFileSync(configPath)).update(config.type).digest('hex');
  const key = createHash('sha256').update(`${checkpointSha}:${configSha}`).digest('hex');
  const directory = cacheEntryDir(cacheDir, key, CONVERTER_VERSION, 'roformer');
  const cached = (await readCachedManifest(directory)) as { format?: unknown } | undefined;
  if (cached?.format === META_FORMAT) return path.join(directory, GRAPH_FILE);

  const state = readStateDict(checkpoint);
  const graph = buildRoformerGraph(config, state, { frames: spectrum.frames, bandWidths: bandWidths(config) }, checkpoint);
  const manifest = { format: META_FORMAT, checkpointSha256: checkpointSha, configSha256: configSha, type: config.type, instruments: config.instruments };
  await storeEntry(directory, (dir) => writeModel(graph.encode(), path.join(dir, GRAPH_FILE)), manifest);
  return path.join(directory, GRAPH_FILE);
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
    async separateTrack(track: StereoTrack, progress?: (p: SeparationProgress) => void, signal?: AbortSignal): Promise<Float32Array[]> {
      return separateStereo(network, track, options.batchSize, progress, signal);
    },
    dispose: () => network.release(),
  };
}

async function separateStereo(
  network: RoformerNetwork,
  track: StereoTrack,
  batchSize: number | undefined,
  progress?: (p: SeparationProgress) => void,
  signal?: AbortSignal,
): Promise<Float32Array[]> {
  const { config } = network;
  const { length } = track;
  const input = config.channels === 2 ? track.data.subarray(0, 2 * length) : mono(track);
  const norm = config.normalize ? meanStd(input, config.channels, length) : { mean: 0, std: 1 };
  const model = norm.std === 1 && norm.mean === 0 ? input : input.map((v) => (v - norm.mean) / norm.std);
  const out = await network.demixTrack(model, {
    ...(batchSize !== undefined ? { batchSize } : {}),
    onProgress: (done, total) => progress?.({ done, total }),
    ...(signal ? { signal } : {}),
  });
  const stems: Float32Array[] = [];
  for (let s = 0; s < config.numStems; s++) {
    const stereo = new Float32Array(2 * length);
    for (let c = 0; c < 2; c++) {
      const from = (s * config.channels + Math.min(c, config.channels - 1)) * length;
      for (let i = 0; i < length; i++) stereo[c * length + i] = (out[from + i] as number) * norm.std + norm.mean;
    }
    stems.push(stereo);
  }
  if (config.target !== null) {
    const target = stems[0] as Float32Array;
    stems.push(track.data.subarray(0, 2 * length).map((v, i) => v - (target[i] as number)));
  }
  return stems;
}

function mono(track: StereoTrack): Float32Array {
  const out = new Float32Array(track.length);
  for (let i = 0; i < track.length; i++) out[i] = ((track.data[i] as number) + (track.data[track.length + i] as number)) / 2;
  return out;
}

/** MSST's normalize_audio: mean and population std of the channel-mean signal. */
function meanStd(data: Float32Array, channels: number, length: number): { mean: number; std: number } {
  let sum = 0;
  const monoAt = (i: number) => {
    let v = 0;
    for (let c = 0; c < channels; c++) v += data[c * length + i] as number;
    return v / channels;
  };
  for (let i = 0; i < length; i++) sum += monoAt(i);
  const mean = sum / length;
  let squares = 0;
  for (let i = 0; i < length; i++) squares += (monoAt(i) - mean) ** 2;
  const std = Math.sqrt(squares / length);
  return { mean, std: std > 0 ? std : 1 };
}
