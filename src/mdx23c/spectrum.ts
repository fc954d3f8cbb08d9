/**
 * MDX23C's STFT side, outside the ONNX graph, for one chunk length: torch.stft (centred,
 * reflect padding, periodic Hann of n_fft, not normalised) cut to the lowest dim_f bins, laid
 * out as the network's input; and back, bins from dim_f up zero, torch.istft (window-square
 * normalised overlap-add, hop·(frames − 1) samples).
 *
 * The official code views the spectrum as channels (c, re/im) × [dim_f, frames], splits dim_f
 * into `num_subbands` channel groups (cac2cws) and transposes to [frames, bins] before the
 * U-Net. The graph here works in that transposed layout throughout (its 1×1 convs and norms do
 * not care), so a spectrum plane is [channel = (c · 2 + ri) · k + j, frame t, bin f'] with the
 * bin dim_f/k · j + f'.
 */
import { Fft } from '../dsp/fft.js';
import { StemsplitError } from '../errors.js';
import type { Mdx23cConfig } from './config.js';

export class ChunkSpectrum {
  readonly frames: number;
  /** Bins per sub-band (the graph's last axis). */
  readonly subbandBins: number;
  /** Channels of the graph's input: channels · 2 · num_subbands. */
  readonly inputChannels: number;
  private readonly fft: Fft;
  private readonly window: Float64Array;
  private readonly inverseEnvelope: Float64Array;
  private readonly re: Float64Array;
  private readonly im: Float64Array;
  private readonly sum: Float64Array;
  /** Values of one (channel, re/im): its num_subbands planes of [frames, subbandBins]. */
  private readonly partStride: number;
  /** A bin's place within those planes at frame 0: its sub-band's plane, then its bin in the sub-band. */
  private readonly binOffset: Int32Array;

  constructor(
    private readonly config: Mdx23cConfig,
    private readonly length: number,
  ) {
    const { nFft, hop, dimF, numSubbands, channels } = config;
    try {
      this.fft = new Fft(nFft);
    } catch (error) {
      throw new StemsplitError('MODEL_INVALID', `MDX23C with n_fft ${nFft}: ${(error as Error).message}`);
    }
    this.frames = 1 + Math.floor(length / hop);
    this.subbandBins = dimF / numSubbands;
    this.inputChannels = channels * 2 * numSubbands;
    this.partStride = numSubbands * this.frames * this.subbandBins;
    this.binOffset = Int32Array.from({ length: dimF }, (_, bin) => {
      const band = Math.floor(bin / this.subbandBins);
      return band * this.frames * this.subbandBins + (bin - band * this.subbandBins);
    });
    this.window = new Float64Array(nFft);
    for (let n = 0; n < nFft; n++) this.window[n] = 0.5 - 0.5 * Math.cos((2 * Math.PI * n) / nFft);
    this.inverseEnvelope = this.envelope();
    this.re = new Float64Array(nFft);
    this.im = new Float64Array(nFft);
    this.sum = new Float64Array(length);
  }

  /** Where (channel, re/im, frame, bin) sits in a [inputChannels, frames, subbandBins] plane set. */
  private offset(channel: number, part: 0 | 1, frame: number, bin: number): number {
    return (channel * 2 + part) * this.partStride + frame * this.subbandBins + (this.binOffset[bin] as number);
  }

  /** Planar chunk [channels, length] → the graph input [inputChannels, frames, subbandBins]. Two frames share one complex FFT. */
  analyze(chunk: Float32Array): Float32Array {
    const { nFft, hop, dimF, channels } = this.config;
    const { re, im, window, frames, length } = this;
    const out = new Float32Array(this.inputChannels * frames * this.subbandBins);
    const half = nFft / 2;
    for (let c = 0; c < channels; c++) {
      const signal = chunk.subarray(c * length, (c + 1) * length);
      for (let t = 0; t < frames; t += 2) {
        const second = t + 1 < frames;
        for (let n = 0; n < nFft; n++) {
          const w = window[n] as number;
          re[n] = w * (signal[reflect(t * hop + n - half, length)] as number);
          im[n] = second ? w * (signal[reflect((t + 1) * hop + n - half, length)] as number) : 0;
        }
        this.fft.forward(re, im);
        // z = a + i·b of two real frames: A[k] = (Z[k] + conj Z[−k]) / 2, B[k] = (Z[k] − conj Z[−k]) / 2i.
        for (let k = 0; k < dimF; k++) {
          const mirror = k === 0 ? 0 : nFft - k;
          const zr = re[k] as number;
          const zi = im[k] as number;
          const mr = re[mirror] as number;
          const mi = im[mirror] as number;
          out[this.offset(c, 0, t, k)] = 0.5 * (zr + mr);
          out[this.offset(c, 1, t, k)] = 0.5 * (zi - mi);
          if (second) {
            out[this.offset(c, 0, t + 1, k)] = 0.5 * (zi + mi);
            out[this.offset(c, 1, t + 1, k)] = -0.5 * (zr - mr);
          }
        }
      }
    }
    return out;
  }

