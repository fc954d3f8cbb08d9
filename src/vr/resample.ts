/**
 * The resamplers UVR's VR pipeline reaches through `librosa.resample`, each as its own library
 * computes it (a VR network amplifies differences in its input by about 40 dB, so a resampler
 * that is merely good is not enough):
 *
 * - `polyphase`: scipy.signal.resample_poly (a Kaiser-windowed sinc, β 5, half length
 *   10·max(up, down), firwin's unit-DC scaling, zero padding), in float64;
 * - `sinc_fastest`: libsamplerate's SRC_SINC_FASTEST as python-samplerate's `resample` calls it
 *   (float32 in and out, `src_simple` with end of input, int(n·ratio) output frames).
 *
 * librosa returns the signal unchanged when the rates are equal, and fixes the length to
 * ⌈n·ratio⌉ (zero-padding or cutting) in the input's precision.
 */
import { StemsplitError } from '../errors.js';
import type { ResType } from './params.js';

/** Whether stemsplit reproduces `resType` exactly. */
export function supportedResampler(resType: ResType): boolean {
  return resType === 'polyphase' || resType === 'sinc_fastest';
}

/** librosa.resample of one channel; `float32` says the input array is float32 (the result is rounded to it). */
export function librosaResample(signal: Float64Array, from: number, to: number, resType: ResType, float32: boolean): Float64Array {
  if (from === to) return signal;
  const length = Math.ceil((signal.length * to) / from);
  let out: Float64Array;
  if (resType === 'polyphase') out = resamplePoly(signal, from, to);
  else if (resType === 'sinc_fastest') out = sincFastest(signal, to / from);
  else throw new StemsplitError('MODEL_INVALID', `resampling with ${resType} (${from} → ${to} Hz) is not supported by stemsplit; polyphase and sinc_fastest are`);
  const fixed = new Float64Array(length);
  fixed.set(out.length > length ? out.subarray(0, length) : out);
  return float32 ? fixed.map(Math.fround) : fixed;
}

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b);
}

/** scipy.signal.resample_poly(x, up, down) with up/down = to/from reduced, default window ('kaiser', 5.0). */
export function resamplePoly(x: Float64Array, from: number, to: number): Float64Array {
  const divisor = gcd(from, to);
  const up = to / divisor;
  const down = from / divisor;
  const maxRate = Math.max(up, down);
  const half = 10 * maxRate;
  const h = firwinLowpass(2 * half + 1, 1 / maxRate, 5.0).map((v) => v * up);
  const length = Math.ceil((x.length * up) / down);
  const out = new Float64Array(length);
  // upfirdn's output sample i*down (after the padding resample_poly removes) is centred on tap `half`.
  for (let i = 0; i < length; i++) {
    const centre = i * down + half;
    // Taps meet upsampled positions p = centre − j; only multiples of `up` inside the signal are non-zero.
    const first = Math.ceil(Math.max(0, centre - (h.length - 1)) / up) * up;
    const last = Math.min(centre, (x.length - 1) * up);
    let sum = 0;
    for (let p = first; p <= last; p += up) sum += (h[centre - p] as number) * (x[p / up] as number);
    out[i] = sum;
  }
  return out;
}

/** scipy.signal.firwin(numtaps, cutoff, window=('kaiser', beta)): a windowed sinc scaled to unit gain at DC. */
export function firwinLowpass(taps: number, cutoff: number, beta: number): Float64Array {
  const alpha = 0.5 * (taps - 1);
  const h = new Float64Array(taps);
  const window = kaiserWindow(taps, beta);
  let sum = 0;
  for (let n = 0; n < taps; n++) {
    const m = n - alpha;
    h[n] = cutoff * sinc(cutoff * m) * (window[n] as number);
    sum += h[n] as number;
  }
  return h.map((v) => v / sum);
}

/** Symmetric Kaiser window (scipy.signal.windows.kaiser with sym=True; Octave's kaiser). */
export function kaiserWindow(length: number, beta: number): Float64Array {
  const alpha = (length - 1) / 2;
  const out = new Float64Array(length);
  const norm = besselI0(beta);
  for (let n = 0; n < length; n++) {
    const r = (n - alpha) / alpha;
    out[n] = besselI0(beta * Math.sqrt(Math.max(0, 1 - r * r))) / norm;
  }
  return out;
}

/** sin(πx)/(πx), 1 at 0 (numpy's and Octave's sinc). */
function sinc(x: number): number {
  if (x === 0) return 1;
  const y = Math.PI * x;
  return Math.sin(y) / y;
}

/** Modified Bessel function I₀ by its power series Σ ((x/2)^k / k!)², to double precision for the βs used here (≤ 15). */
export function besselI0(x: number): number {
  const q = (x * x) / 4;
  let term = 1;
  let sum = 1;
  for (let k = 1; k < 500; k++) {
    term *= q / (k * k);
    sum += term;
    if (term < sum * 1e-17) break;
  }
  return sum;
}

