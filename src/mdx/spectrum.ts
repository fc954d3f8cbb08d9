/**
 * The spectrogram an MDX-Net network reads and writes, as audio-separator's uvr_lib_v5/stft.py
 * makes it for one stereo chunk of hop·(frames − 1) samples:
 *
 * - torch.stft per channel: periodic Hann of n_fft, hop 1024, centred (reflect padding n_fft/2),
 *   one-sided; packed as channels [L re, L im, R re, R im], bins [0, dim_f), then bins 0–2 zeroed
 *   (mdx_separator.run_model);
 * - the inverse: bins dim_f … n_fft/2 zero-filled, torch.istft (window-square normalised
 *   overlap-add, n_fft/2 trimmed at both ends), hop·(frames − 1) samples per channel.
 *
 * Left and right share one complex FFT per frame (left real, right imaginary). Tensors are
 * [4, dim_f, frames], frames fastest, as the graph's [1, 4, dim_f, dim_t] input.
 */
import { Fft } from '../dsp/fft.js';

/** Bins audio-separator zeroes before the network (`spek[:, :, :3, :] *= 0`). */
const ZEROED_BINS = 3;

export class MdxSpectrum {
  /** Samples per channel of a chunk (and of the inverse's output). */
  readonly length: number;
  private readonly fft: Fft;
  private readonly window: Float64Array;
  /** 1 / Σ window² at each output sample. */
  private readonly envelope: Float64Array;
  private readonly re: Float64Array;
  private readonly im: Float64Array;

  constructor(
    readonly nFft: number,
    readonly hop: number,
    readonly dimF: number,
    readonly frames: number,
  ) {
    this.length = hop * (frames - 1);
    this.fft = new Fft(nFft);
    this.window = new Float64Array(nFft);
    // torch.hann_window(n_fft, periodic=True), a float32 tensor.
    for (let n = 0; n < nFft; n++) this.window[n] = Math.fround(0.5 - 0.5 * Math.cos((2 * Math.PI * n) / nFft));
    this.envelope = this.inverseEnvelope();
    this.re = new Float64Array(nFft);
    this.im = new Float64Array(nFft);
  }

  /** Values in one [4, dim_f, frames] tensor. */
  get size(): number {
    return 4 * this.dimF * this.frames;
  }

  /** Planar stereo chunk [2, length] → the network's input [4, dim_f, frames]. */
  analyze(chunk: Float32Array): Float32Array {
    const { nFft, hop, dimF, frames, length, re, im, window } = this;
    const left = chunk.subarray(0, length);
    const right = chunk.subarray(length, 2 * length);
    const spec = new Float32Array(this.size);
    const plane = dimF * frames;
    const half = nFft / 2;
    for (let t = 0; t < frames; t++) {
      for (let n = 0; n < nFft; n++) {
        const at = reflect(t * hop + n - half, length);
        const w = window[n] as number;
        re[n] = w * (left[at] as number);
        im[n] = w * (right[at] as number);
      }
      this.fft.forward(re, im);
      for (let k = ZEROED_BINS; k < dimF; k++) {
        const mirror = nFft - k;
        const zr = re[k] as number;
        const zi = im[k] as number;
        const mr = re[mirror] as number;
        const mi = im[mirror] as number;
        const at = k * frames + t;
        spec[at] = 0.5 * (zr + mr);
        spec[plane + at] = 0.5 * (zi - mi);
        spec[2 * plane + at] = 0.5 * (zi + mi);
        spec[3 * plane + at] = -0.5 * (zr - mr);
      }
    }
    return spec;
  }

  /** The network's output [4, dim_f, frames] → planar stereo [2, length], as torch.istft. */
  synthesize(spec: Float32Array): Float32Array {
    const { nFft, hop, dimF, frames, length, re, im, window, envelope } = this;
    const plane = dimF * frames;
    const half = nFft / 2;
    const nyquist = half;
    const left = new Float64Array(length);
    const right = new Float64Array(length);
    for (let t = 0; t < frames; t++) {
      re.fill(0);
      im.fill(0);
      for (let k = 0; k < dimF; k++) {
        const at = k * frames + t;
        // c2r ignores the imaginary parts of DC and Nyquist.
        const edge = k === 0 || k === nyquist;
        const lr = spec[at] as number;
        const li = edge ? 0 : (spec[plane + at] as number);
        const rr = spec[2 * plane + at] as number;
        const ri = edge ? 0 : (spec[3 * plane + at] as number);
        // Z = L + iR: the inverse's real part is the left channel, its imaginary part the right.
        re[k] = lr - ri;
        im[k] = li + rr;
        if (!edge) {
          re[nFft - k] = lr + ri;
          im[nFft - k] = rr - li;
        }
      }
      this.fft.inverse(re, im);
      for (let n = 0; n < nFft; n++) {
        const at = t * hop + n - half;
        if (at < 0 || at >= length) continue;
        const w = (window[n] as number) / nFft;
        left[at] = (left[at] as number) + (re[n] as number) * w;
        right[at] = (right[at] as number) + (im[n] as number) * w;
      }
    }
    const out = new Float32Array(2 * length);
    for (let i = 0; i < length; i++) {
      out[i] = (left[i] as number) * (envelope[i] as number);
      out[length + i] = (right[i] as number) * (envelope[i] as number);
    }
    return out;
  }

  private inverseEnvelope(): Float64Array {
    const { nFft, hop, frames, length, window } = this;
    const sum = new Float64Array(length);
    for (let t = 0; t < frames; t++) {
      for (let n = 0; n < nFft; n++) {
        const at = t * hop + n - nFft / 2;
        if (at >= 0 && at < length) sum[at] = (sum[at] as number) + (window[n] as number) ** 2;
      }
    }
    for (let i = 0; i < length; i++) sum[i] = (sum[i] as number) > 1e-11 ? 1 / (sum[i] as number) : 0;
    return sum;
  }
}

/** torch's reflect padding index (edge sample not repeated); |pad| < length, so one fold is enough. */
function reflect(index: number, length: number): number {
  if (index < 0) return -index;
  if (index >= length) return 2 * (length - 1) - index;
  return index;
}