  /** The graph output [stems · inputChannels, frames, subbandBins] → audio [stems, channels, length]. */
  synthesize(spectra: Float32Array, stems: number): Float32Array {
    const { channels } = this.config;
    const planes = this.inputChannels * this.frames * this.subbandBins;
    const out = new Float32Array(stems * channels * this.length);
    for (let s = 0; s < stems; s++) {
      const spectrum = spectra.subarray(s * planes, (s + 1) * planes);
      for (let c = 0; c < channels; c++) this.inverse(spectrum, c, out.subarray((s * channels + c) * this.length, (s * channels + c + 1) * this.length));
    }
    return out;
  }

  /** torch.istft of one channel into `target`, bins from dim_f up zero (two frames per complex FFT). */
  private inverse(spectrum: Float32Array, channel: number, target: Float32Array): void {
    const { nFft, hop, dimF } = this.config;
    const { re, im, window, frames, sum } = this;
    const half = nFft / 2;
    const scale = 1 / nFft;
    sum.fill(0);
    for (let t = 0; t < frames; t += 2) {
      const second = t + 1 < frames;
      re.fill(0);
      im.fill(0);
      for (let k = 0; k < dimF; k++) {
        // c2r ignores the imaginary part of DC and Nyquist.
        const edge = k === 0 || k === half;
        const ar = spectrum[this.offset(channel, 0, t, k)] as number;
        const ai = edge ? 0 : (spectrum[this.offset(channel, 1, t, k)] as number);
        const br = second ? (spectrum[this.offset(channel, 0, t + 1, k)] as number) : 0;
        const bi = second && !edge ? (spectrum[this.offset(channel, 1, t + 1, k)] as number) : 0;
        re[k] = ar - bi;
        im[k] = ai + br;
        if (!edge) {
          re[nFft - k] = ar + bi;
          im[nFft - k] = br - ai;
        }
      }
      this.fft.inverse(re, im);
      for (let n = 0; n < nFft; n++) {
        const w = (window[n] as number) * scale;
        const first = t * hop + n - half;
        if (first >= 0 && first < sum.length) sum[first] = (sum[first] as number) + (re[n] as number) * w;
        const next = first + hop;
        if (second && next >= 0 && next < sum.length) sum[next] = (sum[next] as number) + (im[n] as number) * w;
      }
    }
    for (let i = 0; i < target.length; i++) target[i] = (sum[i] as number) * (this.inverseEnvelope[i] as number);
  }

  /** 1 / Σ window² at each output sample (after the n_fft/2 trim). */
  private envelope(): Float64Array {
    const { nFft, hop } = this.config;
    const out = new Float64Array(this.length);
    for (let t = 0; t < this.frames; t++) {
      for (let n = 0; n < nFft; n++) {
        const at = t * hop + n - nFft / 2;
        if (at >= 0 && at < out.length) out[at] = (out[at] as number) + (this.window[n] as number) ** 2;
      }
    }
    for (let i = 0; i < out.length; i++) {
      // torch.istft refuses the same (its NOLA check): some samples would be divided by zero.
      if ((out[i] as number) < 1e-11) throw new StemsplitError('MODEL_INVALID', `hop_length ${hop} leaves gaps between n_fft ${nFft} Hann windows; the inverse STFT cannot be taken`);
      out[i] = 1 / (out[i] as number);
    }
    return out;
  }
}

/** Reflect padding index (the edge sample not repeated). */
function reflect(index: number, length: number): number {
  if (index < 0) return -index;
  if (index >= length) return 2 * (length - 1) - index;
  return index;
}
