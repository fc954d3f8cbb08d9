/**
 * Demucs v3 (HDemucs) and Demucs v2 (time-domain Demucs) as segment models. Unlike HTDemucs,
 * neither runs on a fixed training length: `apply_model` hands an HDemucs each chunk as it is
 * (the last one shorter) and a Demucs its chunk extended to `valid_length` with the track's
 * neighbouring samples. So a chain of stages (v3-graph.ts) is converted for each window length
 * met: the segment's, which every full chunk runs, once per checkpoint into the cache
 * (onnx/stages.ts `convertCached`); any other (a pass's last chunk, one per track) into a
 * temporary folder, from the weights read again, deleted once its sessions have read it (caching
 * those would keep the network's size on disk for every track length). The weights are not kept
 * in memory between conversions, and one length's sessions are open at a time: another length's
 * replace them, so the network's weights are held once.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { StemsplitError } from '../errors.js';
import type { CheckpointTensor } from '../torch/checkpoint.js';
import type { SegmentModel } from '../separation/model.js';
import { precisionKey, type Precision } from '../onnx/quantize.js';
import { collectGarbage, convertCached, STAGE_SESSION_OPTIONS, StagedSessions, writeStageFiles, type GraphStage, type StageFile } from '../onnx/stages.js';
import { SegmentStft, meanStd } from './stft.js';
import type { DemucsConfig, HDemucsConfig, V3Config } from './v3-config.js';
import { buildDemucsStages, demucsValidLength } from './v2-graph.js';
import { V3_INPUTS, V3_OUTPUTS, buildHDemucsStages } from './v3-graph.js';

/** HDemucs.forward and Demucs.forward: x = (x − mean) / (1e-5 + std). */
const NORMALIZATION_EPS = 1e-5;
/** The longest segment a bag may set: far above Demucs' released 44 s, short enough to fit a window in memory. */
const MAX_SEGMENT_SECONDS = 600;
/** STFT tables kept per model: the segment's, the last chunk's, and one spare. */
const KEPT_STFTS = 3;
/** Bump when the stages' layout changes, so caches convert again. */
const V3_CONVERTER_VERSION = 4;
/** The cache folder, shared with HTDemucs' conversions and the pulled checkpoints (so `models remove` finds them). */
const CACHE_FOLDER = 'demucs';

export interface OpenV3Options {
  readonly intraOpThreads?: number;
  readonly precision?: Precision;
  /** A bag's `segment` (seconds): it replaces the model's own when longer, as BagOfModels does. */
  readonly bagSegment?: number;
  /** The run's `--segment` (seconds): replaces the model's and the bag's, as apply_model's `segment` does. */
  readonly segment?: number;
}

/** Where a model's weights come from. */
export interface V3Weights {
  /** What errors name: the checkpoint's path. */
  readonly file: string;
  /** The checkpoint's tensors, read for each chain of stages converted and not kept. */
  readonly read: () => ReadonlyMap<string, CheckpointTensor>;
  /** The checkpoint file whose SHA-256 keys the segment's cached stages, and the cache; absent: built in a temporary folder too (benchmarks' random weights). */
  readonly cache?: { readonly checkpoint: string; readonly cacheDir: string };
  /** Drops tensors held from the load (`read` reads them again later), once the segment's stages are converted. */
  readonly loaded?: () => void;
}

/** The model, its segment's stages converted (or found in the cache) and opened: a checkpoint that does not fit its class is refused as it loads. */
export async function openV3(config: V3Config, weights: V3Weights, name: string, options: OpenV3Options): Promise<SegmentModel> {
  if (options.bagSegment !== undefined && !(options.bagSegment > 0 && options.bagSegment <= MAX_SEGMENT_SECONDS)) {
    throw new StemsplitError(
      'MODEL_INVALID',
      `the bag of ${name} sets segment ${options.bagSegment} s (Demucs' bags use up to 44; stemsplit takes 0 to ${MAX_SEGMENT_SECONDS})`,
    );
  }
  const segment = options.segment ?? (options.bagSegment !== undefined && options.bagSegment > config.segment ? options.bagSegment : config.segment);
  const model =
    config.klass === 'HDemucs' ? new HDemucsModel(config, weights, name, segment, options) : new DemucsModel(config, weights, name, segment, options);
  try {
    await model.openSegment();
  } catch (error) {
    await model.dispose();
    throw error;
  }
  return model;
}

/** The stages of one window length, opened. */
interface OpenLength {
  readonly length: number;
  readonly sessions: Promise<StagedSessions>;
}

abstract class V3Model<C extends V3Config> implements SegmentModel {
  readonly sampleRate: number;
  readonly sources: readonly string[];
  readonly segmentSamples: number;
  readonly normalize = true;
  /** The segment's stages in the cache, once converted. */
  private cached: { readonly directory: string; readonly stages: readonly StageFile[] } | undefined;
  private open: OpenLength | undefined;

