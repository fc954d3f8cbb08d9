/**
 * The spectrogram side of UVR's VR pipeline (python-audio-separator's vr_separator.py
 * `loading_mix` and `spec_to_wav`, uvr_lib_v5/spec_utils.py):
 *
 * - input: the top band is the track; each lower band is the band above resampled with the lower
 *   band's own res_type; per band, VR 5.0 mixes the waves (`reverse`, `mid_side`, `mid_side_b2`)
 *   and VR 5.1 converts the spectra's channels (`convert_channels`); bands are cropped, stacked
 *   and cut to the shortest, then pre-filtered (5.1: a linear mask ramp; 5.0 one band:
 *   fft_lp_filter; 5.0 several bands: a dB gain loop);
 * - output: per band, the band's bins filled in (and, with high_end_process, the top band's
 *   highest bins from the mirrored input), filtered, inverse-transformed; lower bands summed
 *   upwards and resampled with **sinc_fastest**, whatever the band's res_type (spec_utils'
 *   wav_resolution on Linux, Windows and Intel macOS).
 *
 * Arithmetic follows numpy's dtypes where they matter: complex64 spectra (float32 rounding),
 * complex128 on the way out.
 */
import { StemsplitError } from '../errors.js';
import type { VrBand, VrParams } from './params.js';
import { emptySpectrogram, istft, stft, type Spectrogram, type WaveSlice } from './stft.js';

export type StereoWave = [Float64Array, Float64Array];

/** The top band's highest bins kept for high_end_process: their count and the [2, h, frames] spectrum. */
export interface HighEnd {
  readonly bins: number;
  readonly spec: Spectrogram;
}

/** spec_utils.wav_resolution: the output side's resampler. */
export const OUTPUT_RESAMPLER = 'sinc_fastest';

const f32 = Math.fround;

/**
 * spec_utils.wave_to_spectrogram of band `band` over frames [from, to), from a slice of the band's
 * wave (`slice` says where it lies; it must hold every sample those frames reach). The `reverse`
 * params transform the band flipped: for them the caller gives a slice of the flipped band.
 */
export function bandSpectrogram(
  wave: StereoWave,
  slice: WaveSlice,
  band: VrBand,
  params: VrParams,
  isV51: boolean,
  frames: readonly [number, number],
): Spectrogram {
  const [l, r] = wave;
  let channels: StereoWave = wave;
  if (!isV51) {
    if (params.channels === 'mid_side') channels = [l.map((v, i) => f32(f32(v + (r[i] as number)) / 2)), l.map((v, i) => f32(v - (r[i] as number)))];
    else if (params.channels === 'mid_side_b2')
      channels = [l.map((v, i) => f32((r[i] as number) + f32(v * 0.5))), l.map((v, i) => f32(v - f32((r[i] as number) * 0.5)))];
  }
  const spec = stft(channels, band.nFft, band.hl, slice, frames);
  if (isV51 && band.convertChannels !== undefined) convertChannels(spec, band.convertChannels);
  return spec;
}

/** high_end_process' input: the top band's highest bins (loading_mix's input_high_end), or undefined where there are none. */
export function highEndOf(top: Spectrogram, band: VrBand, params: VrParams): HighEnd | undefined {
  const h = band.nFft / 2 - band.cropStop + (params.preFilterStop - params.preFilterStart);
  return h > 0 ? { bins: h, spec: binRange(top, band.nFft / 2 - h, band.nFft / 2) } : undefined;
}

/** spec_utils.convert_channels on complex64 spectra. */
function convertChannels(spec: Spectrogram, mode: NonNullable<VrBand['convertChannels']>): void {
  const half = spec.bins * spec.frames;
  for (const part of [spec.re, spec.im]) {
    for (let i = 0; i < half; i++) {
      const a = part[i] as number;
      const b = part[half + i] as number;
      if (mode === 'mid_side_c') {
        part[i] = f32(a + f32(b * 0.25));
        part[half + i] = f32(b - f32(a * 0.25));
      } else if (mode === 'mid_side') {
        part[i] = f32(f32(a + b) / 2);
        part[half + i] = f32(a - b);
      } else {
        part[i] = f32(f32(a + f32(b * 0.25)) / f32(0.9375));
        part[half + i] = f32(f32(b + f32(a * 0.25)) / f32(0.9375));
      }
    }
  }
}

