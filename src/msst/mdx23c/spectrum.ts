/**
 * MDX23C's STFT side, outside the ONNX graph, for one chunk length: torch.stft (centred,
 * reflect padding, periodic Hann of n_fft, not normalised) cut to the lowest dim_f bins, laid
 * out as the network's input; and back, bins from dim_f up zero, torch.istft (window-square
 * normalised overlap-add, hop·(frames − 1) samples). The transforms are src/dsp/stft.ts; this
 * file only crops and lays out.
 *
 * The official code views the spectrum as channels (c, re/im) × [dim_f, frames], splits dim_f
 * into `num_subbands` channel groups (cac2cws) and transposes to [frames, bins] before the
 * U-Net. The graph here works in that transposed layout throughout (its 1×1 convs and norms do
 * not care), so a spectrum plane is [channel = (c · 2 + ri) · k + j, frame t, bin f'] with the
 * bin dim_f/k · j + f'.
 */
import { TorchStft } from '../../dsp/stft.js';
import { StemsplitError } from '../../errors.js';
import type { Mdx23cConfig } from './config.js';

export class ChunkSpectrum {
  readonly frames: number;
  /** Bins per sub-band (the graph's last axis). */
  readonly subbandBins: number;
  /** Channels of the graph's input: channels · 2 · num_subbands. */
  readonly inputChannels: number;
  private readonly stft: TorchStft;
  /** One channel's real and imaginary planes [bins, frames], the layout TorchStft works in. */
  private readonly real: Float32Array;
  private readonly imag: Float32Array;
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
      this.stft = new TorchStft({ nFft, hop, winLength: nFft, window: 'hann', normalized: false, outputLength: length }, length);
    } catch (error) {
      throw new StemsplitError('MODEL_INVALID', `MDX23C with n_fft ${nFft}: ${(error as Error).message}`);
    }
    // torch.istft refuses the same (its NOLA check): some samples would be divided by zero.
    if (this.stft.hasGaps)
      throw new StemsplitError('MODEL_INVALID', `hop_length ${hop} leaves gaps between n_fft ${nFft} Hann windows; the inverse STFT cannot be taken`);
    this.frames = this.stft.frames;
    this.subbandBins = dimF / numSubbands;
    this.inputChannels = channels * 2 * numSubbands;
    this.partStride = numSubbands * this.frames * this.subbandBins;
    this.binOffset = Int32Array.from({ length: dimF }, (_, bin) => {
      const band = Math.floor(bin / this.subbandBins);
      return band * this.frames * this.subbandBins + (bin - band * this.subbandBins);
    });
    this.real = new Float32Array(this.stft.bins * this.frames);
    this.imag = new Float32Array(this.stft.bins * this.frames);
  }

  /** Where (channel, re/im, frame, bin) sits in a [inputChannels, frames, subbandBins] plane set. */
  private offset(channel: number, part: 0 | 1, frame: number, bin: number): number {
    return (channel * 2 + part) * this.partStride + frame * this.subbandBins + (this.binOffset[bin] as number);
  }

  /** Planar chunk [channels, length] → the graph input [inputChannels, frames, subbandBins]: the lowest dim_f bins. */
  analyze(chunk: Float32Array): Float32Array {
    const { dimF, channels } = this.config;
    const { real, imag, frames, length } = this;
    const out = new Float32Array(this.inputChannels * frames * this.subbandBins);
    for (let c = 0; c < channels; c++) {
      this.stft.analyze(chunk.subarray(c * length, (c + 1) * length), real, imag);
      for (let k = 0; k < dimF; k++) {
        for (let t = 0; t < frames; t++) {
          out[this.offset(c, 0, t, k)] = real[k * frames + t] as number;
          out[this.offset(c, 1, t, k)] = imag[k * frames + t] as number;
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

  /** torch.istft of one channel into `target`, bins from dim_f up zero. */
  private inverse(spectrum: Float32Array, channel: number, target: Float32Array): void {
    const { dimF } = this.config;
    const { real, imag, frames } = this;
    real.fill(0);
    imag.fill(0);
    for (let k = 0; k < dimF; k++) {
      for (let t = 0; t < frames; t++) {
        real[k * frames + t] = spectrum[this.offset(channel, 0, t, k)] as number;
        imag[k * frames + t] = spectrum[this.offset(channel, 1, t, k)] as number;
      }
    }
    this.stft.synthesize(real, imag, target);
  }
}
