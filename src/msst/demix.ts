/**
 * MSST's chunked inference (`demix` in utils/model_utils.py, "generic" mode), for any
 * channel count, computing what it computes:
 *
 * - chunk L, step L // num_overlap, border L − step, fade L // 10 with a linear fade-in and
 *   fade-out window (torch.linspace(0, 1, fade) and back);
 * - a track longer than two borders is reflect-padded by `border` on both sides, and cropped
 *   back at the end;
 * - chunks start every `step`; a chunk cut short by the end is padded to L by reflection when
 *   it is longer than L/2, by zeros otherwise; only its first ℓ output samples are added;
 * - chunks are grouped in batches of `batch_size`: the first batch, when it is the first chunk
 *   alone, has no fade-in; the final batch has no fade-out for any of its chunks;
 * - output = Σ window · chunk output / Σ window (NaN → 0).
 *
 * Memory: one chunk and a sliding accumulator (`demixStream`); MSST keeps the padded track and an
 * accumulator per stem as long as the track.
 */
import { StemsplitError } from '../errors.js';

export interface DemixSettings {
  readonly chunkSize: number;
  readonly numOverlap: number;
  readonly batchSize: number;
}

export interface DemixOptions {
  readonly onProgress?: (done: number, total: number) => void;
  readonly signal?: AbortSignal;
}

/** Runs the model on one chunk [channels, L] (planar) and returns [stems, channels, L]. */
export type ChunkRunner = (chunk: Float32Array) => Promise<Float32Array>;

export interface DemixGeometry {
  readonly fade: number;
  readonly step: number;
  readonly border: number;
  readonly padded: boolean;
  readonly paddedLength: number;
  /** Start of every chunk in the padded track. */
  readonly starts: readonly number[];
}

export function demixGeometry(settings: DemixSettings, length: number): DemixGeometry {
  const { chunkSize, numOverlap } = settings;
  const step = Math.floor(chunkSize / numOverlap);
  if (step < 1) throw new StemsplitError('MODEL_INVALID', `num_overlap ${numOverlap} leaves no step for chunks of ${chunkSize}`);
  const border = chunkSize - step;
  const padded = length > 2 * border && border > 0;
  const paddedLength = padded ? length + 2 * border : length;
  const starts: number[] = [];
  for (let i = 0; i < paddedLength; i += step) starts.push(i);
  return { fade: Math.floor(chunkSize / 10), step, border, padded, paddedLength, starts };
}

/**
 * Where the demix reads the track: `value(channel, i)` is the model's input at track position i
 * (0 ≤ i < length), for positions from the last `discardBefore` on, once `ensure` has covered them.
 * A whole track in memory is one; a streamed one holds a window (roformer/engine.ts).
 */
export interface DemixSource {
  readonly length: number;
  ensure(end: number): Promise<void>;
  discardBefore(position: number): void;
  value(channel: number, position: number): number;
}

/**
 * Receives consecutive output blocks: planes[stem * channels + channel][i] is track position
 * `start + i`, for i < count. Blocks come in order and cover the track exactly once.
 */
export type DemixWriter = (planes: readonly Float32Array[], start: number, count: number) => Promise<void> | void;

/** Demixes planar `track` [channels, length] into [stems, channels, length]: `demixStream` over the track in memory. */
export async function demix(
  run: ChunkRunner,
  track: Float32Array,
  channels: number,
  stems: number,
  settings: DemixSettings,
  options: DemixOptions = {},
): Promise<Float32Array> {
  const length = track.length / channels;
  const output = new Float32Array(stems * channels * length);
  const source: DemixSource = {
    length,
    ensure: async () => undefined,
    discardBefore: () => undefined,
    value: (channel, position) => track[channel * length + position] as number,
  };
  await demixStream(
    run,
    source,
    channels,
    stems,
    settings,
    (planes, start, count) => {
      for (const [plane, values] of planes.entries()) output.set(values.subarray(0, count), plane * length + start);
    },
    options,
  );
  return output;
}

/**
 * MSST's demix over a source read once, front to back: the reflect padding is read through
 * (`paddedValue`), each chunk's weighted output is added to a sliding accumulator, and positions
 * no later chunk reaches (those before the next chunk's start) are divided by their weight sum
 * and written. Memory: one chunk of input, the accumulator (a chunk plus a step), whatever the
 * track's length.
 */
