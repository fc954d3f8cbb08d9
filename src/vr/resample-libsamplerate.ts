/**
 * libsamplerate's sinc converters (SRC_SINC_FASTEST, SRC_SINC_MEDIUM_QUALITY,
 * SRC_SINC_BEST_QUALITY) as python-samplerate's `resample` calls them through librosa: one
 * channel at a time (librosa applies it along the time axis), float32 in and out, `src_simple`
 * with end of input, int(n·ratio) output frames.
 *
 * Each converter is src_sinc.c's fixed-point filter walk over its own coefficient table. The
 * tables are derived here from the recipe each header names rather than copied:
 * - fastest_coeffs.h: `make_filter (8, 128, 100.3)` (Octave/make_filter.m, generate_filter.m);
 * - mid_qual_coeffs.h: `make_src_filter (cycles = 21, incr = 491, atten = 122)`;
 * - high_qual_coeffs.h: `make_src_filter (cycles = 69, incr = 2381, atten = 160)`.
 * Each is the right half (from the centre) of a sinc of period incr·F samples under a Kaiser
 * window of β (atten + 0.5)/10 (as generate_filter.m has it), normalised so the whole symmetric
 * filter sums to incr, stored as float, then one zero. The window's half-width is the last
 * stored coefficient's index for make_filter and 1.5 more for make_src_filter (whose script is
 * not published: that width and β are the ones that fit its tables to rounding). F, the fudge
 * factor each script's bisection settled on, is the value that reproduces the published table
 * (docs/vr.md says how far off each table is).
 */
import { besselI0, lrint, sinc } from './resample-math.js';
import { OutputBuffer, SampleWindow, type ChannelResampler } from './resample-stream.js';

export type SincConverter = 'sinc_fastest' | 'sinc_medium' | 'sinc_best';

interface SincRecipe {
  /** The last stored coefficient's index (coeff_half_len in src_sinc.c: the array's length − 2). */
  readonly halfLength: number;
  /** The Kaiser window's half-width in coefficients. */
  readonly windowRadius: number;
  readonly increment: number;
  readonly fudge: number;
  readonly atten: number;
}

const RECIPES: Readonly<Record<SincConverter, SincRecipe>> = {
  sinc_fastest: { halfLength: 2462, windowRadius: 2462, increment: 128, fudge: 1.2026882171630866, atten: 100.3 },
  sinc_medium: { halfLength: 22436, windowRadius: 22437.5, increment: 491, fudge: 1.0880645960569386, atten: 122 },
  sinc_best: { halfLength: 340237, windowRadius: 340238.5, increment: 2381, fudge: 1.035487800836562, atten: 160 },
};

interface SincTable {
  /** The stored (float) coefficients, as doubles. */
  readonly base: Float64Array;
  /** Per entry, the float difference to the next (coeff_t is float: C subtracts in float). */
  readonly step: Float64Array;
}

const tables = new Map<SincConverter, SincTable>();

/** The converter's coefficient table as float32 values (halfLength + 1 coefficients, then a zero). */
export function sincCoefficients(converter: SincConverter): Float32Array {
  const { halfLength, windowRadius, increment, fudge, atten } = RECIPES[converter];
  const beta = (atten + 0.5) / 10;
  const raw = new Float64Array(halfLength + 1);
  const norm = besselI0(beta);
  for (let k = 0; k <= halfLength; k++) {
    const r = k / windowRadius;
    raw[k] = (sinc(k / (fudge * increment)) * besselI0(beta * Math.sqrt(Math.max(0, 1 - r * r)))) / norm;
  }
  let sum = raw[0] as number;
  for (let k = 1; k <= halfLength; k++) sum += 2 * (raw[k] as number);
  const table = new Float32Array(halfLength + 2);
  for (let k = 0; k <= halfLength; k++) table[k] = ((raw[k] as number) * increment) / sum;
  return table;
}

function sincTable(converter: SincConverter): SincTable {
  const cached = tables.get(converter);
  if (cached !== undefined) return cached;
  const table = sincCoefficients(converter);
  const base = Float64Array.from(table);
  const step = new Float64Array(table.length);
  for (let i = 0; i + 1 < table.length; i++) step[i] = Math.fround((table[i + 1] as number) - (table[i] as number));
  const made = { base, step };
  tables.set(converter, made);
  return made;
}

function fmodOne(x: number): number {
  const res = x - lrint(x);
  return res < 0 ? res + 1 : res;
}

const SHIFT_BITS = 12;
const FP_ONE = 1 << SHIFT_BITS;

/** SRC_MAX_RATIO in libsamplerate's common.h: the buffer is sized for ratios up to 256. */
const MAX_RATIO = 256;

/**
 * src_sinc.c's input buffer, as counts only (mono): where the current sample and the real end of
 * input sit in it. The data it holds is the input with zeros before and after; its positions
 * matter only to the end-of-input test, which compares them in double.
 */
