/**
 * Streaming separation: Demucs' chunked inference (see pipeline.ts for the maths) run over a
 * track that arrives as a stream of frames and leaves as a stream of stem blocks, so memory
 * depends on the segment length, never on the track's.
 *
 * - Input frames are kept in a sliding window from the earliest sample any pass still needs.
 * - Every shift pass runs in lockstep: the scheduler always advances the pass that has settled
 *   the fewest samples, so the passes' windows stay within one segment plus the shift range.
 * - Each pass adds its settled samples (weighted sums divided by their weights, as Demucs
 *   does) into one output buffer; samples every pass has settled are averaged over the
 *   passes, de-normalised and handed to `write`, then dropped.
 *
 * The whole-track statistics Demucs normalises with must come from a first pass over the
 * audio (normalization.ts); the caller decodes twice rather than keep the track. A track
 * model runs its own stream (`TrackModel.streamTrack`).
 */
import { StemsplitError } from '../errors.js';
import { Chunk, chunkCount, shiftedView, strideOf, transitionWeights, type PassView } from './chunks.js';
import { isTrackModel, type SegmentModel, type SeparationModel, type SeparationProgress } from './model.js';
import { monoMixNormalization, IDENTITY, type Normalization, type TrackStatistics } from './normalization.js';
import { TrackWindow, type StemWriter, type TrackStream } from './track-stream.js';

export interface StreamOptions {
  /** Fraction of a segment consecutive chunks share; 0 ≤ overlap < 1. Default: the model's own, else 0.25. */
  readonly overlap?: number;
  /** Shift-trick passes; 0 runs one unshifted pass. Default: the model's, else 0. */
  readonly shifts?: number;
  /** Sharpness of the cross-fade between chunks; ≥ 1. Default 1. */
  readonly transitionPower?: number;
  /** Seed of the shift offsets, so a run can be repeated. Default 0. */
  readonly seed?: number;
  readonly onProgress?: (progress: SeparationProgress) => void;
  readonly signal?: AbortSignal;
}

/** Demucs' `overlap`: a quarter of each segment is shared with the next. */
const DEFAULT_OVERLAP = 0.25;