export async function demixStream(
  run: ChunkRunner,
  source: DemixSource,
  channels: number,
  stems: number,
  settings: DemixSettings,
  write: DemixWriter,
  options: DemixOptions = {},
): Promise<void> {
  const { length } = source;
  const { chunkSize: size, batchSize } = settings;
  const geometry = demixGeometry(settings, length);
  const { fade, step, border, padded, paddedLength, starts } = geometry;
  const offset = padded ? border : 0;
  const window = fadeWindow(size, fade);
  const planes = stems * channels;
  const span = size + step;
  const result = new Float32Array(planes * span);
  const counter = new Float32Array(span);
  const chunk = new Float32Array(channels * size);
  let base = 0; // padded position of accumulator index 0
  const paddedValue = (channel: number, j: number): number => {
    const i = !padded ? j : j < border ? border - j : j < border + length ? j - border : 2 * length + border - 2 - j;
    return source.value(channel, i);
  };

  for (let k = 0; k < starts.length; k++) {
    options.signal?.throwIfAborted();
    const start = starts[k] as number;
    const batchFirst = k - (k % batchSize);
    const batchLast = Math.min(batchFirst + batchSize, starts.length) - 1;
    const nextStart = (starts[batchLast] as number) + step; // MSST's i after filling this chunk's batch
    const weights = Float32Array.from(window);
    if (nextStart - step === 0) weights.fill(1, 0, fade);
    else if (nextStart >= paddedLength) weights.fill(1, size - fade);
    const used = Math.min(size, paddedLength - start);
    const reads = trackSpan(geometry, length, start, used);
    source.discardBefore(reads.first);
    await source.ensure(reads.end);
    readPaddedChunk(paddedValue, channels, start, used, size, chunk);
    const out = await run(chunk);
    if (out.length !== planes * size) {
      throw new StemsplitError('SEPARATION_FAILED', `the model returned ${out.length} samples for a chunk, expected ${planes * size}`);
    }
    const at = start - base;
    for (let plane = 0; plane < planes; plane++) {
      const target = plane * span + at;
      const from = plane * size;
      for (let i = 0; i < used; i++) result[target + i] = (result[target + i] as number) + Math.fround((out[from + i] as number) * (weights[i] as number));
    }
    for (let i = 0; i < used; i++) counter[at + i] = (counter[at + i] as number) + (weights[i] as number);
    options.onProgress?.(k + 1, starts.length);
    // Padded positions before the next chunk's start are final.
    const settled = k + 1 < starts.length ? (starts[k + 1] as number) : paddedLength;
    await emit(settled);
  }

  /** Writes the settled padded positions [base, settled) that are track positions, and slides the accumulator on. */
  async function emit(settled: number): Promise<void> {
    const from = Math.max(base, offset);
    const to = Math.min(settled, offset + length);
    if (to > from) {
      const count = to - from;
      const block = Array.from({ length: planes }, (_, plane) => {
        const values = new Float32Array(count);
        for (let i = 0; i < count; i++) {
          const value = (result[plane * span + from - base + i] as number) / (counter[from - base + i] as number);
          values[i] = Number.isNaN(value) ? 0 : value;
        }
        return values;
      });
      await write(block, from - offset, count);
    }
    const shift = settled - base;
    for (let plane = 0; plane < planes; plane++) {
      const row = result.subarray(plane * span, (plane + 1) * span);
      row.copyWithin(0, shift);
      row.fill(0, span - shift);
    }
    counter.copyWithin(0, shift);
    counter.fill(0, span - shift);
    base = settled;
  }
}

/**
 * The track positions [first, end) a chunk at padded `start` reads `used` samples of: its own
 * span, and the reflections of the borders. The leading reflection reaches track position
 * border − start, beyond the chunk's own span when border > step (num_overlap ≥ 3); the trailing
 * one reaches back to length − border − 1.
 */
function trackSpan(geometry: DemixGeometry, length: number, start: number, used: number): { first: number; end: number } {
  const { padded, border } = geometry;
  if (!padded) return { first: start, end: Math.min(length, start + used) };
  const direct = { first: start - border, last: start + used - 1 - border };
  const first = Math.max(0, Math.min(direct.first, length - border - 1));
  const last = Math.max(direct.last, border - start);
  return { first, end: Math.min(length, last + 1) };
}

/** Copies padded samples [start, start+used) of each channel; pads to `size` by reflection when used > size/2, else zeros. */
function readPaddedChunk(
  value: (channel: number, j: number) => number,
  channels: number,
  start: number,
  used: number,
  size: number,
  chunk: Float32Array,
): void {
  const reflectTail = used > Math.floor(size / 2);
  for (let c = 0; c < channels; c++) {
    const target = chunk.subarray(c * size, (c + 1) * size);
    for (let i = 0; i < used; i++) target[i] = value(c, start + i);
    for (let i = used; i < size; i++) target[i] = reflectTail ? (target[2 * (used - 1) - i] as number) : 0;
  }
}

/** torch.linspace fades: w[k] = k/(fade−1) rising over the first `fade` samples, falling over the last. */
function fadeWindow(size: number, fade: number): Float32Array {
  const window = new Float32Array(size).fill(1);
  for (let k = 0; k < fade; k++) {
    const up = fade === 1 ? 0 : k / (fade - 1);
    window[k] = up;
    window[size - fade + k] = 1 - up;
  }
  return window;
}
