/**
 * A resampler fed its input in order, in blocks of any size, for a signal whose length is known
 * from the start (every resampler VR reaches stops, pads or cuts by that length). Each output
 * sample is computed, in the same order of operations, as soon as every input sample it reads
 * has arrived, so a signal fed in blocks gives what it gives fed at once, bit for bit; only the
 * input the later outputs still read is held.
 */

/** One channel of a resampler: `push` returns the outputs its input completes (all that remain once the whole input has arrived). */
export interface ChannelResampler {
  push(samples: Float64Array): Float64Array;
}

/** The input samples still needed: `data[i − base]` is input sample i, each rounded as `round` rounds it. */
export class SampleWindow {
  data = new Float64Array(1024);
  /** Input index of data[0]. */
  base = 0;
  /** Input samples received. */
  received = 0;

  constructor(private readonly round: (value: number) => number = (value) => value) {}

  append(samples: Float64Array): void {
    const held = this.received - this.base;
    if (held + samples.length > this.data.length) {
      const grown = new Float64Array(Math.max(2 * this.data.length, held + samples.length));
      grown.set(this.data.subarray(0, held));
      this.data = grown;
    }
    for (let i = 0; i < samples.length; i++) this.data[held + i] = this.round(samples[i] as number);
    this.received += samples.length;
  }

  /** Drops the samples before input index `index` (none of the outputs still to come reads them). */
  discardBefore(index: number): void {
    const drop = Math.min(this.received, index) - this.base;
    if (drop <= 0 || 2 * drop < this.data.length / 2) return;
    this.data.copyWithin(0, drop, this.received - this.base);
    this.base += drop;
  }
}

/** Outputs gathered one at a time into one array. */
export class OutputBuffer {
  #data = new Float64Array(256);
  #count = 0;

  add(value: number): void {
    if (this.#count === this.#data.length) {
      const grown = new Float64Array(2 * this.#data.length);
      grown.set(this.#data);
      this.#data = grown;
    }
    this.#data[this.#count++] = value;
  }

  /** The outputs gathered since the last take. */
  take(): Float64Array {
    const out = this.#data.slice(0, this.#count);
    this.#count = 0;
    return out;
  }
}

/** Each block of `input` through `stages` in turn (each stage's output is the next one's input). */
export function chained(stages: readonly ChannelResampler[]): ChannelResampler {
  return { push: (samples) => stages.reduce((x, stage) => stage.push(x), samples) };
}

/**
 * `inner` cut or zero-padded to `length` outputs for an input of `n` samples, each output passed
 * through `round` (librosa's fix_length in the input's precision; soxr's round(n·ratio) outputs).
 */
export function fixedLength(inner: ChannelResampler, n: number, length: number, round: (value: number) => number = (value) => value): ChannelResampler {
  let received = 0;
  let emitted = 0;
  return {
    push(samples) {
      received += samples.length;
      const made = inner.push(samples);
      const count = Math.min(made.length, length - emitted);
      const rest = received >= n ? length - emitted - count : 0;
      const out = new Float64Array(count + rest);
      for (let i = 0; i < count; i++) out[i] = round(made[i] as number);
      emitted += out.length;
      return out;
    },
  };
}