class SincBuffer {
  current = 0;
  end = 0;
  realEnd = -1;
  private used = 0;

  constructor(
    private readonly length: number,
    private readonly input: number,
    readonly halfFilter: number,
  ) {}

  copy(): SincBuffer {
    return Object.assign(new SincBuffer(this.length, this.input, this.halfFilter), this);
  }

  inHand(): number {
    return (this.end - this.current + this.length) % this.length;
  }

  /** prepare_data with end of input set: load what fits; at the end, mark it and pad with zeros. */
  prepare(): void {
    if (this.realEnd >= 0) return;
    const half = this.halfFilter;
    let len: number;
    if (this.current === 0) {
      len = this.length - 2 * half;
      this.current = this.end = half;
    } else if (this.end + half + 1 < this.length) {
      len = Math.max(this.length - this.current - half, 0);
    } else {
      this.moveDown();
      len = Math.max(this.length - this.current - half, 0);
    }
    len = Math.min(this.input - this.used, len);
    this.end += len;
    this.used += len;
    if (this.used === this.input && this.end - this.current < 2 * half) {
      if (this.length - this.end < half + 5) this.moveDown();
      this.realEnd = this.end;
      this.end += Math.min(half + 5, this.length - this.end);
    }
  }

  private moveDown(): void {
    const held = this.end - this.current;
    this.current = this.halfFilter;
    this.end = this.current + held;
  }

  advance(frames: number): void {
    this.current = (this.current + frames) % this.length;
  }
}

/**
 * src_sinc.c's mono interpolation (sinc_mono_vari_process + calc_output_single) at a constant
 * ratio: the input rounded to float32, zeros outside it, positions stepped by 1/ratio in double
 * with libsamplerate's fixed-point filter index (12 fractional bits), each coefficient
 * interpolated as C computes it (the float difference of two table entries, scaled in double),
 * both halves summed in double in libsamplerate's order; it stops where src_sinc.c does, its
 * end-of-input test made on the buffer's own positions (which can drop the last frame).
 */
export function libsamplerateSinc(signal: Float64Array, ratio: number, converter: SincConverter): Float64Array {
  return new SincStream(signal.length, ratio, converter).push(signal);
}

/** The converter's walk over a signal of `n` samples: positions and buffer counts, which depend on n alone, not on the data. */
class SincWalk {
  readonly table: SincTable;
  readonly halfLength: number;
  readonly frames: number;
  readonly floatIncrement: number;
  readonly increment: number;
  readonly scale: number;
  readonly terminate: number;
  /** Input samples either side of `current` that one output's filter reaches, and one to spare. */
  readonly reach: number;
  buffer: SincBuffer;
  current = 0;
  inputIndex = 0;
  made = 0;
  stopped = false;

  constructor(
    readonly n: number,
    readonly ratio: number,
    converter: SincConverter,
  ) {
    this.table = sincTable(converter);
    const { halfLength, increment: indexInc } = RECIPES[converter];
    this.halfLength = halfLength;
    this.frames = Math.floor(n * ratio);
    this.floatIncrement = indexInc * Math.min(ratio, 1);
    this.increment = lrint(this.floatIncrement * FP_ONE);
    this.scale = this.floatIncrement / indexInc;
    this.terminate = 1 / ratio + 1e-20;
    let reach = (halfLength + 2) / indexInc;
    if (ratio < 1) reach /= ratio;
    const bufferLength = Math.max(3 * lrint(((halfLength + 2) / indexInc) * MAX_RATIO + 1), 4096) + 1;
    this.buffer = new SincBuffer(bufferLength, n, lrint(reach) + 1);
    this.reach = Math.ceil((halfLength * FP_ONE) / this.increment) + 2;
  }

  copy(): SincWalk {
    return Object.assign(Object.create(SincWalk.prototype) as SincWalk, this, { buffer: this.buffer.copy() });
  }

  /** Whether output `made` exists: src_sinc.c's buffer refill and end-of-input test (which stop it for good). */
  next(): boolean {
    if (this.stopped || this.made >= this.frames) return false;
    const buffer = this.buffer;
    if (buffer.inHand() <= buffer.halfFilter) buffer.prepare();
    this.stopped = buffer.inHand() <= buffer.halfFilter || (buffer.realEnd >= 0 && buffer.current + this.inputIndex + this.terminate > buffer.realEnd);
    return !this.stopped;
  }