/** Bins [from, to) of every channel and frame. */
function binRange(spec: Spectrogram, from: number, to: number): Spectrogram {
  const out = emptySpectrogram(to - from, spec.frames, 'complex64');
  for (let c = 0; c < 2; c++) {
    const src = (c * spec.bins + from) * spec.frames;
    const dst = c * out.bins * spec.frames;
    out.re.set(spec.re.subarray(src, src + out.bins * spec.frames), dst);
    out.im.set(spec.im.subarray(src, src + out.bins * spec.frames), dst);
  }
  return out;
}

/** spec_utils.combine_spectrograms with its pre-filter: the bands' spectrograms of the same frames, cropped and stacked. */
export function combine(specs: readonly Spectrogram[], params: VrParams, isV51: boolean): Spectrogram {
  const frames = Math.min(...specs.map((s) => s.frames));
  const out = emptySpectrogram(params.bins + 1, frames, 'complex64');
  let offset = 0;
  params.bands.forEach((band, d) => {
    const spec = specs[d] as Spectrogram;
    const h = band.cropStop - band.cropStart;
    if (offset + h > out.bins) throw new StemsplitError('MODEL_INVALID', `VR params ${params.name}: the bands' crops hold more than ${params.bins} bins`);
    for (let c = 0; c < 2; c++) {
      for (let k = 0; k < h; k++) {
        const src = (c * spec.bins + band.cropStart + k) * spec.frames;
        const dst = (c * out.bins + offset + k) * frames;
        out.re.set(spec.re.subarray(src, src + frames), dst);
        out.im.set(spec.im.subarray(src, src + frames), dst);
      }
    }
    offset += h;
  });
  if (offset > params.bins) throw new StemsplitError('MODEL_INVALID', `VR params ${params.name}: too many bins`);
  const { preFilterStart: start, preFilterStop: stop } = params;
  if (start > 0) {
    if (isV51) scaleBins(out, lowPassMask(out.bins, start, stop), false);
    else if (params.bands.length === 1) fftLowPass(out, start, stop, true);
    else {
      // The dB gain loop: each bin's gain depends on the previous one's.
      let gp = 1;
      for (let b = start + 1; b < stop; b++) {
        const g = Math.pow(10, (-(b - start) * (3.5 - gp)) / 20);
        gp = g;
        scaleBin(out, b, f32(g), true);
      }
    }
  }
  return out;
}

function scaleBin(spec: Spectrogram, bin: number, gain: number, complex64: boolean): void {
  for (let c = 0; c < 2; c++) {
    const at = (c * spec.bins + bin) * spec.frames;
    for (let t = 0; t < spec.frames; t++) {
      const re = (spec.re[at + t] as number) * gain;
      const im = (spec.im[at + t] as number) * gain;
      spec.re[at + t] = complex64 ? f32(re) : re;
      spec.im[at + t] = complex64 ? f32(im) : im;
    }
  }
}

/** Multiplies each bin by its mask value (float64 mask; the result rounded to complex64 when `complex64`). */
function scaleBins(spec: Spectrogram, mask: Float64Array, complex64: boolean): void {
  for (let k = 0; k < spec.bins; k++) scaleBin(spec, k, mask[k] as number, complex64);
}

/** numpy.linspace(a, b, n) with its endpoint set exactly. */
function linspace(a: number, b: number, n: number): Float64Array {
  const out = new Float64Array(n);
  const step = n > 1 ? (b - a) / (n - 1) : 0;
  for (let i = 0; i < n; i++) out[i] = i * step + a;
  if (n > 1) out[n - 1] = b;
  return out;
}