/** Separates a streamed track, handing stems to `write` in order as soon as they are final. */
export async function separateStream(model: SeparationModel, input: TrackStream, write: StemWriter, options: StreamOptions = {}): Promise<void> {
  if (isTrackModel(model)) {
    if (!(Number.isInteger(input.length) && input.length > 0)) throw new StemsplitError('SEPARATION_FAILED', 'cannot separate an empty track');
    return model.streamTrack(input, write, {
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
  }
  const overlap = options.overlap ?? model.overlap ?? DEFAULT_OVERLAP;
  const shifts = options.shifts ?? model.shifts ?? 0;
  const transitionPower = options.transitionPower ?? 1;
  checkStreamInputs(model, input, overlap, shifts, transitionPower);
  const norm = model.normalize ? monoMixNormalization(input.statistics as TrackStatistics) : IDENTITY;
  const segment = model.segmentSamples;
  const window = new TrackWindow(input, segment);
  const output = new SettlingBuffer(2 * model.sources.length, input.length, 2 * segment);
  const views = passViews(input.length, shifts, Math.trunc(0.5 * model.sampleRate), options.seed ?? 0);
  if (model.noSplit === true) checkOneChunk(model, Math.max(...views.map((view) => view.length)), input.length);
  const passes = membersOf(model).flatMap(({ model: member, factors }) => {
    const stride = strideOf(member.segmentSamples, overlap);
    const weights = transitionWeights(member.segmentSamples, transitionPower);
    return views.map((view) => new Pass(member, view, stride, weights, output, factors));
  });
  const total = passes.reduce((sum, pass) => sum + pass.chunks, 0);
  const passCount = Math.max(1, shifts);
  let modelInput = new Float32Array(0);

  try {
    for (let done = 0; done < total; ) {
      options.signal?.throwIfAborted();
      const pass = laggard(passes);
      const { start, length } = pass.nextWindow();
      window.discardBefore(Math.min(...passes.filter((p) => !p.finished).map((p) => p.nextWindow().start)));
      await window.ensure(start + length);
      if (modelInput.length !== 2 * length) modelInput = new Float32Array(2 * length);
      window.read(start, length, norm, modelInput);
      await pass.runNext(modelInput);
      done++;
      options.onProgress?.({ done, total });
      const settled = Math.min(...passes.map((p) => p.settled));
      const from = output.base;
      if (settled > from) await write(output.take(settled, passCount, norm), settled - from);
    }
    await window.finish();
  } catch (error) {
    await window.close().catch(() => undefined);
    throw error;
  }
}

function checkStreamInputs(model: SegmentModel, input: TrackStream, overlap: number, shifts: number, power: number): void {
  const usage = (message: string): StemsplitError => new StemsplitError('USAGE', message);
  if (!(overlap >= 0 && overlap < 1)) throw usage(`overlap must be in [0, 1), got ${overlap}`);
  if (!(Number.isInteger(shifts) && shifts >= 0)) throw usage(`shifts must be a whole number ≥ 0, got ${shifts}`);
  if (!(power >= 1)) throw usage(`transition power must be ≥ 1, got ${power}`);
  if (membersOf(model).some(({ model: member }) => strideOf(member.segmentSamples, overlap) < 1)) throw usage(`overlap ${overlap} leaves no stride`);
  if (!(Number.isInteger(input.length) && input.length > 0)) throw new StemsplitError('SEPARATION_FAILED', 'cannot separate an empty track');
  if (model.normalize && input.statistics === undefined) {
    throw new StemsplitError('SEPARATION_FAILED', `model ${model.name} normalises the track: the stream must carry the whole track's statistics`);
  }
}

/**
 * `--no-split` (apply_model's split=False): the track runs as one chunk, which is what the chunked
 * pass does for a track no longer than a segment (the chunk centred in the model's window, zeros
 * around it); a longer one is refused, naming the limit, rather than cut into chunks anyway.
 */
function checkOneChunk(model: SegmentModel, length: number, trackLength: number): void {
  const segment = Math.min(...membersOf(model).map(({ model: member }) => member.segmentSamples));
  if (length <= segment) return;
  const shifted = length > trackLength ? ` (${(trackLength / model.sampleRate).toFixed(2)} s and --shifts' margin)` : '';
  const seconds = (samples: number) => (samples / model.sampleRate).toFixed(2);
  throw new StemsplitError(
    'USAGE',
    `--no-split runs the track in one piece, and ${model.name} takes at most ${seconds(segment)} s in one (its segment; --segment sets a longer one where the model allows); the track is ${seconds(length)} s${shifted}`,
  );
}

/**
 * The models whose passes run: the model itself, or a bag's members, each with the share of
 * every stem plane its output has (its weight over the source's summed weights, as BagOfModels).
 */
function membersOf(model: SegmentModel): { readonly model: SegmentModel; readonly factors: Float32Array }[] {
  const planes = 2 * model.sources.length;
  if (model.bagMembers === undefined) return [{ model, factors: new Float32Array(planes).fill(1) }];
  const totals = model.sources.map((_, source) => model.bagMembers?.reduce((sum, member) => sum + (member.weights[source] ?? 0), 0) ?? 0);
  return model.bagMembers.map(({ model: member, weights }) => ({
    model: member,
    factors: Float32Array.from({ length: planes }, (_, plane) => (weights[plane >> 1] ?? 0) / (totals[plane >> 1] ?? 1)),
  }));
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

/** The unfinished pass that has settled the fewest samples (the first such, on a tie). */
function laggard(passes: readonly Pass[]): Pass {
  let best: Pass | undefined;
  for (const pass of passes) if (!pass.finished && (best === undefined || pass.settled < best.settled)) best = pass;
  if (best === undefined) throw new Error('unreachable: a chunk is left but no pass has one');
  return best;
}

/**
 * Weighted sums per track position, for every source plane, from the oldest position not yet
 * handed out (`base`) on. Passes add settled values; `take` hands out and drops a prefix.
 */
class SettlingBuffer {
  #data: Float32Array;
  #capacity: number;
  base = 0;

  constructor(
    private readonly planes: number,
    private readonly length: number,
    initialCapacity: number,
  ) {
    this.#capacity = initialCapacity;
    this.#data = new Float32Array(planes * initialCapacity);
  }

  /** Adds `factor · values[i] / divisors[i]` to track position `position + i` of `plane`, for i < count. */
  add(plane: number, position: number, values: Float32Array, divisors: Float32Array, count: number, factor: number): void {
    this.#reserve(position + count);
    const at = plane * this.#capacity + position - this.base;
    for (let i = 0; i < count; i++) this.#data[at + i] = (this.#data[at + i] as number) + factor * ((values[i] as number) / (divisors[i] as number));
  }

  /** Hands out positions [base, until): averaged over `passes`, de-normalised, one planar [2, n] per source. */
  take(until: number, passes: number, norm: Normalization): Float32Array[] {
    const count = until - this.base;
    const stems: Float32Array[] = [];
    for (let source = 0; 2 * source < this.planes; source++) {
      const stem = new Float32Array(2 * count);
      for (let channel = 0; channel < 2; channel++) {
        const from = (2 * source + channel) * this.#capacity;
        const to = channel * count;
        for (let i = 0; i < count; i++) {
          // Demucs sums the shifted passes, then divides by their count, then de-normalises.
          const value = passes > 1 ? (this.#data[from + i] as number) / passes : (this.#data[from + i] as number);
          stem[to + i] = norm === IDENTITY ? value : Math.fround(value * norm.scale) + norm.mean;
        }
      }
      stems.push(stem);
    }
    for (let plane = 0; plane < this.planes; plane++) {
      const row = this.#data.subarray(plane * this.#capacity, (plane + 1) * this.#capacity);
      row.copyWithin(0, count);
      row.fill(0, this.#capacity - count);
    }
    this.base = until;
    return stems;
  }

  #reserve(end: number): void {
    if (end > this.length) throw new Error(`unreachable: position ${end} past the track`);
    if (end - this.base <= this.#capacity) return;
    const capacity = Math.max(end - this.base, 2 * this.#capacity);
    const grown = new Float32Array(this.planes * capacity);
    for (let plane = 0; plane < this.planes; plane++) {
      grown.set(this.#data.subarray(plane * this.#capacity, (plane + 1) * this.#capacity), plane * capacity);
    }
    this.#data = grown;
    this.#capacity = capacity;
  }
}

/**
 * One pass's weighted overlap-add over a sliding window one segment long: `window` holds the
 * weighted sums of view positions [windowOffset, windowOffset + segment) per plane, `weightSum`
 * their summed weights. Once chunk k is added, positions before chunk k+1 are final.
 */
class Pass {
  readonly chunks: number;
  readonly #segment: number;
  readonly #planes: number;
  readonly #window: Float32Array;
  readonly #weightSum: Float32Array;
  #windowOffset = 0;
  #next = 0;
  /** Track positions before this have all of this pass's contributions. */
  settled = 0;

  constructor(
    private readonly model: SegmentModel,
    private readonly view: PassView,
    private readonly stride: number,
    private readonly weights: Float32Array,
    private readonly output: SettlingBuffer,
    /** The share of each stem plane this pass's model has (1 but in a bag). */
    private readonly factors: Float32Array,
  ) {
    this.#segment = model.segmentSamples;
    this.#planes = 2 * model.sources.length;
    this.chunks = chunkCount(view.length, stride);
    this.#window = new Float32Array(this.#planes * this.#segment);
    this.#weightSum = new Float32Array(this.#segment);
  }

  get finished(): boolean {
    return this.#next >= this.chunks;
  }

  /** Track position and length of the next chunk's model window (it starts before the track when the pass starts in padding). */
  nextWindow(): { readonly start: number; readonly length: number } {
    const chunk = this.#chunk(this.#next);
    return { start: this.view.origin + chunk.windowStart, length: chunk.segment };
  }

  /** Runs the model on the next chunk's window (already read into `input`) and settles what it can. */
  async runNext(input: Float32Array): Promise<void> {
    const chunk = this.#chunk(this.#next++);
    const output = await this.model.run(input);
    if (output.length !== this.#planes * chunk.segment) {
      throw new StemsplitError('SEPARATION_FAILED', `model ${this.model.name} returned ${output.length} samples, expected ${this.#planes * chunk.segment}`);
    }
    this.#accumulate(chunk, output);
    const isLast = this.finished;
    this.#flush(isLast ? this.view.length - chunk.offset : this.stride);
    if (!isLast) this.#slide();
  }

  #chunk(index: number): Chunk {
    const offset = index * this.stride;
    const length = Math.min(this.#segment, this.view.length - offset);
    return new Chunk(offset, length, this.model.windowSamples?.(length) ?? this.#segment);
  }

  /** Adds the centre-trimmed output, weighted by the first `chunk.length` weights (as Demucs does). */
  #accumulate(chunk: Chunk, output: Float32Array): void {
    const at = chunk.offset - this.#windowOffset;
    for (let plane = 0; plane < this.#planes; plane++) {
      const source = output.subarray(plane * chunk.segment + chunk.outputStart);
      const target = this.#window.subarray(plane * this.#segment + at);
      for (let i = 0; i < chunk.length; i++) {
        // Rounded like Demucs' float32 `weight * chunk_out` before the sum.
        target[i] = (target[i] as number) + Math.fround((this.weights[i] as number) * (source[i] as number));
      }
    }
    for (let i = 0; i < chunk.length; i++) this.#weightSum[at + i] = (this.#weightSum[at + i] as number) + (this.weights[i] as number);
  }

  /** Hands the first `count` window positions, divided by their weights, to the output; padding is skipped. */
  #flush(count: number): void {
    const first = this.view.origin + this.#windowOffset;
    const skip = Math.min(count, Math.max(0, -first));
    for (let plane = 0; plane < this.#planes; plane++) {
      const sums = this.#window.subarray(plane * this.#segment + skip, plane * this.#segment + count);
      this.output.add(plane, first + skip, sums, this.#weightSum.subarray(skip, count), count - skip, this.factors[plane] as number);
    }
    this.settled = Math.max(this.settled, first + count);
  }

  #slide(): void {
    const stride = this.stride;
    for (let plane = 0; plane < this.#planes; plane++) {
      const sums = this.#window.subarray(plane * this.#segment, (plane + 1) * this.#segment);
      sums.copyWithin(0, stride);
      sums.fill(0, this.#segment - stride);
    }
    this.#weightSum.copyWithin(0, stride);
    this.#weightSum.fill(0, this.#segment - stride);
    this.#windowOffset += stride;
  }
}