  /** Output `made` from input samples x[i − offset] (float32 values; zeros outside the signal). */
  output(x: Float64Array, offset: number): number {
    const { base, step } = this.table;
    const n = this.n;
    const increment = this.increment;
    const maxFilterIndex = this.halfLength * FP_ONE;
    const mask = FP_ONE - 1;
    const current = this.current;
    const start = lrint(this.inputIndex * this.floatIncrement * FP_ONE);
    let filterIndex = start;
    let count = Math.trunc((maxFilterIndex - filterIndex) / increment);
    filterIndex += count * increment;
    let dataIndex = current - count;
    let left = 0;
    for (; filterIndex >= 0; filterIndex -= increment, dataIndex++) {
      if (dataIndex < 0 || dataIndex >= n) continue;
      const index = filterIndex >> SHIFT_BITS;
      left += ((base[index] as number) + ((filterIndex & mask) / FP_ONE) * (step[index] as number)) * (x[dataIndex - offset] as number);
    }
    filterIndex = increment - start;
    count = Math.trunc((maxFilterIndex - filterIndex) / increment);
    filterIndex += count * increment;
    dataIndex = current + 1 + count;
    let right = 0;
    do {
      if (dataIndex >= 0 && dataIndex < n) {
        const index = filterIndex >> SHIFT_BITS;
        right += ((base[index] as number) + ((filterIndex & mask) / FP_ONE) * (step[index] as number)) * (x[dataIndex - offset] as number);
      }
      filterIndex -= increment;
      dataIndex--;
    } while (filterIndex > 0);
    return Math.fround(this.scale * (left + right));
  }

  /** On to the next output. */
  advance(): void {
    this.made++;
    this.inputIndex += 1 / this.ratio;
    const rem = fmodOne(this.inputIndex);
    const advance = lrint(this.inputIndex - rem);
    this.current += advance;
    this.buffer.advance(advance);
    this.inputIndex = rem;
  }
}

/**
 * libsamplerateSinc fed in order: libsamplerate is a streaming converter, and its walk depends on
 * the input's length only, so each output is computed as soon as the samples its filter reaches
 * have arrived.
 */
export class SincStream implements ChannelResampler {
  readonly #x = new SampleWindow(Math.fround);
  readonly #out = new OutputBuffer();
  readonly #walk: SincWalk;

  constructor(n: number, ratio: number, converter: SincConverter) {
    this.#walk = new SincWalk(n, ratio, converter);
  }

  push(samples: Float64Array): Float64Array {
    const walk = this.#walk;
    this.#x.append(samples);
    const all = this.#x.received >= walk.n;
    while ((all || walk.current + walk.reach < this.#x.received) && walk.next()) {
      this.#out.add(walk.output(this.#x.data, this.#x.base));
      walk.advance();
    }
    this.#x.discardBefore(walk.current - walk.reach);
    return this.#out.take();
  }
}

const CHECKPOINT_OUTPUTS = 1 << 16;

/**
 * Any range of libsamplerateSinc's outputs over a signal of `n` samples, computed from a slice of
 * the signal alone: the walk is carried to the range's first output (without computing the
 * outputs before it), then the range is computed as the whole signal's computation computes it.
 * Ranges are cheapest asked in order of their start (the walk is kept at the last one's); one
 * asked before the last starts from the walk's checkpoint below it (kept every
 * CHECKPOINT_OUTPUTS outputs: a few kB per hour of audio).
 */
export class SincRanges {
  #walk: SincWalk;
  /** The walk at every CHECKPOINT_OUTPUTS-th output it has passed, for ranges asked out of order. */
  readonly #checkpoints: SincWalk[] = [];

  constructor(n: number, ratio: number, converter: SincConverter) {
    this.#walk = new SincWalk(n, ratio, converter);
    this.#checkpoints.push(this.#walk.copy());
  }

  /** The input samples outputs [lo, hi) read: [first, last). */
  inputs(lo: number, hi: number): { readonly first: number; readonly last: number } {
    const { reach, ratio } = this.#walk;
    return { first: Math.floor(lo / ratio) - reach - 2, last: Math.ceil(hi / ratio) + reach + 2 };
  }

  /** Outputs [lo, hi) (zeros where libsamplerate stops before them) from `slice`, input samples [first, first + slice.length) as inputs() gives them. */
  range(lo: number, hi: number, slice: Float64Array, first: number): Float64Array {
    if (this.#walk.made > lo) this.#walk = (this.#checkpoints[Math.min(Math.floor(lo / CHECKPOINT_OUTPUTS), this.#checkpoints.length - 1)] as SincWalk).copy();
    const walk = this.#walk;
    while (walk.made < lo && walk.next()) {
      walk.advance();
      if (walk.made % CHECKPOINT_OUTPUTS === 0 && this.#checkpoints.length === walk.made / CHECKPOINT_OUTPUTS) this.#checkpoints.push(walk.copy());
    }
    const x = Float64Array.from(slice, Math.fround);
    const out = new Float64Array(hi - lo);
    const computing = walk.copy();
    for (let i = 0; i < out.length && computing.next(); i++) {
      out[i] = computing.output(x, first);
      computing.advance();
    }
    return out;
  }
}

/** SRC_SINC_FASTEST (the output side of every VR params file). */
export function sincFastest(signal: Float64Array, ratio: number): Float64Array {
  return libsamplerateSinc(signal, ratio, 'sinc_fastest');
}
