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
 * The transforms are src/dsp/stft.ts (with the window rounded to float32, as torch's tensor);
 * this file only crops, zeroes and lays out. Tensors are [4, dim_f, frames], frames fastest, as
 * the graph's [1, 4, dim_f, dim_t] input.
 */
import { TorchStft } from '../dsp/stft.js';

/** Bins audio-separator zeroes before the network (`spek[:, :, :3, :] *= 0`). */
const ZEROED_BINS = 3;

export class MdxSpectrum {
  /** Samples per channel of a chunk (and of the inverse's output). */
  readonly length: number;
  private readonly stft: TorchStft;
  /** One channel's real and imaginary planes [bins, frames], the layout TorchStft works in. */
  private readonly real: Float32Array;
  private readonly imag: Float32Array;

  constructor(
    readonly nFft: number,
    readonly hop: number,
    readonly dimF: number,
    readonly frames: number,
  ) {
    this.length = hop * (frames - 1);
    this.stft = new TorchStft({ nFft, hop, winLength: nFft, window: 'hann', normalized: false, float32Window: true }, this.length);
    this.real = new Float32Array(this.stft.bins * frames);
    this.imag = new Float32Array(this.stft.bins * frames);
  }

  /** Values in one [4, dim_f, frames] tensor. */
  get size(): number {
    return 4 * this.dimF * this.frames;
  }

  /** Planar stereo chunk [2, length] → the network's input [4, dim_f, frames] ([L re, L im, R re, R im]). */
  analyze(chunk: Float32Array): Float32Array {
    const { dimF, frames, length, real, imag } = this;
    const spec = new Float32Array(this.size);
    const plane = dimF * frames;
    for (let c = 0; c < 2; c++) {
      this.stft.analyze(chunk.subarray(c * length, (c + 1) * length), real, imag);
      // Bins below ZEROED_BINS stay zero; the planes share the [bins, frames] order up to dim_f.
      const from = ZEROED_BINS * frames;
      spec.set(real.subarray(from, plane), 2 * c * plane + from);
      spec.set(imag.subarray(from, plane), (2 * c + 1) * plane + from);
    }
    return spec;
  }

  /** The network's output [4, dim_f, frames] → planar stereo [2, length], bins from dim_f up zero, as torch.istft. */
  synthesize(spec: Float32Array): Float32Array {
    const { dimF, frames, length, real, imag } = this;
    const plane = dimF * frames;
    const out = new Float32Array(2 * length);
    real.fill(0);
    imag.fill(0);
    for (let c = 0; c < 2; c++) {
      real.set(spec.subarray(2 * c * plane, (2 * c + 1) * plane));
      imag.set(spec.subarray((2 * c + 1) * plane, (2 * c + 2) * plane));
      this.stft.synthesize(real, imag, out.subarray(c * length, (c + 1) * length));
    }
    return out;
  }
}
