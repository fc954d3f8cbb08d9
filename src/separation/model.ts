import type { StemWriter, TrackStream } from './stream.js';

/**
 * The model contract: what the separation pipeline needs from any model.
 *
 * A model separates one fixed-length stereo segment at a time. Everything around
 * that (normalization, chunking, padding, overlap-add, shifts) is the pipeline's job,
 * so a model only has to be correct on a single segment.
 *
 * Audio layout everywhere in the separation core is planar float32:
 *   a stereo segment of L samples is Float32Array(2 * L) = [left..., right...];
 *   a model's output for S sources is Float32Array(S * 2 * L) = [src0 L, src0 R, src1 L, ...].
 */
export interface SegmentModel {
  /** The name the user picked or the registry resolved (e.g. `bundled-4s`, `htdemucs`). */
  readonly name: string;
  readonly sampleRate: number;
  /** Stem names in the order `run` returns them. */
  readonly sources: readonly string[];
  /** Exact number of samples per channel `run` takes and returns. */
  readonly segmentSamples: number;
  /** Whether the pipeline normalizes the whole track first (as Demucs' inference does). */
  readonly normalize: boolean;
  /**
   * Whether a mono source still gets stereo stems: its network can make the two channels of the
   * duplicated mix differ, and its official code writes them both (python-audio-separator's MDX
   * separator). Default: a mono source gets mono stems.
   */
  readonly stereoForMono?: boolean;
  /** Separates one planar [2, segmentSamples] segment into planar [sources, 2, segmentSamples]. */
  run(segment: Float32Array): Promise<Float32Array>;
  /**
   * Present when the model brings its own chunked inference (a RoFormer runs MSST's demix, not
   * Demucs' apply): `separateStream` hands it the streamed track and its statistics, and it writes
   * one planar [2, n] block per source, in order, as separateStream's own pipeline does.
   */
  streamTrack?(input: TrackStream, write: StemWriter, options: { readonly onProgress?: (progress: SeparationProgress) => void; readonly signal?: AbortSignal }): Promise<void>;
  dispose(): Promise<void>;
}

/**
 * The on-disk description of an ONNX model (`model.json` beside its `.onnx` file).
 * `input` names the graph's calling convention, so new kinds of graph can be added
 * without touching the pipeline.
 */
export interface ModelManifest {
  readonly format: 'stemsplit-model/1';
  readonly name: string;
  /** One honest sentence: what the model is and how good it is. */
  readonly description: string;
  readonly sampleRate: number;
  readonly sources: readonly string[];
  readonly segmentSamples: number;
  /** Fraction of a segment shared by consecutive chunks (Demucs uses 0.25). */
  readonly overlap: number;
  readonly normalize: boolean;
  /**
   * `waveform`: graph input `mix` float32 [1, 2, segmentSamples],
   *             graph output `stems` float32 [1, sources, 2, segmentSamples].
   */
  readonly input: 'waveform';
  /** File name of the ONNX graph, relative to the manifest. */
  readonly onnx: string;
  /** Free-form provenance (training run, data, licence). */
  readonly provenance?: Readonly<Record<string, unknown>>;
}

/** Progress of one separation, reported after each segment. */
export interface SeparationProgress {
  /** Segments done so far, over all shifts and bag members. */
  readonly done: number;
  readonly total: number;
}