  constructor(
    protected readonly config: C,
    private readonly weights: V3Weights,
    readonly name: string,
    segment: number,
    private readonly options: OpenV3Options,
  ) {
    this.sampleRate = config.samplerate;
    this.sources = config.sources;
    // apply_model: int(samplerate · segment), the double product truncated.
    this.segmentSamples = Math.trunc(config.samplerate * segment);
  }

  /** What errors name. */
  protected get file(): string {
    return this.weights.file;
  }

  abstract windowSamples(chunkLength: number): number;
  abstract run(segment: Float32Array): Promise<Float32Array>;
  /** The chain of stages for windows of `length` samples. */
  protected abstract build(state: ReadonlyMap<string, CheckpointTensor>, length: number, precision: { precision?: Precision }): GraphStage[];

  /** Converts the segment's stages (or finds them in the cache) and opens them. */
  async openSegment(): Promise<void> {
    const length = this.windowSamples(this.segmentSamples);
    const { cache } = this.weights;
    if (cache !== undefined) {
      this.cached = await convertCached({
        checkpoint: cache.checkpoint,
        family: CACHE_FOLDER,
        converterVersion: V3_CONVERTER_VERSION,
        variant: `${this.config.klass}${precisionKey(this.options.precision)}:${length}`,
        cacheDir: cache.cacheDir,
        build: () => this.stagesFor(length),
      });
    }
    this.weights.loaded?.();
    collectGarbage();
    await this.sessions(length);
  }

  /** Converts into `directory`; nothing of the weights or graphs outlives the call. */
  private writeStages(length: number, directory: string): StageFile[] {
    return writeStageFiles(this.stagesFor(length), directory);
  }

  private stagesFor(length: number): GraphStage[] {
    return this.build(this.weights.read(), length, this.options.precision === undefined ? {} : { precision: this.options.precision });
  }

  /** The sessions for windows of `length` samples; another length's are released first. */
  protected sessions(length: number): Promise<StagedSessions> {
    if (this.open?.length === length) return this.open.sessions;
    const previous = this.open;
    const sessions = (async () => {
      await previous?.sessions.then(
        (opened) => opened.release(),
        () => undefined,
      );
      return this.openLength(length);
    })();
    this.open = { length, sessions };
    return sessions;
  }

  private async openLength(length: number): Promise<StagedSessions> {
    const options = { ...(this.options.intraOpThreads === undefined ? {} : { intraOpThreads: this.options.intraOpThreads }), ...STAGE_SESSION_OPTIONS };
    const { cached } = this;
    if (cached !== undefined && length === this.windowSamples(this.segmentSamples)) return StagedSessions.open(cached.directory, cached.stages, options);
    const directory = await mkdtemp(path.join(tmpdir(), 'stemsplit-demucs-v3-'));
    try {
      const files = this.writeStages(length, directory);
      // The weights just read and the graphs made of them, unreachable now, go before the sessions load their own copy.
      collectGarbage();
      return await StagedSessions.open(directory, files, options);
    } finally {
      // The sessions hold what they read.
      await rm(directory, { recursive: true, force: true });
    }
  }

  protected lengthOf(segment: Float32Array): number {
    if (segment.length % 2 !== 0 || segment.length === 0)
      throw new StemsplitError('SEPARATION_FAILED', `${this.name} takes stereo segments, got ${segment.length} samples`);
    return segment.length / 2;
  }

  async dispose(): Promise<void> {
    const open = this.open;
    this.open = undefined;
    // Sessions that failed to open have nothing to release.
    await open?.sessions.then(
      (opened) => opened.release(),
      () => undefined,
    );
  }
}

class HDemucsModel extends V3Model<HDemucsConfig> {
  private readonly stfts = new Map<number, SegmentStft>();

  /** apply_model gives an HDemucs (no `valid_length`) each chunk as it is. */
  windowSamples(chunkLength: number): number {
    return chunkLength;
  }

  protected build(state: ReadonlyMap<string, CheckpointTensor>, length: number, precision: { precision?: Precision }): GraphStage[] {
    return buildHDemucsStages(this.config, state, this.file, length, precision);
  }

  private stft(length: number): SegmentStft {
    let stft = this.stfts.get(length);
    if (stft === undefined) {
      if (this.stfts.size >= KEPT_STFTS) this.stfts.delete(this.stfts.keys().next().value as number);
      stft = new SegmentStft(this.config.nfft, length, { hybridOld: this.config.hybridOld });
      this.stfts.set(length, stft);
    }
    return stft;
  }

