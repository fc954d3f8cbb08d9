/**
 * The RoFormer's spectrogram side, outside the ONNX graph, for one fixed chunk length:
 * torch.stft (centred, reflect padding, periodic Hann of win_length centred in n_fft), the
 * band-ordered feature rows the graph reads, the masks applied back (Mel-Band averages the
 * masks of overlapping bands), zero_dc, and torch.istft (window-square normalised overlap-add).
 *
 * The transforms are src/dsp/stft.ts; spectra here are frame-major: value (t, row, re/im) at ((t · rows) + row) · 2 + ri, where
 * row = bin · channels + channel, the `b (f s) t c` order of the model.
 */
import { TorchStft } from '../../dsp/stft.js';
import type { BandBins } from './bands.js';
import type { RoformerConfig } from './config.js';

export class ChunkSpectrum {
  readonly frames: number;
  readonly rows: number;
  /** Samples per channel the inverse returns. */
  readonly outputLength: number;
  /** Feature entry e reads spectrum row entryRow[e]. */
  private readonly entryRow: Int32Array;
  /** Mel-Band: 1 / (bands holding the row's bin); BS-RoFormer: 1. */
  private readonly rowWeight: Float64Array;
  private readonly bins: number;
  private readonly stft: TorchStft;
  /** One channel's real and imaginary planes [bins, frames], the layout TorchStft works in. */
  private readonly real: Float64Array;
  private readonly imag: Float64Array;

  constructor(
    private readonly config: RoformerConfig,
    private readonly length: number,
    bands: BandBins,
  ) {
    const { nFft, hop, winLength, channels } = config;
    const outputLength = config.type === 'bs_roformer' || config.matchInputLength ? length : undefined;
    this.stft = new TorchStft({ nFft, hop, winLength, window: 'hann', normalized: config.stftNormalized, outputLength }, length);
    this.bins = this.stft.bins;
    this.frames = this.stft.frames;
    this.rows = this.bins * channels;
    this.outputLength = this.stft.outputLength;
    const entries: number[] = [];
    const count = new Float64Array(this.bins);
    for (const band of bands) {
      for (const bin of band) {
        count[bin] = (count[bin] as number) + 1;
        for (let c = 0; c < channels; c++) entries.push(bin * channels + c);
      }
    }
    this.entryRow = Int32Array.from(entries);
    this.rowWeight = new Float64Array(this.rows);
    for (let row = 0; row < this.rows; row++) this.rowWeight[row] = 1 / Math.max(count[Math.floor(row / channels)] as number, 1e-8);
    this.real = new Float64Array(this.bins * this.frames);
    this.imag = new Float64Array(this.bins * this.frames);
  }

  /** Values in one feature row (frame): the graph's `features` width. */
  get featureWidth(): number {
    return 2 * this.entryRow.length;
  }

  /** Planar chunk [channels, length] → spectrum [frames, rows, 2]. */
  analyze(chunk: Float32Array): Float32Array {
    const { channels } = this.config;
    const { frames, rows, bins, length } = this;
    const spectrum = new Float32Array(frames * rows * 2);
    const real = new Float32Array(bins * frames);
    const imag = new Float32Array(bins * frames);
    for (let c = 0; c < channels; c++) {
      this.stft.analyze(chunk.subarray(c * length, (c + 1) * length), real, imag);
      for (let k = 0; k < bins; k++) {
        for (let t = 0; t < frames; t++) {
          const at = (t * rows + k * channels + c) * 2;
          spectrum[at] = real[k * frames + t] as number;
          spectrum[at + 1] = imag[k * frames + t] as number;
        }
      }
    }
    return spectrum;
  }

  /** The graph input [frames, featureWidth]: each band's entries in order. */
  features(spectrum: Float32Array): Float32Array {
    const { entryRow, frames, rows } = this;
    const width = this.featureWidth;
    const out = new Float32Array(frames * width);
    for (let t = 0; t < frames; t++) {
      for (let e = 0; e < entryRow.length; e++) {
        const from = (t * rows + (entryRow[e] as number)) * 2;
        out[t * width + 2 * e] = spectrum[from] as number;
        out[t * width + 2 * e + 1] = spectrum[from + 1] as number;
      }
    }
    return out;
  }

  /**
   * Masks [stems, frames, featureWidth] → audio [stems, channels, outputLength]: the masks of
   * each row summed (and averaged over overlapping bands), times the spectrum, DC zeroed
   * when the model does, then the inverse STFT.
   */
  synthesize(spectrum: Float32Array, masks: Float32Array, stems: number): Float32Array {
    const { frames, rows, entryRow, rowWeight } = this;
    const { channels } = this.config;
    const width = this.featureWidth;
    const out = new Float32Array(stems * channels * this.outputLength);
    const summed = new Float64Array(frames * rows * 2);
    for (let s = 0; s < stems; s++) {
      summed.fill(0);
      for (let t = 0; t < frames; t++) {
        const maskRow = (s * frames + t) * width;
        for (let e = 0; e < entryRow.length; e++) {
          const at = (t * rows + (entryRow[e] as number)) * 2;
          summed[at] = (summed[at] as number) + (masks[maskRow + 2 * e] as number);
          summed[at + 1] = (summed[at + 1] as number) + (masks[maskRow + 2 * e + 1] as number);
        }
      }
      for (let t = 0; t < frames; t++) {
        for (let row = 0; row < rows; row++) {
          const at = (t * rows + row) * 2;
          const w = rowWeight[row] as number;
          const mr = Math.fround((summed[at] as number) * w);
          const mi = Math.fround((summed[at + 1] as number) * w);
          const xr = spectrum[at] as number;
          const xi = spectrum[at + 1] as number;
          summed[at] = xr * mr - xi * mi;
          summed[at + 1] = xr * mi + xi * mr;
        }
      }
      if (this.config.zeroDc) for (let t = 0; t < frames; t++) for (let c = 0; c < channels; c++) summed.fill(0, (t * rows + c) * 2, (t * rows + c) * 2 + 2);
      for (let c = 0; c < channels; c++)
        this.inverse(summed, c, out.subarray((s * channels + c) * this.outputLength, (s * channels + c + 1) * this.outputLength));
    }
    return out;
  }

  /** torch.istft of one channel of a [frames, rows, 2] spectrum into `target`. */
  private inverse(spectrum: Float64Array, channel: number, target: Float32Array): void {
    const { channels } = this.config;
    const { frames, rows, bins, real, imag } = this;
    for (let k = 0; k < bins; k++) {
      for (let t = 0; t < frames; t++) {
        const at = (t * rows + k * channels + channel) * 2;
        real[k * frames + t] = spectrum[at] as number;
        imag[k * frames + t] = spectrum[at + 1] as number;
      }
    }
    this.stft.synthesize(real, imag, target);
  }
}
