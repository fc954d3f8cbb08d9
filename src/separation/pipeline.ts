/**
 * Whole-track separation with a segment model, computing what Demucs' `apply_model`
 * (demucs/apply.py) and `Separator` (demucs/api.py) compute:
 *
 * 1. normalise the whole track by the mean and standard deviation of its mono mix
 *    (when the model asks for it), and undo that on every output stem;
 * 2. cut each pass into chunks of one segment with stride `(1 - overlap) · segment`,
 *    pad short chunks centred with real neighbouring samples, run the model and
 *    centre-trim its output back to the chunk;
 * 3. add chunks back with triangular weights and divide by the summed weights;
 * 4. with `shifts > 0`, run that many passes on the track padded by half a second and
 *    read from a random offset, undo each offset and average the passes.
 *
 * Memory: the output stems plus one segment-sized accumulator. Chunks are processed in
 * order, so once chunk k is added, view positions before chunk k+1's offset will get no
 * more contributions; they are divided by their weight sum and written out, and the
 * accumulator slides on by one stride.
 */
import { StemsplitError } from '../errors.js';
import { chunkCount, chunksOf, shiftedView, strideOf, transitionWeights, type Chunk, type PassView } from './chunks.js';
import type { SegmentModel, SeparationProgress } from './model.js';

export interface StereoTrack {
  /** Planar [2, length]: left samples, then right samples. */
  readonly data: Float32Array;
  /** Samples per channel. */
  readonly length: number;
}

export interface SeparateOptions {
  /** Fraction of a segment consecutive chunks share; 0 ≤ overlap < 1. Default 0.25. */
  readonly overlap?: number;
  /** Shift-trick passes; 0 runs one unshifted pass. Default 0. */
  readonly shifts?: number;
  /** Sharpness of the cross-fade between chunks; ≥ 1. Default 1. */
  readonly transitionPower?: number;
  /** Seed of the shift offsets, so a run can be repeated. Default 0. */
  readonly seed?: number;
  readonly onProgress?: (progress: SeparationProgress) => void;
  readonly signal?: AbortSignal;
}

/** Demucs' normalisation: x' = (x - mean) / (std + 1e-8) over the mono mix; identity when off. */
export interface Normalization {
  readonly mean: number;
  /** Standard deviation plus 1e-8, the divisor. */
  readonly scale: number;
}

const IDENTITY: Normalization = { mean: 0, scale: 1 };

/** Separates a stereo track into one planar [2, length] buffer per model source. */
export async function separate(
  model: SegmentModel,
  track: StereoTrack,
  options: SeparateOptions = {},
): Promise<Float32Array[]> {
  const overlap = options.overlap ?? 0.25;
  const shifts = options.shifts ?? 0;
  const transitionPower = options.transitionPower ?? 1;
  checkInputs(model, track, overlap, shifts, transitionPower);
  if (model.separateTrack) return model.separateTrack(track, options.onProgress, options.signal);

  const segment = model.segmentSamples;
  const stride = strideOf(segment, overlap);
  const norm = model.normalize ? normalizationOf(track) : IDENTITY;
  const views = passViews(track.length, shifts, Math.trunc(0.5 * model.sampleRate), options.seed ?? 0);
  const total = views.reduce((sum, view) => sum + chunkCount(view.length, stride), 0);
  const outputs = model.sources.map(() => new Float32Array(2 * track.length));
  const pass = new OverlapAdd(model, track, norm, transitionWeights(segment, transitionPower), outputs);

  let done = 0;
  for (const view of views) {
    for (const chunk of chunksOf(view.length, segment, stride)) {
      options.signal?.throwIfAborted();
      await pass.addChunk(view, chunk, stride);
      options.onProgress?.({ done: ++done, total });
    }
  }
  // Demucs sums the shifted passes, then divides by their count.
  if (shifts > 1) for (const output of outputs) divideInPlace(output, shifts);
  if (norm !== IDENTITY) for (const output of outputs) denormalizeInPlace(output, norm);
  return outputs;
}

function checkInputs(model: SegmentModel, track: StereoTrack, overlap: number, shifts: number, power: number): void {
  const usage = (message: string): StemsplitError => new StemsplitError('USAGE', message);
  if (!(overlap >= 0 && overlap < 1)) throw usage(`overlap must be in [0, 1), got ${overlap}`);
  if (!(Number.isInteger(shifts) && shifts >= 0)) throw usage(`shifts must be a whole number ≥ 0, got ${shifts}`);
  if (!(power >= 1)) throw usage(`transition power must be ≥ 1, got ${power}`);
  if (strideOf(model.segmentSamples, overlap) < 1) throw usage(`overlap ${overlap} leaves no stride`);
  if (!(Number.isInteger(track.length) && track.length > 0)) {
    throw new StemsplitError('SEPARATION_FAILED', 'cannot separate an empty track');
  }
  if (track.data.length < 2 * track.length) {
    throw new StemsplitError('SEPARATION_FAILED', `track buffer holds ${track.data.length} samples, ${2 * track.length} needed`);
  }
}

/** Mean and unbiased standard deviation (plus 1e-8) of the mono mix, as float32 values like Demucs'. */
export function normalizationOf(track: StereoTrack): Normalization {
  const { data, length } = track;
  let sum = 0;
  for (let i = 0; i < length; i++) sum += ((data[i] ?? 0) + (data[length + i] ?? 0)) / 2;
  const mean = sum / length;
  let squares = 0;
  for (let i = 0; i < length; i++) squares += (((data[i] ?? 0) + (data[length + i] ?? 0)) / 2 - mean) ** 2;
  const std = length > 1 ? Math.sqrt(squares / (length - 1)) : 0;
  return { mean: Math.fround(mean), scale: Math.fround(Math.fround(std) + 1e-8) };
}

