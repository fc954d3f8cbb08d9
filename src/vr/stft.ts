/**
 * librosa.stft / librosa.istft as UVR's VR code calls them (librosa 0.11): periodic Hann window
 * of n_fft, `center=True` with **zero** padding of n_fft/2 on both sides, 1 + ⌊n / hop⌋ frames;
 * the inverse overlap-adds each frame's c2r transform times the window, divides by the summed
 * squared window where it is above float64's tiny, and cuts n_fft/2 from both ends
 * (hop·(frames − 1) samples: no `length`). The two channels share one complex FFT per frame.
 */
import { Fft, silentParts, unpackTwoReal } from '../dsp/fft.js';
import { periodicHann } from '../dsp/window.js';

/**
 * A stereo spectrogram [2][bins][frames], planar real and imaginary parts: float32 where numpy
 * holds complex64 (the track's spectrogram and the masked stems), float64 for complex128.
 */
export interface Spectrogram {
  readonly bins: number;
  readonly frames: number;
  readonly re: Float32Array | Float64Array;
  readonly im: Float32Array | Float64Array;
}

export function emptySpectrogram(bins: number, frames: number, precision: 'complex64' | 'complex128'): Spectrogram {
  const size = 2 * bins * frames;
  return precision === 'complex64'
    ? { bins, frames, re: new Float32Array(size), im: new Float32Array(size) }
    : { bins, frames, re: new Float64Array(size), im: new Float64Array(size) };
}

const transforms = new Map<number, Fft>();

function fftOf(size: number): Fft {
  let fft = transforms.get(size);
  if (fft === undefined) {
    fft = new Fft(size);
    transforms.set(size, fft);
  }
  return fft;
}

/** Where a wave slice lies in its signal: `start` is the signal's sample at index 0, `length` the signal's length (zeros outside [0, length)). */
export interface WaveSlice {
  readonly start: number;
  readonly length: number;
}

/**
 * librosa.stft of each channel (float32 input, complex64 output: the transform runs in float64
 * and each value is rounded to float32, as numpy's rfft and librosa's complex64 result do).
 * With `slice` and `frames`, the channels hold part of a longer signal and only its frames
 * [from, to) are computed, each exactly as the whole signal's transform computes it.
 */
export function stft(
  channels: readonly [Float64Array, Float64Array],
  nFft: number,
  hop: number,
  slice?: WaveSlice,
  range?: readonly [from: number, to: number],
): Spectrogram {
  const [left, right] = channels;
  const { start, length } = slice ?? { start: 0, length: left.length };
  const [from, to] = range ?? [0, 1 + Math.floor(length / hop)];
  const bins = nFft / 2 + 1;
  const frames = to - from;
  const spec = emptySpectrogram(bins, frames, 'complex64');
  const window = periodicHann(nFft);
  const fft = fftOf(nFft);
  const re = new Float64Array(nFft);
  const im = new Float64Array(nFft);
  const bin = new Float64Array(4);
  const half = nFft / 2;
  for (let t = 0; t < frames; t++) {
    for (let n = 0; n < nFft; n++) {
      const at = (from + t) * hop + n - half;
      const inside = at >= 0 && at < length;
      const w = window[n] as number;
      re[n] = inside ? w * (left[at - start] as number) : 0;
      im[n] = inside ? w * (right[at - start] as number) : 0;
    }
    const silent = silentParts(re, im);
    fft.forward(re, im);
    for (let k = 0; k < bins; k++) {
      unpackTwoReal(re, im, k, bin, silent);
      const l = k * frames + t;
      const r = (bins + k) * frames + t;
      spec.re[l] = Math.fround(bin[0] as number);
      spec.im[l] = Math.fround(bin[1] as number);
      spec.re[r] = Math.fround(bin[2] as number);
      spec.im[r] = Math.fround(bin[3] as number);
    }
  }
  return spec;
}

/** librosa.istft of each channel of a complex128 spectrogram (n_fft = 2·(bins − 1)), in float64. */
export function istft(spec: Spectrogram, hop: number): [Float64Array, Float64Array] {
  const { bins, frames } = spec;
  const nFft = 2 * (bins - 1);
  const half = nFft / 2;
  const window = periodicHann(nFft);
  const fft = fftOf(nFft);
  const re = new Float64Array(nFft);
  const im = new Float64Array(nFft);
  const full = nFft + hop * (frames - 1);
  const sums = [new Float64Array(full), new Float64Array(full)] as const;
  const envelope = new Float64Array(full);
  for (let t = 0; t < frames; t++) {
    // Two real outputs a, b from one complex inverse of A + i·B; c2r ignores DC's and Nyquist's imaginary parts.
    for (let k = 0; k < bins; k++) {
      const edge = k === 0 || k === bins - 1;
      const a = k * frames + t;
      const b = (bins + k) * frames + t;
      const ar = spec.re[a] as number;
      const ai = edge ? 0 : (spec.im[a] as number);
      const br = spec.re[b] as number;
      const bi = edge ? 0 : (spec.im[b] as number);
      re[k] = ar - bi;
      im[k] = ai + br;
      if (!edge) {
        re[nFft - k] = ar + bi;
        im[nFft - k] = br - ai;
      }
    }
    fft.inverse(re, im);
    const at = t * hop;
    for (let n = 0; n < nFft; n++) {
      const w = window[n] as number;
      sums[0][at + n] = (sums[0][at + n] as number) + ((re[n] as number) / nFft) * w;
      sums[1][at + n] = (sums[1][at + n] as number) + ((im[n] as number) / nFft) * w;
      envelope[at + n] = (envelope[at + n] as number) + w * w;
    }
  }
  const length = hop * (frames - 1);
  const out: [Float64Array, Float64Array] = [new Float64Array(length), new Float64Array(length)];
  for (let i = 0; i < length; i++) {
    const e = envelope[i + half] as number;
    const scale = e > Number.MIN_VALUE * 2 ** 52 ? e : 1;
    out[0][i] = (sums[0][i + half] as number) / scale;
    out[1][i] = (sums[1][i + half] as number) / scale;
  }
  return out;
}
