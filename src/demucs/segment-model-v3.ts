/**
 * Demucs v3 (HDemucs) and Demucs v2 (time-domain Demucs) as segment models. Unlike HTDemucs,
 * neither runs on a fixed training length: `apply_model` hands an HDemucs each chunk as it is
 * (the last one shorter) and a Demucs its chunk extended to `valid_length` with the track's
 * neighbouring samples. So a graph is built (in memory, from the weights read once) for each
 * window length met, and kept for the next chunk of that length.
 */
import { StemsplitError } from '../errors.js';
import type { CheckpointTensor } from '../torch/checkpoint.js';
import type { SegmentModel } from '../separation/model.js';
import type { OnnxGraph } from '../onnx/graph.js';
import type { Precision } from '../onnx/quantize.js';
import { createOrtSession, runTensors, type OrtSessionHandle } from '../onnx/session.js';
import { SegmentStft, meanStd } from './stft.js';
import type { DemucsConfig, HDemucsConfig, V3Config } from './v3-config.js';
import { V3_INPUTS, V3_OUTPUTS, buildDemucsGraph, buildHDemucsGraph, demucsValidLength } from './v3-graph.js';

/** HDemucs.forward and Demucs.forward: x = (x − mean) / (1e-5 + std). */
const NORMALIZATION_EPS = 1e-5;
/** The longest segment a bag may set: far above Demucs' released 44 s, short enough to fit a window in memory. */
const MAX_SEGMENT_SECONDS = 600;
/** Graphs kept per model: the segment's, the last chunk's, and one spare. */
const KEPT_GRAPHS = 3;

export interface OpenV3Options {
  readonly intraOpThreads?: number;
  readonly precision?: Precision;
  /** A bag's `segment` (seconds): it replaces the model's own when longer, as BagOfModels does. */
  readonly bagSegment?: number;
}

/** The model; its graph for a full segment is built (not yet encoded) here, so a checkpoint that does not fit its class is refused as it loads. */
export function openV3(config: V3Config, state: ReadonlyMap<string, CheckpointTensor>, file: string, name: string, options: OpenV3Options): SegmentModel {
  if (options.bagSegment !== undefined && !(options.bagSegment > 0 && options.bagSegment <= MAX_SEGMENT_SECONDS)) {
    throw new StemsplitError('MODEL_INVALID', `the bag of ${name} sets segment ${options.bagSegment} s (Demucs' bags use up to 44; stemsplit takes 0 to ${MAX_SEGMENT_SECONDS})`);
  }
  const segment = options.bagSegment !== undefined && options.bagSegment > config.segment ? options.bagSegment : config.segment;
  const model = config.klass === 'HDemucs' ? new HDemucsModel(config, state, file, name, segment, options) : new DemucsModel(config, state, file, name, segment, options);
  model.prepare(model.windowSamples(model.segmentSamples));
  return model;
}

/** One ONNX session per window length, built when first needed; the least recently used is released beyond KEPT_GRAPHS. */
abstract class V3Model<C extends V3Config> implements SegmentModel {
  readonly sampleRate: number;
  readonly sources: readonly string[];
  readonly segmentSamples: number;
  readonly normalize = true;
  private readonly sessions = new Map<number, Promise<OrtSessionHandle>>();
  /** A graph built before its first run (by `prepare`), used for its length's session. */
  private prepared: { readonly length: number; readonly graph: OnnxGraph } | undefined;

  constructor(
    protected readonly config: C,
    protected readonly state: ReadonlyMap<string, CheckpointTensor>,
    protected readonly file: string,
    readonly name: string,
    segment: number,
    protected readonly options: OpenV3Options,
  ) {
    this.sampleRate = config.samplerate;
    this.sources = config.sources;
    // apply_model: int(samplerate · segment), the double product truncated.
    this.segmentSamples = Math.trunc(config.samplerate * segment);
  }

  abstract windowSamples(chunkLength: number): number;
  abstract run(segment: Float32Array): Promise<Float32Array>;
  /** The graph for windows of `length` samples. */
  abstract graph(length: number): OnnxGraph;