/**
 * libsamplerate's SRC_SINC_FASTEST filter: make_filter (8, 128, 100.3) from its Octave scripts
 * (Octave/generate_filter.m): a sinc of period 128·F samples under a Kaiser window of β
 * (100.3 + 0.5)/10 and 2·2462 + 1 taps, normalised to sum 128, of which the right half (from
 * the centre) is stored as float, with a trailing zero. F is the fudge factor make_filter's
 * bisection settled on; 1.2026882171630866 is the value that reproduces the published table
 * (fitted to it: largest difference 4.4e-15).
 */
const FASTEST = { halfLength: 2462, increment: 128, fudge: 1.2026882171630866, beta: (100.3 + 0.5) / 10 } as const;

let fastestCoefficients: Float32Array | undefined;

function fastestTable(): Float32Array {
  if (fastestCoefficients !== undefined) return fastestCoefficients;
  const { halfLength, increment, fudge, beta } = FASTEST;
  const raw = new Float64Array(halfLength + 1);
  const norm = besselI0(beta);
  for (let k = 0; k <= halfLength; k++) {
    const r = k / halfLength;
    raw[k] = (sinc(k / (fudge * increment)) * besselI0(beta * Math.sqrt(Math.max(0, 1 - r * r)))) / norm;
  }
  let sum = raw[0] as number;
  for (let k = 1; k <= halfLength; k++) sum += 2 * (raw[k] as number);
  const table = new Float32Array(halfLength + 2);
  for (let k = 0; k <= halfLength; k++) table[k] = ((raw[k] as number) * increment) / sum;
  fastestCoefficients = table;
  return table;
}

/** C's lrint in the default rounding mode: to nearest, ties to even. */
function lrint(x: number): number {
  const r = Math.round(x);
  return r - x === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

function fmodOne(x: number): number {
  const res = x - lrint(x);
  return res < 0 ? res + 1 : res;
}

const SHIFT_BITS = 12;
const FP_ONE = 1 << SHIFT_BITS;

/**
 * src_sinc.c's interpolation (sinc_stereo_vari_process + calc_output_stereo) of one channel at a
 * constant ratio: the input rounded to float32, zeros outside it, positions stepped by 1/ratio
 * in double with libsamplerate's fixed-point filter index (12 fractional bits), each coefficient
 * interpolated as C computes it (the float difference of two table entries, scaled in double),
 * both halves summed in double in libsamplerate's order.
 */
export function sincFastest(signal: Float64Array, ratio: number): Float64Array {
  const x = Float32Array.from(signal);
  const n = x.length;
  const { base, step } = fastestSteps();
  const { halfLength, increment: indexInc } = FASTEST;
  const frames = Math.floor(n * ratio);
  const out = new Float64Array(frames);
  const floatIncrement = indexInc * Math.min(ratio, 1);
  const increment = lrint(floatIncrement * FP_ONE);
  const scale = floatIncrement / indexInc;
  const maxFilterIndex = halfLength * FP_ONE;
  const terminate = 1 / ratio + 1e-20;
  const mask = FP_ONE - 1;
  let current = 0;
  let inputIndex = 0;
  let made = 0;
  for (; made < frames; made++) {
    // libsamplerate compares a sample count (2 per stereo frame) with a fraction of a frame here.
    if (2 * (n - current) <= inputIndex + terminate) break;
    const start = lrint(inputIndex * floatIncrement * FP_ONE);
    let filterIndex = start;
    let count = Math.trunc((maxFilterIndex - filterIndex) / increment);
    filterIndex += count * increment;
    let dataIndex = current - count;
    let left = 0;
    for (; filterIndex >= 0; filterIndex -= increment, dataIndex++) {
      if (dataIndex < 0 || dataIndex >= n) continue;
      const index = filterIndex >> SHIFT_BITS;
      left += ((base[index] as number) + ((filterIndex & mask) / FP_ONE) * (step[index] as number)) * (x[dataIndex] as number);
    }
    filterIndex = increment - start;
    count = Math.trunc((maxFilterIndex - filterIndex) / increment);
    filterIndex += count * increment;
    dataIndex = current + 1 + count;
    let right = 0;
    do {
      if (dataIndex >= 0 && dataIndex < n) {
        const index = filterIndex >> SHIFT_BITS;
        right += ((base[index] as number) + ((filterIndex & mask) / FP_ONE) * (step[index] as number)) * (x[dataIndex] as number);
      }
      filterIndex -= increment;
      dataIndex--;
    } while (filterIndex > 0);
    out[made] = Math.fround(scale * (left + right));
    inputIndex += 1 / ratio;
    const rem = fmodOne(inputIndex);
    current += lrint(inputIndex - rem);
    inputIndex = rem;
  }
  return made === frames ? out : out.subarray(0, made);
}

let fastestStepTables: { readonly base: Float64Array; readonly step: Float64Array } | undefined;

/** The table's entries and, per entry, the float difference to the next (coeff_t is float: C subtracts in float). */
function fastestSteps(): { readonly base: Float64Array; readonly step: Float64Array } {
  if (fastestStepTables !== undefined) return fastestStepTables;
  const table = fastestTable();
  const base = Float64Array.from(table);
  const step = new Float64Array(table.length);
  for (let i = 0; i + 1 < table.length; i++) step[i] = Math.fround((table[i + 1] as number) - (table[i] as number));
  fastestStepTables = { base, step };
  return fastestStepTables;
}
