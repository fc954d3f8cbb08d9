import type { StemWriter, TrackStream } from './track-stream.js';

/**
 * The model contract: what a family must give the separation pipeline, in one of two forms.
 *
 * - A `SegmentModel` separates one fixed-length stereo segment at a time; everything around that
 *   (normalisation, chunking, padding, overlap-add, shifts) is the pipeline's job, as in Demucs'
 *   `apply_model`. Demucs and the bundled models are segment models.
 * - A `TrackModel` brings its own chunked inference over the streamed track (MSST's demix for
 *   RoFormer, SCNet and MDX23C; python-audio-separator's for MDX-Net) and writes settled blocks.
 *
 * Either way every required member is implemented: nothing answers "unsupported".
 *
 * Audio layout everywhere in the separation core is planar float32:
 *   a stereo segment of L samples is Float32Array(2 * L) = [left..., right...];
 *   a model's output for S sources is Float32Array(S * 2 * L) = [src0 L, src0 R, src1 L, ...].
 */
interface ModelIdentity {
  /** The name the user picked or the registry resolved (e.g. `bundled-4s`, `htdemucs`). */
  readonly name: string;
  readonly sampleRate: number;
  /** Stem names in the order the model writes them. */
  readonly sources: readonly string[];
  /** Whether the pipeline measures the whole track first: the model normalises by its mean and std. */
  readonly normalize: boolean;
  /**
   * Whether a mono source still gets stereo stems: its network can make the two channels of the
   * duplicated mix differ, and its official code writes them both (python-audio-separator's MDX
   * separator). Default: a mono source gets mono stems.
   */
  readonly stereoForMono?: boolean;
  dispose(): Promise<void>;
}

export interface SegmentModel extends ModelIdentity {
  /** Exact number of samples per channel `run` takes and returns. */
  readonly segmentSamples: number;
  /** Fraction of a segment consecutive chunks share; default Demucs' 0.25. */
  readonly overlap?: number;
  /** Shift-trick passes the run asked for (`--shifts`, segment-knobs.ts); default none. */
  readonly shifts?: number;
  /** `--no-split`: the whole track in one chunk, refused for a track longer than a segment. */
  readonly noSplit?: boolean;
  /**
   * Samples of the window `run` takes for a chunk of `chunkLength` ≤ segmentSamples samples: the
   * chunk centred in it, the track's neighbouring samples around it (zeros past the track's ends),
   * the output centre-trimmed back to the chunk, as Demucs' `apply_model` pads to `valid_length`.
   * Default: segmentSamples for every chunk (HTDemucs); Demucs v2 rounds up to its valid length,
   * HDemucs runs each chunk as it is.
   */
  windowSamples?(chunkLength: number): number;
  /**
   * A bag whose members chunk the track differently (their own segments and windows, Demucs v3):
   * each member separates the whole track and its stems count with its weights, as Demucs'
   * BagOfModels. `separateStream` runs the members then, never `run`.
   */
  readonly bagMembers?: readonly BagMember[];
  /** Separates one planar [2, window] segment into planar [sources, 2, window] (window: `windowSamples`, default segmentSamples). */
  run(segment: Float32Array): Promise<Float32Array>;
}

/** One model of a bag and its weight for each source. */
export interface BagMember {
  readonly model: SegmentModel;
  readonly weights: readonly number[];
}

export interface TrackModel extends ModelIdentity {
  /**
   * Separates the streamed track (with its statistics when `normalize`), writing one planar
   * [2, n] block per source, in order, as separateStream's own pipeline does.
   */
  streamTrack(
    input: TrackStream,
    write: StemWriter,
    options: { readonly onProgress?: (progress: SeparationProgress) => void; readonly signal?: AbortSignal },
  ): Promise<void>;
}

export type SeparationModel = SegmentModel | TrackModel;

export function isTrackModel(model: SeparationModel): model is TrackModel {
  return 'streamTrack' in model;
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