  /** Builds the graph for `length` now: the checkpoint is checked against its class as it loads, not at its first chunk. */
  prepare(length: number): void {
    this.prepared = { length, graph: this.graph(length) };
  }

  private takeGraph(length: number): OnnxGraph {
    const prepared = this.prepared;
    this.prepared = undefined;
    return prepared?.length === length ? prepared.graph : this.graph(length);
  }

  protected precisionOptions(): { precision?: Precision } {
    return this.options.precision === undefined ? {} : { precision: this.options.precision };
  }

  protected session(length: number): Promise<OrtSessionHandle> {
    let session = this.sessions.get(length);
    if (session === undefined) {
      session = createOrtSession(this.takeGraph(length).encode().toBytes(), {
        ...(this.options.intraOpThreads === undefined ? {} : { intraOpThreads: this.options.intraOpThreads }),
        // Several sessions (window lengths, bag members) live at once: an arena each would keep every one's peak.
        cpuMemArena: false,
        allowSpinning: false,
      });
      this.sessions.set(length, session);
      if (this.sessions.size > KEPT_GRAPHS) {
        const [oldest, released] = this.sessions.entries().next().value as [number, Promise<OrtSessionHandle>];
        this.sessions.delete(oldest);
        void released.then((handle) => handle.release()).catch(() => undefined);
      }
    } else {
      // Most recently used last.
      this.sessions.delete(length);
      this.sessions.set(length, session);
    }
    return session;
  }

  protected lengthOf(segment: Float32Array): number {
    if (segment.length % 2 !== 0 || segment.length === 0) throw new StemsplitError('SEPARATION_FAILED', `${this.name} takes stereo segments, got ${segment.length} samples`);
    return segment.length / 2;
  }

  async dispose(): Promise<void> {
    const sessions = [...this.sessions.values()];
    this.sessions.clear();
    // A session that failed to open has nothing to release.
    await Promise.all(sessions.map((session) => session.then((handle) => handle.release(), () => undefined)));
  }
}

class HDemucsModel extends V3Model<HDemucsConfig> {
  private readonly stfts = new Map<number, SegmentStft>();

  /** apply_model gives an HDemucs (no `valid_length`) each chunk as it is. */
  windowSamples(chunkLength: number): number {
    return chunkLength;
  }

  graph(length: number): OnnxGraph {
    return buildHDemucsGraph(this.config, this.state, this.file, length, this.precisionOptions());
  }

  private stft(length: number): SegmentStft {
    let stft = this.stfts.get(length);
    if (stft === undefined) {
      if (this.stfts.size >= KEPT_GRAPHS) this.stfts.delete(this.stfts.keys().next().value as number);
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

    const session = await this.session(length);
    const results = await runTensors(session, {
      [V3_INPUTS.spec]: { data: spec, dims: [1, specChannels, stft.freqs, stft.frames] },
      [V3_INPUTS.wave]: { data: wave, dims: [1, 2, length] },
    });
    const specOut = results[V3_OUTPUTS.spec];
    const waveOut = results[V3_OUTPUTS.wave];
    const sources = this.sources.length;
    if (specOut === undefined || waveOut === undefined || specOut.data.length !== sources * specChannels * plane || waveOut.data.length !== sources * 2 * length) {
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
      const re = (2 * c) * plane;
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

  graph(length: number): OnnxGraph {
    return buildDemucsGraph(this.config, this.state, this.file, length, this.precisionOptions());
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
    const session = await this.session(length);
    const results = await runTensors(session, { [V3_INPUTS.wave]: { data: input, dims: [1, 2, length] } });
    const out = results[V3_OUTPUTS.wave];
    if (out === undefined || out.data.length !== this.sources.length * 2 * length) {
      throw new StemsplitError('SEPARATION_FAILED', `${this.name}: the graph's output has an unexpected shape`);
    }
    return out.data.map((value) => value * std + mean);
  }
}
