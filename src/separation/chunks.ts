/**
 * Index arithmetic of Demucs-style chunked inference, kept in one place.
 *
 * A pass runs over a *view* of the track: without shifts the view is the track itself;
 * with the shift trick it is the track zero-padded by `maxShift` on both sides and read
 * from a random offset, so view position `j` is track position `j + origin` (origin ≤ 0).
 * Anything outside the track reads as zero, which is also what the padded view holds.
 */

/** One chunk of a view and the model-sized window centred on it. */
export class Chunk {
  /**
   * @param offset first view position the chunk owns
   * @param length samples the chunk owns (the last chunk may be shorter than a segment)
   * @param segment samples the model takes
   */
  constructor(
    readonly offset: number,
    readonly length: number,
    readonly segment: number,
  ) {
    if (!(length > 0 && length <= segment)) throw new RangeError(`chunk length ${length} outside 1..${segment}`);
  }

  /**
   * Samples of context on the left of a short chunk. A short chunk is padded *centred*
   * (Demucs' TensorChunk.padded), reading the real neighbouring samples where there are
   * some, so the model sees the chunk in the middle of its window, as in training.
   */
  get leftPad(): number {
    return Math.floor((this.segment - this.length) / 2);
  }

  /** View position of the model window's first sample (negative when it starts before the view). */
  get windowStart(): number {
    return this.offset - this.leftPad;
  }

  /**
   * Where the chunk's own samples sit in the model's output: the output is centre-trimmed
   * back to the chunk (Demucs' center_trim removes the odd extra sample on the right).
   */
  get outputStart(): number {
    return this.leftPad;
  }
}

/** Chunks covering view positions [0, viewLength) with the given stride (Demucs: `range(0, length, stride)`). */
export function* chunksOf(viewLength: number, segment: number, stride: number): Generator<Chunk> {
  for (let offset = 0; offset < viewLength; offset += stride) {
    yield new Chunk(offset, Math.min(segment, viewLength - offset), segment);
  }
}

export function chunkCount(viewLength: number, stride: number): number {
  return Math.ceil(viewLength / stride);
}

/** Demucs' stride: consecutive chunks share `overlap` of a segment. */
export function strideOf(segment: number, overlap: number): number {
  return Math.trunc((1 - overlap) * segment);
}

/**
 * The cross-fade weights: a triangle peaking mid-segment, normalised to 1 and raised to
 * `transitionPower`. Chunk edges, where a model sees the least context, count least; with
 * overlap < 50 % and power 1 consecutive chunks cross-fade linearly. Values are rounded
 * to float32 as Demucs computes them.
 */
export function transitionWeights(segment: number, transitionPower: number): Float32Array {
  const half = Math.floor(segment / 2);
  // Rising 1..half, then falling (segment - half)..1; the peak is segment - half.
  const peak = segment - half;
  const weights = new Float32Array(segment);
  for (let i = 0; i < segment; i++) {
    const value = i < half ? i + 1 : segment - i;
    weights[i] = Math.fround(Math.fround(value / peak) ** transitionPower);
  }
  return weights;
}

/** Where a shifted pass starts reading: `origin` maps view position 0 into the track. */
export interface PassView {
  /** Track position of view position 0 (≤ 0: the view starts inside the left zero padding). */
  readonly origin: number;
  /** View length; the view always ends where the track ends (plus padding, for shifts). */
  readonly length: number;
}

/** The view of one shift pass: Demucs pads by maxShift both sides and reads from `shiftOffset` on. */
export function shiftedView(trackLength: number, maxShift: number, shiftOffset: number): PassView {
  const origin = shiftOffset - maxShift;
  return { origin, length: trackLength - origin };
}
