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
  const x = Float32Array.from(signal);
  const ratio = to / from;
  const outputs = Math.trunc((x.length * to) / from);
  const table = kaiserFastWindow();
  const win = ratio < 1 ? table.map((v) => ratio * v) : table;
  const delta = new Float64Array(win.length);
  for (let i = 0; i + 1 < win.length; i++) delta[i] = (win[i + 1] as number) - (win[i] as number);
  const scale = Math.min(1, ratio);
  const numTable = KAISER_FAST.precision;
  const indexStep = Math.trunc(scale * numTable);
  const timeIncrement = 1 / ratio;
  const nwin = win.length;
  const n = x.length;
  const y = new Float64Array(outputs);
  for (let t = 0; t < outputs; t++) {
    const time = t * timeIncrement;
    const sample = Math.trunc(time);
    let frac = scale * (time - sample);
    let indexFrac = frac * numTable;
    let offset = Math.trunc(indexFrac);
    let eta = indexFrac - offset;
    let acc = 0;
    const iMax = Math.min(sample + 1, Math.floor((nwin - offset) / indexStep));
    for (let i = 0; i < iMax; i++) {
      const at = offset + i * indexStep;
      acc = Math.fround(acc + ((win[at] as number) + eta * (delta[at] as number)) * (x[sample - i] as number));
    }
    frac = scale - frac;
    indexFrac = frac * numTable;
    offset = Math.trunc(indexFrac);
    eta = indexFrac - offset;
    const kMax = Math.min(n - sample - 1, Math.floor((nwin - offset) / indexStep));
    for (let k = 0; k < kMax; k++) {
      const at = offset + k * indexStep;
      acc = Math.fround(acc + ((win[at] as number) + eta * (delta[at] as number)) * (x[sample + k + 1] as number));
    }
    y[t] = acc;
  }
  return y;
}