/** spec_utils.get_lp_filter_mask: ones to bin start − 2, a ramp 1 → 0 over [start − 1, stop − 1], zeros after. */
function lowPassMask(bins: number, start: number, stop: number): Float64Array {
  const mask = new Float64Array(bins);
  mask.fill(1, 0, start - 1);
  mask.set(linspace(1, 0, stop - start + 1), start - 1);
  return mask;
}

/** spec_utils.get_hp_filter_mask: zeros to bin stop, a ramp 0 → 1 over [stop + 1, start + 1], ones after. */
function highPassMask(bins: number, start: number, stop: number): Float64Array {
  const mask = new Float64Array(bins);
  mask.set(linspace(0, 1, 1 + start - stop), stop + 1);
  mask.fill(1, start + 2);
  return mask;
}

/** spec_utils.fft_lp_filter: gains stepping down by 1/(stop − start) from bin start, zero from stop on. */
function fftLowPass(spec: Spectrogram, start: number, stop: number, complex64: boolean): void {
  let g = 1;
  for (let b = start; b < stop; b++) {
    g -= 1 / (stop - start);
    scaleBin(spec, b, complex64 ? f32(g) : g, complex64);
  }
  for (let b = Math.max(stop, 0); b < spec.bins; b++) scaleBin(spec, b, 0, complex64);
}

/** spec_utils.fft_hp_filter: gains stepping down from bin start towards stop, zero up to bin stop. */
function fftHighPass(spec: Spectrogram, start: number, stop: number): void {
  let g = 1;
  for (let b = start; b > stop; b--) {
    g -= 1 / (start - stop);
    scaleBin(spec, b, g, false);
  }
  for (let b = 0; b <= stop && b < spec.bins; b++) scaleBin(spec, b, 0, false);
}

/**
 * spec_utils.mirroring('mirroring', …): the bins below pre_filter_start − 10, flipped, with the
 * input's phase; wherever the input's own high end is quieter, the input is kept.
 */
export function mirrorHighEnd(spec: Spectrogram, highEnd: HighEnd, params: VrParams): Spectrogram {
  const h = highEnd.bins;
  const frames = spec.frames;
  // numpy's slice [pre_filter_start − 10 − h : pre_filter_start − 10]: negative bounds count from the end (pre_filter_start −1).
  const bound = (i: number) => Math.min(spec.bins, Math.max(0, i < 0 ? i + spec.bins : i));
  const first = bound(params.preFilterStart - 10 - h);
  const end = bound(params.preFilterStart - 10);
  if (end - first !== h)
    throw new StemsplitError(
      'MODEL_INVALID',
      `VR params ${params.name}: high_end_process mirrors ${h} bins from a slice of ${Math.max(0, end - first)} (the official code fails here too)`,
    );
  const out = emptySpectrogram(h, frames, 'complex64');
  for (let c = 0; c < 2; c++) {
    for (let k = 0; k < h; k++) {
      const from = (c * spec.bins + end - 1 - k) * frames;
      const input = (c * h + k) * highEnd.spec.frames;
      const at = (c * h + k) * frames;
      for (let t = 0; t < frames; t++) {
        const mag = f32(Math.hypot(spec.re[from + t] as number, spec.im[from + t] as number));
        const ir = highEnd.spec.re[input + t] as number;
        const ii = highEnd.spec.im[input + t] as number;
        const inputMag = f32(Math.hypot(ir, ii));
        const phase = f32(Math.atan2(ii, ir));
        const mr = f32(mag * f32(Math.cos(phase)));
        const mi = f32(mag * f32(Math.sin(phase)));
        const keep = inputMag <= f32(Math.hypot(mr, mi));
        out.re[at + t] = keep ? ir : mr;
        out.im[at + t] = keep ? ii : mi;
      }
    }
  }
  return out;
}

/**
 * One band's part of spec_utils.cmb_spectrogram_to_wave: band `d`'s bins of a stem's stacked
 * spectrogram (with, for the top band, the mirrored high end), filtered as that band is, back to
 * a wave of hop·(frames − 1) samples at the band's rate (sample i is the stem's sample
 * first frame · hop + i; for the `reverse` params, of the band flipped, which the caller flips
 * back). What the lower bands add, resampled, is the caller's.
 */
