/**
 * The resamplers UVR's VR pipeline reaches through `librosa.resample`, each as its own library
 * computes it (a VR network amplifies differences in its input by about 40 dB, so a resampler
 * that is merely good is not enough):
 *
 * - `polyphase`: scipy.signal.resample_poly (a Kaiser-windowed sinc, β 5, half length
 *   10·max(up, down), firwin's unit-DC scaling, zero padding), in float64;
 * - `sinc_fastest`, `sinc_medium`, `sinc_best`: libsamplerate's sinc converters as
 *   python-samplerate calls them (resample-libsamplerate.ts);
 * - `kaiser_fast`: resampy's kaiser_fast filter (resample-resampy.ts);
 * - `soxr_hq`, librosa's default: libsoxr's HQ resampler as python-soxr runs it
 *   (resample-soxr.ts), for the ratios VR params need.
 *
 * librosa returns the signal unchanged when the rates are equal, and fixes the length to
 * ⌈n·ratio⌉ (zero-padding or cutting) in the input's precision.
 */
import { StemsplitError } from '../errors.js';
import type { ResType, VrParams } from './params.js';
import { kaiserWindow, sinc } from './resample-math.js';
import { SincStream } from './resample-libsamplerate.js';
import { KaiserFastStream } from './resample-resampy.js';
import { soxrHqPlan, soxrHqStream } from './resample-soxr.js';
import { fixedLength, type ChannelResampler } from './resample-stream.js';

export { sincFastest } from './resample-libsamplerate.js';

/** librosa's res_type names stemsplit reproduces: the params' own and librosa's default. */
export type LibrosaResType = ResType | 'soxr_hq';

/** Whether stemsplit reproduces `resType` exactly. */
export function supportedResampler(resType: LibrosaResType): boolean {
  return resType !== 'kaiser_best';
}

/** librosa.resample of one channel; `float32` says the input array is float32 (the result is rounded to it). */
export function librosaResample(signal: Float64Array, from: number, to: number, resType: LibrosaResType, float32: boolean): Float64Array {
  if (from === to) return signal;
  return librosaResampler(signal.length, from, to, resType, float32).push(signal);
}

/**
 * librosa.resample of one channel of `n` samples fed in order, in blocks of any size, giving what
 * librosaResample gives (resample_poly, not needed in order, is computed once its input is whole).
 */
export function librosaResampler(n: number, from: number, to: number, resType: LibrosaResType, float32: boolean): ChannelResampler {
  if (from === to) return { push: (samples) => samples };
  return fixedLength(resampler(n, from, to, resType), n, Math.ceil((n * to) / from), float32 ? Math.fround : (value) => value);
}

/**
 * Why stemsplit cannot resample `params` as vr_separator.py does for a track at `trackRate`, or
 * undefined: each lower band's res_type; for params at another rate also the top band's (the
 * track is loaded at the params' rate with it) and soxr's plan back to the track's rate.
 */
export function vrResamplingProblem(params: VrParams, trackRate: number): string | undefined {
  const top = params.bands[params.bands.length - 1];
  const loaded = params.sr === trackRate || top === undefined ? params.bands.slice(0, -1) : params.bands;
  const unsupported = loaded.find((band) => !supportedResampler(band.resType));
  if (unsupported !== undefined) return `resample a band with ${unsupported.resType}, which stemsplit does not reproduce`;
  if (params.sr === trackRate) return undefined;
  try {
    soxrHqPlan(params.sr, trackRate);
    return undefined;
  } catch (error) {
    return `run at ${params.sr} Hz and come back to ${trackRate} Hz through soxr: ${(error as Error).message}`;
  }
}

/** loading_mix's librosa.load(…, sr=params.sr, res_type=the top band's): one channel of a track of `n` samples at the params' rate, float32. */
export function trackResampler(params: VrParams, trackRate: number, n: number): ChannelResampler {
  const top = params.bands[params.bands.length - 1];
  if (params.sr === trackRate || top === undefined) return { push: (samples) => samples };
  return librosaResampler(n, trackRate, params.sr, top.resType, true);
}

/** vr_separator.py's last step for params at another rate: librosa.resample(stem, orig_sr=params.sr, target_sr=44100), librosa's default soxr_hq, float64; one channel of `n` samples. */
export function stemResampler(params: VrParams, trackRate: number, n: number): ChannelResampler {
  return librosaResampler(n, params.sr, trackRate, 'soxr_hq', false);
}

function resampler(n: number, from: number, to: number, resType: LibrosaResType): ChannelResampler {
  switch (resType) {
    case 'polyphase':
      return wholeSignal(n, (signal) => resamplePoly(signal, from, to));
    case 'sinc_fastest':
    case 'sinc_medium':
    case 'sinc_best':
      return new SincStream(n, to / from, resType);
    case 'kaiser_fast':
      return new KaiserFastStream(n, from, to);
    case 'soxr_hq':
      return soxrHqStream(n, from, to);
    default:
      throw new StemsplitError('MODEL_INVALID', `resampling with ${resType} (${from} → ${to} Hz) is not supported by stemsplit`);
  }
}

/** `resample` over the whole signal of `n` samples, once it has all arrived. */
function wholeSignal(n: number, resample: (signal: Float64Array) => Float64Array): ChannelResampler {
  const signal = new Float64Array(n);
  let received = 0;
  return {
    push(samples) {
      signal.set(samples, received);
      received += samples.length;
      return received >= n ? resample(signal) : new Float64Array(0);
    },
  };
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
