/**
 * resampy's `kaiser_fast` filter (resampy 0.4, librosa's res_type "kaiser_fast") as
 * `resampy.resample` runs it on librosa's float32 waves.
 *
 * The filter is resampy's published recipe (resampy/filters.py: `sinc_window` with a Kaiser
 * taper, "kaiser_fast: beta 9.90322, roll 0.868212, # zeros 24, precision 9"), i.e. the right
 * wing rolloff·sinc(rolloff·t) · kaiser(2n + 1, β)[n:] at t = i/512, i = 0…24·512. The roll-off
 * is the value stored in resampy's data/kaiser_fast.npz and β the value that reproduces that
 * file's table (the docstring prints both to 6 digits; docs/vr.md gives the fit).
 *
 * The loop is resampy/interpn.py's `_resample_loop`: output t at input time t/ratio, each wing's
 * coefficients linearly interpolated from the table (stepping scale·512 entries per input
 * sample), the output accumulated in the input's float32 as numba stores it.
 */
import { besselI0, sinc } from './resample-math.js';
import { OutputBuffer, SampleWindow, type ChannelResampler } from './resample-stream.js';

/** β and the roll-off that reproduce data/kaiser_fast.npz (largest difference 3.3e-16; docs/vr.md). */
const KAISER_FAST = { zeros: 24, precision: 512, beta: 9.903224416455277, rolloff: 0.8682120388377784 } as const;

let fastWindow: Float64Array | undefined;

/** resampy's kaiser_fast half window: zeros·precision + 1 coefficients. */
export function kaiserFastWindow(): Float64Array {
  if (fastWindow !== undefined) return fastWindow;
  const { zeros, precision, beta, rolloff } = KAISER_FAST;
  const n = zeros * precision;
  const norm = besselI0(beta);
  const win = new Float64Array(n + 1);
  for (let i = 0; i <= n; i++) {
    const r = i / n;
    const taper = besselI0(beta * Math.sqrt(1 - r * r)) / norm;
    win[i] = taper * (rolloff * sinc(rolloff * (i / precision)));
  }
  fastWindow = win;
  return win;
}

/** resampy.resample(x, from, to, filter='kaiser_fast') of one float32 channel: int(n·to/from) samples. */
export function resampyKaiserFast(signal: Float64Array, from: number, to: number): Float64Array {
  return new KaiserFastStream(signal.length, from, to).push(signal);
}

/** resampyKaiserFast fed in order: output t reads the input around t/ratio only. */
export class KaiserFastStream implements ChannelResampler {
  readonly #x = new SampleWindow(Math.fround);
  readonly #out = new OutputBuffer();
  readonly #n: number;
  readonly #outputs: number;
  readonly #win: Float64Array;
  readonly #delta: Float64Array;
  readonly #scale: number;
  readonly #indexStep: number;
  readonly #timeIncrement: number;
  /** Input samples either side of an output's own that its filter reaches. */
  readonly #reach: number;
  #t = 0;

  constructor(n: number, from: number, to: number) {
    const ratio = to / from;
    const table = kaiserFastWindow();
    this.#n = n;
    this.#outputs = Math.trunc((n * to) / from);
    this.#win = ratio < 1 ? table.map((v) => ratio * v) : table;
    this.#delta = new Float64Array(this.#win.length);
    for (let i = 0; i + 1 < this.#win.length; i++) this.#delta[i] = (this.#win[i + 1] as number) - (this.#win[i] as number);
    this.#scale = Math.min(1, ratio);
    this.#indexStep = Math.trunc(this.#scale * KAISER_FAST.precision);
    this.#timeIncrement = 1 / ratio;
    this.#reach = Math.floor(this.#win.length / this.#indexStep) + 1;
  }

  push(samples: Float64Array): Float64Array {
    this.#x.append(samples);
    const all = this.#x.received >= this.#n;
    for (; this.#t < this.#outputs; this.#t++) {
      const sample = Math.trunc(this.#t * this.#timeIncrement);
      if (!all && sample + this.#reach >= this.#x.received) break;
      this.#out.add(this.#output(this.#t));
    }
    this.#x.discardBefore(Math.trunc(this.#t * this.#timeIncrement) - this.#reach);
    return this.#out.take();
  }

  /** resampy/interpn.py's `_resample_loop` for output t. */
  #output(t: number): number {
    const win = this.#win;
    const delta = this.#delta;
    const x = this.#x.data;
    const base = this.#x.base;
    const scale = this.#scale;
    const indexStep = this.#indexStep;
    const numTable = KAISER_FAST.precision;
    const nwin = win.length;
    const time = t * this.#timeIncrement;
    const sample = Math.trunc(time);
    let frac = scale * (time - sample);
    let indexFrac = frac * numTable;
    let offset = Math.trunc(indexFrac);
    let eta = indexFrac - offset;
    let acc = 0;
    const iMax = Math.min(sample + 1, Math.floor((nwin - offset) / indexStep));
    for (let i = 0; i < iMax; i++) {
      const at = offset + i * indexStep;
      acc = Math.fround(acc + ((win[at] as number) + eta * (delta[at] as number)) * (x[sample - i - base] as number));
    }
    frac = scale - frac;
    indexFrac = frac * numTable;
    offset = Math.trunc(indexFrac);
    eta = indexFrac - offset;
    const kMax = Math.min(this.#n - sample - 1, Math.floor((nwin - offset) / indexStep));
    for (let k = 0; k < kMax; k++) {
      const at = offset + k * indexStep;
      acc = Math.fround(acc + ((win[at] as number) + eta * (delta[at] as number)) * (x[sample + k + 1 - base] as number));
    }
    return acc;
  }
}
