/**
 * HTDemucs' spectrogram front and back end (`_spec` / `_ispec` in demucs/htdemucs.py),
 * for one fixed segment length, outside the ONNX graph.
 *
 * `_spec` reflect-pads the signal by 3/2 hop on the left (more on the right up to a whole
 * number of hops), takes a centred, normalized Hann STFT, drops the Nyquist bin and keeps
 * frames 2..2+T. All of that folds into: frame t covers samples t·hop − 3/2·hop + n of the
 * reflect-padded signal. `_ispec` is the exact inverse, including torch.istft's division by
 * the summed squared window over every frame (the zero padding frames too).
 *
 * Spectrograms use HTDemucs' "complex as channels" layout: for each audio channel c,
 * channel 2c holds the real part and 2c+1 the imaginary part, as [channels, freqs, frames].
 */
import { Fft } from './fft.js';

export class SegmentStft {
  readonly nfft: number;
  readonly hop: number;
  readonly length: number;
  /** Frequency bins kept (nfft / 2: the Nyquist bin is dropped). */
  readonly freqs: number;
  /** Frames per segment: ceil(length / hop). */
  readonly frames: number;
  private readonly fft: Fft;
  private readonly window: Float64Array;
  /** 1 / (summed squared window) per output sample, as torch.istft divides by it. */
  private readonly inverseEnvelope: Float64Array;
  private readonly re: Float64Array;
  private readonly im: Float64Array;

  constructor(nfft: number, length: number) {
    this.nfft = nfft;
    this.hop = nfft / 4;
    this.length = length;
    this.freqs = nfft / 2;
    this.frames = Math.ceil(length / this.hop);
    this.fft = new Fft(nfft);
    this.window = hannWindow(nfft);
    this.inverseEnvelope = this.envelope();
    this.re = new Float64Array(nfft);
    this.im = new Float64Array(nfft);
  }

  /** Offset of frame t's first sample in the segment: t·hop − 3/2·hop. */
  private frameStart(frame: number): number {
    return frame * this.hop - (this.hop / 2) * 3;
  }

  /**
   * Stereo planar signal [2, length] → spectrogram [4, freqs, frames] (CaC layout).
   * Both channels go through one complex FFT (left as real part, right as imaginary).
   */
  analyze(signal: Float32Array, out: Float32Array): void {
    const { nfft, length, freqs, frames, re, im, window } = this;
    const scale = 1 / Math.sqrt(nfft);
    const plane = freqs * frames;
    for (let t = 0; t < frames; t++) {
      const start = this.frameStart(t);
      for (let n = 0; n < nfft; n++) {
        const at = reflect(start + n, length);
        const w = window[n] as number;
        re[n] = w * (signal[at] as number);
        im[n] = w * (signal[length + at] as number);
      }
      this.fft.forward(re, im);
      // Untangle the two real spectra: L[k] = (Z[k] + conj Z[N−k]) / 2, R[k] = (Z[k] − conj Z[N−k]) / 2i.
      for (let k = 0; k < freqs; k++) {
        const mirror = k === 0 ? 0 : nfft - k;
        const zr = re[k] as number;
        const zi = im[k] as number;
        const mr = re[mirror] as number;
        const mi = im[mirror] as number;
        const at = k * frames + t;
        out[at] = 0.5 * scale * (zr + mr);
        out[plane + at] = 0.5 * scale * (zi - mi);
        out[2 * plane + at] = 0.5 * scale * (zi + mi);
        out[3 * plane + at] = -0.5 * scale * (zr - mr);
      }
    }
  }

  /**
   * Spectrogram [4, freqs, frames] (CaC, one source) → stereo planar signal, added into
   * `out` [2, length]. Both channels come out of one complex inverse FFT.
   */
  synthesizeAdd(spec: Float32Array, specOffset: number, out: Float32Array, outOffset: number): void {
    const { nfft, length, freqs, frames, re, im, window, inverseEnvelope } = this;
    const scale = 1 / Math.sqrt(nfft);
    const plane = freqs * frames;
    for (let t = 0; t < frames; t++) {
      // Z = L + i·R over the full Hermitian-extended spectrum; the Nyquist bin is zero and,
      // as in a C2R transform, the imaginary parts of the DC bins are ignored.
      re[0] = spec[specOffset + t] as number;
      im[0] = spec[specOffset + 2 * plane + t] as number;
      re[freqs] = 0;
      im[freqs] = 0;
      for (let k = 1; k < freqs; k++) {
        const at = specOffset + k * frames + t;
        const lr = spec[at] as number;
        const li = spec[at + plane] as number;
        const rr = spec[at + 2 * plane] as number;
        const ri = spec[at + 3 * plane] as number;
        re[k] = lr - ri;
        im[k] = li + rr;
        re[nfft - k] = lr + ri;
        im[nfft - k] = rr - li;
      }
      this.fft.inverse(re, im);
      const start = this.frameStart(t);
      const from = Math.max(0, -start);
      const to = Math.min(nfft, length - start);
      for (let n = from; n < to; n++) {
        const j = start + n;
        const gain = scale * (window[n] as number) * (inverseEnvelope[j] as number);
        out[outOffset + j] = (out[outOffset + j] as number) + gain * (re[n] as number);
        out[outOffset + length + j] = (out[outOffset + length + j] as number) + gain * (im[n] as number);
      }
    }
  }

  /** Summed squared window at each output sample, over all frames torch.istft sees (2 zero frames each side). */
  private envelope(): Float64Array {
    const { nfft, length, frames, window } = this;
    const sum = new Float64Array(length);
    for (let t = -2; t < frames + 2; t++) {
      const start = this.frameStart(t);
      for (let n = Math.max(0, -start); n < nfft && start + n < length; n++) {
        sum[start + n] = (sum[start + n] as number) + (window[n] as number) ** 2;
      }
    }
    return sum.map((value) => 1 / value);
  }
}

/** Periodic Hann window, as torch.hann_window(n). */
function hannWindow(size: number): Float64Array {
  const window = new Float64Array(size);
  for (let n = 0; n < size; n++) window[n] = 0.5 - 0.5 * Math.cos((2 * Math.PI * n) / size);
  return window;
}

/** Index into a signal reflect-padded on both sides (numpy/torch "reflect": the edge is not repeated). */
function reflect(index: number, length: number): number {
  if (index < 0) return -index;
  if (index >= length) return 2 * (length - 1) - index;
  return index;
}