/** The passes to run: the track itself, or one view per shift offset. */
function passViews(length: number, shifts: number, maxShift: number, seed: number): PassView[] {
  if (shifts === 0) return [{ origin: 0, length }];
  return shiftOffsets(shifts, maxShift, seed).map((offset) => shiftedView(length, maxShift, offset));
}

/** The shift trick's offsets: `shifts` seeded draws from [0, maxShift], like Demucs' `random.randint(0, max_shift)`. */
export function shiftOffsets(shifts: number, maxShift: number, seed: number): number[] {
  const random = mulberry32(seed);
  return Array.from({ length: shifts }, () => Math.floor(random() * (maxShift + 1)));
}

/** A small, well-distributed 32-bit PRNG; good enough to draw shift offsets reproducibly. */
function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function divideInPlace(values: Float32Array, divisor: number): void {
  for (let i = 0; i < values.length; i++) values[i] = (values[i] ?? 0) / divisor;
}

function denormalizeInPlace(values: Float32Array, norm: Normalization): void {
  for (let i = 0; i < values.length; i++) values[i] = Math.fround((values[i] ?? 0) * norm.scale) + norm.mean;
}

/**
 * The weighted overlap-add of one pass at a time, over a sliding window one segment long.
 * `window` holds the weighted sums of view positions [windowOffset, windowOffset + segment)
 * per source and channel; `weightSum` holds their summed weights.
 */
class OverlapAdd {
  private readonly segment: number;
  private readonly planes: number;
  private readonly input: Float32Array;
  private readonly window: Float32Array;
  private readonly weightSum: Float32Array;
  private windowOffset = 0;

  constructor(
    private readonly model: SegmentModel,
    private readonly track: StereoTrack,
    private readonly norm: Normalization,
    private readonly weights: Float32Array,
    private readonly outputs: readonly Float32Array[],
  ) {
    this.segment = model.segmentSamples;
    this.planes = 2 * model.sources.length;
    this.input = new Float32Array(2 * this.segment);
    this.window = new Float32Array(this.planes * this.segment);
    this.weightSum = new Float32Array(this.segment);
  }

  async addChunk(view: PassView, chunk: Chunk, stride: number): Promise<void> {
    if (chunk.offset === 0) this.reset();
    this.readWindow(view, chunk);
    const output = await this.model.run(this.input);
    if (output.length !== this.planes * this.segment) {
      throw new StemsplitError(
        'SEPARATION_FAILED',
        `model ${this.model.name} returned ${output.length} samples, expected ${this.planes * this.segment}`,
      );
    }
    this.accumulate(chunk, output);
    // The next chunk starts one stride on; none does when that is past the view's end.
    const isLast = chunk.offset + stride >= view.length;
    const settled = isLast ? view.length - chunk.offset : stride;
    this.flush(view, settled);
    if (!isLast) this.slide(stride);
  }

  private reset(): void {
    this.window.fill(0);
    this.weightSum.fill(0);
    this.windowOffset = 0;
  }

  /** Fills the model input with the chunk's centred window, normalised, zero outside the track. */
  private readWindow(view: PassView, chunk: Chunk): void {
    const { data, length } = this.track;
    const { mean, scale } = this.norm;
    const start = view.origin + chunk.windowStart;
    for (let channel = 0; channel < 2; channel++) {
      const target = this.input.subarray(channel * this.segment, (channel + 1) * this.segment);
      target.fill(0);
      const from = Math.max(0, start);
      const to = Math.min(length, start + this.segment);
      for (let position = from; position < to; position++) {
        target[position - start] = Math.fround((data[channel * length + position] ?? 0) - mean) / scale;
      }
    }
  }

  /** Adds the centre-trimmed output, weighted by the first `chunk.length` weights (as Demucs does). */
  private accumulate(chunk: Chunk, output: Float32Array): void {
    const at = chunk.offset - this.windowOffset;
    for (let plane = 0; plane < this.planes; plane++) {
      const source = output.subarray(plane * this.segment + chunk.outputStart);
      const target = this.window.subarray(plane * this.segment + at);
      for (let i = 0; i < chunk.length; i++) {
        // Rounded like Demucs' float32 `weight * chunk_out` before the sum.
        target[i] = (target[i] ?? 0) + Math.fround((this.weights[i] ?? 0) * (source[i] ?? 0));
      }
    }
    for (let i = 0; i < chunk.length; i++) this.weightSum[at + i] = (this.weightSum[at + i] ?? 0) + (this.weights[i] ?? 0);
  }

  /** Divides the first `count` window positions by their weights and adds them to the outputs. */
  private flush(view: PassView, count: number): void {
    const length = this.track.length;
    for (let plane = 0; plane < this.planes; plane++) {
      const output = this.outputs[plane >> 1];
      if (output === undefined) throw new Error('unreachable: one output per source');
      const base = (plane & 1) * length;
      const sums = this.window.subarray(plane * this.segment);
      for (let i = 0; i < count; i++) {
        const position = view.origin + this.windowOffset + i;
        // Positions before the track only exist in the padding of a shifted pass.
        if (position < 0) continue;
        output[base + position] = (output[base + position] ?? 0) + (sums[i] ?? 0) / (this.weightSum[i] ?? 1);
      }
    }
  }

  private slide(stride: number): void {
    for (let plane = 0; plane < this.planes; plane++) {
      const sums = this.window.subarray(plane * this.segment, (plane + 1) * this.segment);
      sums.copyWithin(0, stride);
      sums.fill(0, this.segment - stride);
    }
    this.weightSum.copyWithin(0, stride);
    this.weightSum.fill(0, this.segment - stride);
    this.windowOffset += stride;
  }
}
