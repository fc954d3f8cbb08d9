/**
 * The RoFormer's spectrogram side, outside the ONNX graph, for one fixed chunk length:
 * torch.stft (centred, reflect padding, periodic Hann of win_length centred in n_fft), the
 * band-ordered feature rows the graph reads, the masks applied back (Mel-Band averages the
 * masks of overlapping bands), zero_dc, and torch.istft (window-square normalised overlap-add).
 *
 * Spectra are frame-major: value (t, row, re/im) at ((t · rows) + row) · 2 + ri, where
 * row = bin · channels + channel, the `b (f s) t c` order of the model.
 */
import { Fft } from '../dsp/fft.js';
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
  private readonly fft: Fft;
  private readonly window: Float64Array;
  private readonly inverseEnvelope: Float64Array;
  private readonly re: Float64Array;
  private readonly im: Float64Array;
  private readonly forwardScale: number;
  private readonly inverseScale: number;

  constructor(
    private readonly config: RoformerConfig,
    private readonly length: number,
    bands: BandBins,
  ) {
    const { nFft, hop, channels } = config;
    this.bins = nFft / 2 + 1;
    this.frames = 1 + Math.floor(length / hop);
    this.rows = this.bins * channels;
    this.outputLength = config.type === 'bs_roformer' || config.matchInputLength ? length : hop * (this.frames - 1);
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
    this.fft = new Fft(nFft);
    this.window = paddedHann(config.winLength, nFft);
    this.inverseEnvelope = this.envelope();
    this.re = new Float64Array(nFft);
    this.im = new Float64Array(nFft);
    this.forwardScale = config.stftNormalized ? 1 / Math.sqrt(nFft) : 1;
    this.inverseScale = (config.stftNormalized ? Math.sqrt(nFft) : 1) / nFft;
  }

  /** Values in one feature row (frame): the graph's `features` width. */
  get featureWidth(): number {
    return 2 * this.entryRow.length;
  }

  /** Planar chunk [channels, length] → spectrum [frames, rows, 2]. Two frames share one complex FFT. */
  analyze(chunk: Float32Array): Float32Array {
    const { nFft, hop, channels } = this.config;
    const { re, im, window, frames, rows, bins, length } = this;
    const spectrum = new Float32Array(frames * rows * 2);
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
        for (let k = 0; k < bins; k++) {
          const mirror = k === 0 ? 0 : nFft - k;
          const zr = re[k] as number;
          const zi = im[k] as number;
          const mr = re[mirror] as number;
          const mi = im[mirror] as number;
          const at = ((t * rows + k * channels + c) << 1) >>> 0;
          spectrum[at] = 0.5 * (zr + mr) * this.forwardScale;
          spectrum[at + 1] = 0.5 * (zi - mi) * this.forwardScale;
          if (second) {
            const next = (((t + 1) * rows + k * channels + c) << 1) >>> 0;
            spectrum[next] = 0.5 * (zi + mi) * this.forwardScale;
            spectrum[next + 1] = -0.5 * (zr - mr) * this.forwardScale;
          }
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
      for (let c = 0; c < channels; c++) this.inverse(summed, c, out.subarray((s * channels + c) * this.outputLength, (s * channels + c + 1) * this.outputLength));
    }
    return out;
  }

  /** torch.istft of one channel of a [frames, rows, 2] spectrum into `target` (two frames per complex FFT). */
  private inverse(spectrum: Float64Array, channel: number, target: Float32Array): void {
    const { nFft, hop, channels } = this.config;
    const { re, im, window, frames, rows, bins } = this;
    const half = nFft / 2;
    const sum = new Float64Array(target.length);
    for (let t = 0; t < frames; t += 2) {
      const second = t + 1 < frames;
      for (let k = 0; k < bins; k++) {
        const a = (t * rows + k * channels + channel) * 2;
        const b = ((t + 1) * rows + k * channels + channel) * 2;
        const edge = k === 0 || k === bins - 1; // c2r ignores the imaginary part of DC and Nyquist
        const ar = spectrum[a] as number;
        const ai = edge ? 0 : (spectrum[a + 1] as number);
        const br = second ? (spectrum[b] as number) : 0;
        const bi = second && !edge ? (spectrum[b + 1] as number) : 0;
        re[k] = ar - bi;
        im[k] = ai + br;
        if (!edge) {
          re[nFft - k] = ar + bi;
          im[nFft - k] = br - ai;
        }
      }
      this.fft.inverse(re, im);
      for (let n = 0; n < nFft; n++) {
        const w = (window[n] as number) * this.inverseScale;
        const first = t * hop + n - half;
        if (first >= 0 && first < sum.length) sum[first] = (sum[first] as number) + (re[n] as number) * w;
        const next = first + hop;
        if (second && next >= 0 && next < sum.length) sum[next] = (sum[next] as number) + (im[n] as number) * w;
      }
    }
    for (let i = 0; i < target.length; i++) target[i] = (sum[i] as number) * (this.inverseEnvelope[i] as number);
  }

  /** 1 / Σ window² at each output sample (after the n_fft/2 trim); 0 where no frame reaches. */
  private envelope(): Float64Array {
    const { nFft, hop } = this.config;
    const out = new Float64Array(this.outputLength);
    for (let t = 0; t < this.frames; t++) {
      for (let n = 0; n < nFft; n++) {
        const at = t * hop + n - nFft / 2;
        if (at >= 0 && at < out.length) out[at] = (out[at] as number) + (this.window[n] as number) ** 2;
      }
    }
    for (let i = 0; i < out.length; i++) out[i] = (out[i] as number) > 1e-11 ? 1 / (out[i] as number) : 0;
    return out;
  }
}

/** torch.hann_window(win) (periodic), zero-padded to n_fft with the window centred, as torch.stft does. */
function paddedHann(win: number, nFft: number): Float64Array {
  const out = new Float64Array(nFft);
  const left = Math.floor((nFft - win) / 2);
  for (let n = 0; n < win; n++) out[left + n] = 0.5 - 0.5 * Math.cos((2 * Math.PI * n) / win);
  return out;
}

/** Reflect padding index (the edge sample not repeated), folded as often as needed. */
function reflect(index: number, length: number): number {
  if (length === 1) return 0;
  const period = 2 * (length - 1);
  let i = index % period;
  if (i < 0) i += period;
  return i < length ? i : period - i;
}
