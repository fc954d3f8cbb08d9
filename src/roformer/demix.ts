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
 * Memory: the padded track and one accumulator per stem (MSST keeps the same).
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

/** Demixes planar `track` [channels, length] into [stems, channels, length]. */
export async function demix(
  run: ChunkRunner,
  track: Float32Array,
  channels: number,
  stems: number,
  settings: DemixSettings,
  options: DemixOptions = {},
): Promise<Float32Array> {
  const length = track.length / channels;
  const { chunkSize: size, batchSize } = settings;
  const geometry = demixGeometry(settings, length);
  const { fade, border, padded, paddedLength, starts } = geometry;
  const source = padded ? reflectPad(track, channels, length, border) : track;
  const window = fadeWindow(size, fade);
  const result = new Float32Array(stems * channels * paddedLength);
  const counter = new Float32Array(paddedLength);
  const chunk = new Float32Array(channels * size);

  for (let first = 0; first < starts.length; first += batchSize) {
    const batch = starts.slice(first, first + batchSize);
    const nextStart = (batch[batch.length - 1] as number) + geometry.step; // MSST's i after filling this batch
    const weights = Float32Array.from(window);
    if (nextStart - geometry.step === 0) weights.fill(1, 0, fade);
    else if (nextStart >= paddedLength) weights.fill(1, size - fade);
    for (const start of batch) {
      options.signal?.throwIfAborted();
      const used = Math.min(size, paddedLength - start);
      readChunk(source, channels, paddedLength, start, used, size, chunk);
      const out = await run(chunk);
      if (out.length !== stems * channels * size) {
        throw new StemsplitError('SEPARATION_FAILED', `the model returned ${out.length} samples for a chunk, expected ${stems * channels * size}`);
      }
      for (let plane = 0; plane < stems * channels; plane++) {
        const target = plane * paddedLength + start;
        const from = plane * size;
        for (let i = 0; i < used; i++) result[target + i] = (result[target + i] as number) + Math.fround((out[from + i] as number) * (weights[i] as number));
      }
      for (let i = 0; i < used; i++) counter[start + i] = (counter[start + i] as number) + (weights[i] as number);
      options.onProgress?.(first + batch.indexOf(start) + 1, starts.length);
    }
  }

  const offset = padded ? border : 0;
  const output = new Float32Array(stems * channels * length);
  for (let plane = 0; plane < stems * channels; plane++) {
    for (let i = 0; i < length; i++) {
      const value = (result[plane * paddedLength + offset + i] as number) / (counter[offset + i] as number);
      output[plane * length + i] = Number.isNaN(value) ? 0 : value;
    }
  }
  return output;
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

/** Copies samples [start, start+used) of each channel; pads to `size` by reflection when used > size/2, else zeros. */
function readChunk(source: Float32Array, channels: number, length: number, start: number, used: number, size: number, chunk: Float32Array): void {
  const reflectTail = used > Math.floor(size / 2);
  for (let c = 0; c < channels; c++) {
    const from = c * length + start;
    const target = chunk.subarray(c * size, (c + 1) * size);
    target.set(source.subarray(from, from + used));
    for (let i = used; i < size; i++) target[i] = reflectTail ? (source[from + 2 * (used - 1) - i] as number) : 0;
  }
}

function reflectPad(track: Float32Array, channels: number, length: number, border: number): Float32Array {
  const paddedLength = length + 2 * border;
  const out = new Float32Array(channels * paddedLength);
  for (let c = 0; c < channels; c++) {
    const from = track.subarray(c * length, (c + 1) * length);
    const to = out.subarray(c * paddedLength, (c + 1) * paddedLength);
    to.set(from, border);
    for (let i = 0; i < border; i++) {
      to[border - 1 - i] = from[i + 1] as number;
      to[border + length + i] = from[length - 2 - i] as number;
    }
  }
  return out;
}