export function bandStemWave(spec: Spectrogram, d: number, params: VrParams, isV51: boolean, mirrored?: Spectrogram): StereoWave {
  const { bands } = params;
  const band = bands[d] as VrBand;
  const offset = bands.slice(0, d).reduce((sum, below) => sum + below.cropStop - below.cropStart, 0);
  const bandSpec = emptySpectrogram(band.nFft / 2 + 1, spec.frames, 'complex128');
  const h = band.cropStop - band.cropStart;
  for (let c = 0; c < 2; c++) {
    for (let k = 0; k < h; k++) {
      const src = (c * spec.bins + offset + k) * spec.frames;
      const dst = (c * bandSpec.bins + band.cropStart + k) * spec.frames;
      bandSpec.re.set(spec.re.subarray(src, src + spec.frames), dst);
      bandSpec.im.set(spec.im.subarray(src, src + spec.frames), dst);
    }
  }
  if (d === bands.length - 1) {
    if (mirrored !== undefined) placeHighEnd(bandSpec, mirrored, band.nFft / 2);
    if (band.hpfStart > 0) highPass(bandSpec, band, isV51);
  } else {
    if (d > 0) highPass(bandSpec, band, isV51);
    lowPass(bandSpec, band, isV51);
  }
  return bandWave(bandSpec, band, params, isV51);
}

function placeHighEnd(bandSpec: Spectrogram, mirrored: Spectrogram, maxBin: number): void {
  const h = mirrored.bins;
  const frames = bandSpec.frames;
  for (let c = 0; c < 2; c++) {
    for (let k = 0; k < h; k++) {
      const src = (c * h + k) * mirrored.frames;
      const dst = (c * bandSpec.bins + maxBin - h + k) * frames;
      bandSpec.re.set(mirrored.re.subarray(src, src + frames), dst);
      bandSpec.im.set(mirrored.im.subarray(src, src + frames), dst);
    }
  }
}

function highPass(spec: Spectrogram, band: VrBand, isV51: boolean): void {
  if (isV51) scaleBins(spec, highPassMask(spec.bins, band.hpfStart, band.hpfStop - 1), false);
  else fftHighPass(spec, band.hpfStart, band.hpfStop - 1);
}

function lowPass(spec: Spectrogram, band: VrBand, isV51: boolean): void {
  if (isV51) scaleBins(spec, lowPassMask(spec.bins, band.lpfStart, band.lpfStop), false);
  else fftLowPass(spec, band.lpfStart, band.lpfStop, false);
}

/** spec_utils.spectrogram_to_wave: iSTFT and the inverse of the band's channel handling (`reverse`'s flip is the caller's: it gives the flipped band). */
function bandWave(spec: Spectrogram, band: VrBand, params: VrParams, isV51: boolean): StereoWave {
  const [l, r] = istft(spec, band.hl);
  if (isV51) {
    const cc = band.convertChannels;
    if (cc === 'mid_side_c') return [l.map((v, i) => v / 1.0625 - (r[i] as number) / 4.25), r.map((v, i) => v / 1.0625 + (l[i] as number) / 4.25)];
    if (cc === 'mid_side') return [l.map((v, i) => v + (r[i] as number) / 2), l.map((v, i) => v - (r[i] as number) / 2)];
    if (cc === 'stereo_n') return [l.map((v, i) => v - (r[i] as number) * 0.25), r.map((v, i) => v - (l[i] as number) * 0.25)];
    return [l, r];
  }
  if (params.channels === 'mid_side') return [l.map((v, i) => v + (r[i] as number) / 2), l.map((v, i) => v - (r[i] as number) / 2)];
  if (params.channels === 'mid_side_b2') return [r.map((v, i) => v / 1.25 + 0.4 * (l[i] as number)), l.map((v, i) => v / 1.25 - 0.4 * (r[i] as number))];
  return [l, r];
}