  async run(segment: Float32Array): Promise<Float32Array> {
    const { config } = this;
    const length = this.lengthOf(segment);
    const stft = this.stft(length);
    const plane = stft.freqs * stft.frames;
    const specChannels = config.cac ? 4 : 2;
    const spec = new Float32Array(specChannels * plane);
    const mixture = config.cac ? undefined : new Float32Array(4 * plane);
    const specStats = mixture === undefined ? stft.analyze(segment, spec, NORMALIZATION_EPS) : stft.analyzeMagnitude(segment, spec, mixture, NORMALIZATION_EPS);
    const waveStats = meanStd(segment);
    const scale = 1 / (NORMALIZATION_EPS + waveStats.std);
    const wave = segment.map((value) => (value - waveStats.mean) * scale);

    const sessions = await this.sessions(length);
    const feeds = {
      [V3_INPUTS.spec]: { data: spec, dims: [1, specChannels, stft.freqs, stft.frames] },
      [V3_INPUTS.wave]: { data: wave, dims: [1, 2, length] },
    };
    const results = await sessions.runNamed(feeds, [V3_OUTPUTS.spec, V3_OUTPUTS.wave]);
    const specOut = results[V3_OUTPUTS.spec];
    const waveOut = results[V3_OUTPUTS.wave];
    const sources = this.sources.length;
    if (
      specOut === undefined ||
      waveOut === undefined ||
      specOut.data.length !== sources * specChannels * plane ||
      waveOut.data.length !== sources * 2 * length
    ) {
      throw new StemsplitError('SEPARATION_FAILED', `${this.name}: the graph's outputs have unexpected shapes`);
    }
    // Without CaC the network gives magnitudes: they take the mixture's phase (Wiener filtering with 0 iterations).
    const complex = mixture === undefined ? specOut.data : withMixturePhase(specOut.data, specStats, mixture, sources, plane);
    const complexStats = mixture === undefined ? specStats : { mean: 0, std: 1 };
    const out = new Float32Array(sources * 2 * length);
    for (let s = 0; s < sources; s++) {
      stft.synthesize(
        {
          spec: { data: complex, phases: 1, planes: sources * 4, rows: stft.freqs, firstPlane: s * 4 },
          specStats: complexStats,
          wave: { data: waveOut.data, phases: 1, planes: sources * 2, rows: length, firstPlane: s * 2 },
          waveStats,
        },
        out,
        s * 2 * length,
      );
    }
    return out;
  }
}

/** Per source and channel: the de-normalized magnitude m times the mixture's e^{iθ}, as CaC planes. */
function withMixturePhase(magnitudes: Float32Array, stats: { mean: number; std: number }, mixture: Float32Array, sources: number, plane: number): Float32Array {
  const out = new Float32Array(sources * 4 * plane);
  for (let s = 0; s < sources; s++) {
    for (let c = 0; c < 2; c++) {
      const from = (s * 2 + c) * plane;
      const re = 2 * c * plane;
      const im = (2 * c + 1) * plane;
      const to = (s * 4 + 2 * c) * plane;
      for (let i = 0; i < plane; i++) {
        const m = Math.fround((magnitudes[from + i] as number) * stats.std + stats.mean);
        const angle = Math.atan2(mixture[im + i] as number, mixture[re + i] as number);
        out[to + i] = m * Math.cos(angle);
        out[to + plane + i] = m * Math.sin(angle);
      }
    }
  }
  return out;
}

class DemucsModel extends V3Model<DemucsConfig> {
  windowSamples(chunkLength: number): number {
    return demucsValidLength(this.config, chunkLength);
  }

  protected build(state: ReadonlyMap<string, CheckpointTensor>, length: number, precision: { precision?: Precision }): GraphStage[] {
    return buildDemucsStages(this.config, state, this.file, length, precision);
  }

  async run(segment: Float32Array): Promise<Float32Array> {
    const length = this.lengthOf(segment);
    let mean = 0;
    let std = 1;
    let input = segment;
    if (this.config.normalize) {
      const mono = new Float32Array(length);
      for (let i = 0; i < length; i++) mono[i] = ((segment[i] as number) + (segment[length + i] as number)) / 2;
      ({ mean, std } = meanStd(mono));
      const scale = 1 / (NORMALIZATION_EPS + std);
      input = segment.map((value) => (value - mean) * scale);
    }
    const sessions = await this.sessions(length);
    const results = await sessions.runNamed({ [V3_INPUTS.wave]: { data: input, dims: [1, 2, length] } }, [V3_OUTPUTS.wave]);
    const out = results[V3_OUTPUTS.wave];
    if (out === undefined || out.data.length !== this.sources.length * 2 * length) {
      throw new StemsplitError('SEPARATION_FAILED', `${this.name}: the graph's output has an unexpected shape`);
    }
    return out.data.map((value) => value * std + mean);
  }
}
