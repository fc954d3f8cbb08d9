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
import { libsamplerateSinc } from './resample-libsamplerate.js';
import { resampyKaiserFast } from './resample-resampy.js';
import { soxrHq, soxrHqPlan } from './resample-soxr.js';

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
  const length = Math.ceil((signal.length * to) / from);
  const out = resampled(signal, from, to, resType);
  const fixed = new Float64Array(length);
  fixed.set(out.length > length ? out.subarray(0, length) : out);
  return float32 ? fixed.map(Math.fround) : fixed;
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

/** loading_mix's librosa.load(…, sr=params.sr, res_type=the top band's): the float32 track at the params' rate. */
export function trackAtModelRate(track: readonly Float64Array[], params: VrParams, trackRate: number): Float64Array[] {
  const top = params.bands[params.bands.length - 1];
  if (params.sr === trackRate || top === undefined) return [...track];
  return track.map((channel) => librosaResample(channel, trackRate, params.sr, top.resType, true));
}

/** vr_separator.py's last step for params at another rate: librosa.resample(stem, orig_sr=params.sr, target_sr=44100), librosa's default soxr_hq, float64. */
export function stemAtTrackRate(stem: readonly Float64Array[], params: VrParams, trackRate: number): Float64Array[] {
  if (params.sr === trackRate) return [...stem];
  return stem.map((channel) => librosaResample(channel, params.sr, trackRate, 'soxr_hq', false));
}

function resampled(signal: Float64Array, from: number, to: number, resType: LibrosaResType): Float64Array {
  switch (resType) {
    case 'polyphase':
      return resamplePoly(signal, from, to);
    case 'sinc_fastest':
    case 'sinc_medium':
    case 'sinc_best':
      return libsamplerateSinc(signal, to / from, resType);
    case 'kaiser_fast':
      return resampyKaiserFast(signal, from, to);
    case 'soxr_hq':
      return soxrHq(signal, from, to);
    default:
      throw new StemsplitError('MODEL_INVALID', `resampling with ${resType} (${from} → ${to} Hz) is not supported by stemsplit`);
  }
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

