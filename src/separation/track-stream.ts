/**
 * A track as a stream of frames (`TrackStream`), the stems leaving as a stream of blocks (`StemWriter`), and the
 * sliding window over the incoming frames that a streamed separation reads its model windows from
 * (`TrackWindow`: the segment pipeline, MSST's and MDX-Net's demix).
 */
import { StemsplitError } from '../errors.js';
import type { Normalization, TrackStatistics } from './normalization.js';

/** A track as a stream: exactly `length` interleaved stereo frames, in order. */
export interface TrackStream {
  /** Samples per channel; a stream that yields more or fewer is an error. */
  readonly length: number;
  /** Interleaved stereo float32 blocks (whole frames); the arrays may be kept by the reader. */
  readonly frames: AsyncIterable<Float32Array>;
  /**
   * The whole track's mono-mix statistics (from a first pass); required when the model
   * normalises. Demucs divides by the unbiased std, MSST by the population std.
   */
  readonly statistics?: TrackStatistics;
  /**
   * The same frames read again from the start (a fresh decode), for a model that needs a
   * whole-track value of its own from a first pass over `frames` (VR: its spectrogram's peak).
   */
  readonly reread?: () => AsyncIterable<Float32Array>;
}

/**
 * Receives consecutive stem blocks: `stems[i]` is planar [2, frames] for model source i. The
 * arrays are fresh for each call. Returning a promise holds the separation until it settles
 * (back-pressure from the encoders).
 */
export type StemWriter = (stems: readonly Float32Array[], frames: number) => Promise<void> | void;

/**
 * The input frames from the earliest sample still needed to the last one decoded, planar, in
 * one buffer that is compacted (and only grown when a window needs more) as frames arrive.
 */
export class TrackWindow {
  readonly #iterator: AsyncIterator<Float32Array>;
  readonly #length: number;
  #left: Float32Array;
  #right: Float32Array;
  /** Track position of buffer index 0. */
  #base = 0;
  /** Frames held, from #base. */
  #held = 0;
  /** Positions before this are no longer needed. */
  #keepFrom = 0;

  constructor(input: TrackStream, segment: number) {
    this.#iterator = input.frames[Symbol.asyncIterator]();
    this.#length = input.length;
    this.#left = new Float32Array(2 * segment);
    this.#right = new Float32Array(2 * segment);
  }

  discardBefore(position: number): void {
    this.#keepFrom = Math.max(this.#keepFrom, position);
  }

  /** Decodes until every track sample before `end` (or the whole track) is held. */
  async ensure(end: number): Promise<void> {
    const target = Math.min(end, this.#length);
    while (this.#base + this.#held < target) {
      const block = await this.#next();
      const frames = block.length / 2;
      const room = this.#length - (this.#base + this.#held);
      if (frames > room) throw changed(`${this.#base + this.#held + frames} samples or more, ${this.#length} expected`);
      this.#append(block, frames);
    }
  }

  /** Copies the normalised window [start, start + count) into `target` (planar), zero outside the track. */
  read(start: number, count: number, norm: Normalization, target: Float32Array): void {
    const { mean, scale } = norm;
    const from = Math.max(0, start);
    const to = Math.min(this.#length, start + count);
    if (from < this.#base || to > this.#base + this.#held) throw new Error(`unreachable: window ${from}..${to} not held`);
    target.fill(0);
    for (const [channel, samples] of [this.#left, this.#right].entries()) {
      const out = target.subarray(channel * count, (channel + 1) * count);
      for (let position = from; position < to; position++) {
        out[position - start] = Math.fround((samples[position - this.#base] as number) - mean) / scale;
      }
    }
  }

  /** The raw sample of `channel` (0 left, 1 right) at a held track position. */
  sample(channel: number, position: number): number {
    return (channel === 0 ? this.#left : this.#right)[position - this.#base] as number;
  }

  /** Checks the stream ends where the track does (the decoder's own errors surface here too). */
  async finish(): Promise<void> {
    await this.ensure(this.#length);
    for (let rest = await this.#iterator.next(); rest.done !== true; rest = await this.#iterator.next()) {
      if (rest.value.length > 0) throw changed(`more than ${this.#length} samples`);
    }
  }

  /** Stops the stream early (its decoder is ended), after a failure or a cancel. */
  async close(): Promise<void> {
    await this.#iterator.return?.();
  }

  async #next(): Promise<Float32Array> {
    const next = await this.#iterator.next();
    if (next.done === true) throw changed(`only ${this.#base + this.#held} of ${this.#length} samples`);
    return next.value;
  }

  #append(interleaved: Float32Array, frames: number): void {
    if (this.#held + frames > this.#left.length) this.#compact(frames);
    const at = this.#held;
    for (let frame = 0; frame < frames; frame++) {
      this.#left[at + frame] = interleaved[2 * frame] as number;
      this.#right[at + frame] = interleaved[2 * frame + 1] as number;
    }
    this.#held += frames;
  }

  /** Drops what no window needs any more; grows only if the rest and `frames` still do not fit. */
  #compact(frames: number): void {
    const drop = Math.min(this.#held, Math.max(0, this.#keepFrom - this.#base));
    const kept = this.#held - drop;
    const size = this.#left.length;
    const capacity = kept + frames > size ? Math.max(kept + frames, Math.ceil(1.5 * size)) : size;
    this.#left = moved(this.#left, drop, this.#held, capacity);
    this.#right = moved(this.#right, drop, this.#held, capacity);
    this.#base += drop;
    this.#held = kept;
  }
}

/** `samples[from, to)` moved to the front of a buffer of `capacity` (the same one when it is that size). */
function moved(samples: Float32Array, from: number, to: number, capacity: number): Float32Array {
  if (capacity === samples.length) return samples.copyWithin(0, from, to);
  const grown = new Float32Array(capacity);
  grown.set(samples.subarray(from, to));
  return grown;
}

function changed(what: string): StemsplitError {
  return new StemsplitError('AUDIO_DECODE_FAILED', `the audio gave ${what} on the second read (did the file change while it was being split?)`);
}
