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
import { Fft, silentParts, unpackTwoReal } from '../dsp/fft.js';
import { periodicHann } from '../dsp/window.js';

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
  /** The window times the inverse transform's 1/√nfft. */
  private readonly synthesisWindow: Float64Array;
  /** Overlap-added frames of one stereo source before the envelope division ([2, length]). */
  private readonly overlapAdd: Float64Array;
  private readonly re: Float64Array;
  private readonly im: Float64Array;
  /** One bin of the two spectra `unpackTwoReal` separates. */
  private readonly bin: Float64Array;
  /** Four spectrogram planes frame-major ([frames, freqs]): per-frame reads and writes stay contiguous. */
  private readonly frameMajor: Float32Array;

  /**
   * `hybridOld`: HDemucs' MDX-era padding bug (`hybrid_old`): zeros rather than reflection
   * around the signal, and the inverse read from the iSTFT's start rather than 3/2 hop in.
   */
  constructor(
    nfft: number,
    length: number,
    private readonly options: { readonly hybridOld?: boolean } = {},
  ) {
    this.nfft = nfft;
    this.hop = nfft / 4;
    this.length = length;
    this.freqs = nfft / 2;
    this.frames = Math.ceil(length / this.hop);
    this.fft = new Fft(nfft);
    this.window = periodicHann(nfft);
    this.inverseEnvelope = this.envelope();
    this.re = new Float64Array(nfft);
    this.im = new Float64Array(nfft);
    this.bin = new Float64Array(4);
    this.frameMajor = new Float32Array(4 * this.freqs * this.frames);
    this.synthesisWindow = this.window.map((w) => w / Math.sqrt(nfft));
    this.overlapAdd = new Float64Array(2 * length);
  }

  /** Offset of frame t's first sample in the segment: t·hop − 3/2·hop. */
  private frameStart(frame: number): number {
    return frame * this.hop - (this.hop / 2) * 3;
  }

  /** Where frame t's inverse lands in the output: as in the analysis, or from t·hop with `hybridOld`. */
  private synthesisStart(frame: number): number {
    return this.options.hybridOld === true ? frame * this.hop : this.frameStart(frame);
  }

  /**
   * One channel as `_spec` pads it (`pad1d`): 3/2 hop on the left, up to whole hops plus 3/2 hop
   * on the right, reflected (zeros with `hybridOld`). A signal no longer than the padding is first
   * zero-padded just enough for the reflection, as pad1d does for short inputs (a short last chunk).
   */
  private padded(signal: Float32Array, channelOffset: number): Float32Array {
    const { length } = this;
    const left = -this.frameStart(0);
    const right = left + this.frames * this.hop - length;
    const channel = signal.subarray(channelOffset, channelOffset + length);
    const out = new Float32Array(length + left + right);
    if (this.options.hybridOld === true) {
      out.set(channel, left);
      return out;
    }
    let core = channel;
    let reflectLeft = left;
    const longest = Math.max(left, right);
    if (length <= longest) {
      const extra = longest - length + 1;
      const extraRight = Math.min(right, extra);
      core = new Float32Array(length + extra);
      core.set(channel, extra - extraRight);
      reflectLeft = left - (extra - extraRight);
    }
    const n = core.length;
    for (let i = 0; i < out.length; i++) out[i] = core[reflect(i - reflectLeft, n)] as number;
    return out;
  }

  /**
   * Stereo planar signal [2, length] → spectrogram [4, freqs, frames] (CaC layout),
   * normalized as HTDemucs normalizes its frequency-branch input: (z − mean) / (eps + std)
   * over all values (std unbiased). Returns the statistics, to undo it on the output.
   * Both channels go through one complex FFT (left as real part, right as imaginary).
   */
  analyze(signal: Float32Array, out: Float32Array, eps: number, normalize = true): Normalization {
    const { nfft, length, freqs, frames, re, im, window, frameMajor } = this;
    const scale = 1 / Math.sqrt(nfft);
    const bin = this.bin;
    const plane = freqs * frames;
    const left = this.padded(signal, 0);
    const right = this.padded(signal, length);
    for (let t = 0; t < frames; t++) {
      // Frame t covers padded samples t·hop … t·hop + nfft.
      const start = t * this.hop;
      for (let n = 0; n < nfft; n++) {
        const w = window[n] as number;
        re[n] = w * (left[start + n] as number);
        im[n] = w * (right[start + n] as number);
      }
      const silent = silentParts(re, im);
      this.fft.forward(re, im);
      const row = t * freqs;
      for (let k = 0; k < freqs; k++) {
        unpackTwoReal(re, im, k, bin, silent);
        frameMajor[row + k] = scale * (bin[0] as number);
        frameMajor[plane + row + k] = scale * (bin[1] as number);
        frameMajor[2 * plane + row + k] = scale * (bin[2] as number);
        frameMajor[3 * plane + row + k] = scale * (bin[3] as number);
      }
    }
    const stats = normalize ? meanStd(frameMajor) : { mean: 0, std: 1 - eps };
    const gain = 1 / (eps + stats.std);
    for (let p = 0; p < 4; p++) transpose(frameMajor, p * plane, frames, freqs, out, p * plane, gain, -stats.mean * gain);
    return stats;
  }

  /**
   * As `analyze`, for a network that sees magnitudes (HDemucs without CaC): [2, freqs, frames]
   * of |Z| normalized into `out`, and the mixture's spectrogram in CaC layout into `mixture`
   * (unnormalized, for the phase the output magnitudes take).
   */
  analyzeMagnitude(signal: Float32Array, out: Float32Array, mixture: Float32Array, eps: number): Normalization {
    this.analyze(signal, mixture, 0, false);
    const plane = this.freqs * this.frames;
    const magnitudes = new Float32Array(2 * plane);
    for (let c = 0; c < 2; c++) {
      for (let i = 0; i < plane; i++) {
        magnitudes[c * plane + i] = Math.hypot(mixture[2 * c * plane + i] as number, mixture[(2 * c + 1) * plane + i] as number);
      }
    }
    const stats = meanStd(magnitudes);
    const gain = 1 / (eps + stats.std);
    for (let i = 0; i < magnitudes.length; i++) out[i] = ((magnitudes[i] as number) - stats.mean) * gain;
    return stats;
  }

  /**
   * One source's output: `wave` [2, length] de-normalized by `waveStats` plus the inverse
   * STFT of `spec` [4, freqs, frames] (CaC) de-normalized by `specStats`, written to `out`
   * [2, length] (all three at their offsets). Both channels come out of one complex inverse FFT.
   */
  synthesize(source: SourceOutput, out: Float32Array, outOffset: number): void {
    const { nfft, length, freqs, frames, re, im, synthesisWindow, inverseEnvelope, frameMajor, overlapAdd: ola } = this;
    const { spec, wave, specStats, waveStats } = source;
    const plane = freqs * frames;
    const phases = spec.phases;
    const rowsPerPhase = freqs / phases;
    for (let p = 0; p < 4; p++) {
      const q = spec.firstPlane + p;
      // Frequency f lives in phase f mod P, row ⌊f / P⌋.
      const rowStart = (f: number): number => (((f % phases) * spec.planes + q) * rowsPerPhase + Math.floor(f / phases)) * frames;
      transposeRows(spec.data, rowStart, freqs, frames, frameMajor, p * plane, specStats.std, specStats.mean);
    }
    ola.fill(0);
    for (let t = 0; t < frames; t++) {
      // Z = L + i·R over the full Hermitian-extended spectrum; the Nyquist bin is zero and,
      // as in a C2R transform, the imaginary parts of the DC bins are ignored.
      const row = t * freqs;
      re[0] = frameMajor[row] as number;
      im[0] = frameMajor[2 * plane + row] as number;
      re[freqs] = 0;
      im[freqs] = 0;
      for (let k = 1; k < freqs; k++) {
        const at = row + k;
        const lr = frameMajor[at] as number;
        const li = frameMajor[at + plane] as number;
        const rr = frameMajor[at + 2 * plane] as number;
        const ri = frameMajor[at + 3 * plane] as number;
        re[k] = lr - ri;
        im[k] = li + rr;
        re[nfft - k] = lr + ri;
        im[nfft - k] = rr - li;
      }
      this.fft.inverse(re, im);
      const start = this.synthesisStart(t);
      const from = Math.max(0, -start);
      const to = Math.min(nfft, length - start);
      for (let n = from; n < to; n++) {
        const w = synthesisWindow[n] as number;
        ola[start + n] = (ola[start + n] as number) + w * (re[n] as number);
        ola[length + start + n] = (ola[length + start + n] as number) + w * (im[n] as number);
      }
    }
    const { std, mean } = waveStats;
    const { phases: wavePhases, planes: wavePlanes, rows: waveRows, data: waveData } = wave;
    for (let c = 0; c < 2; c++) {
      const q = wave.firstPlane + c;
      const target = outOffset + c * length;
      const accumulated = c * length;
      // Sample j = P·g + i lives in phase i, row g.
      for (let i = 0; i < wavePhases; i++) {
        const from = (i * wavePlanes + q) * waveRows;
        for (let g = 0, j = i; g < waveRows && j < length; g++, j += wavePhases) {
          out[target + j] = (waveData[from + g] as number) * std + mean + (inverseEnvelope[j] as number) * (ola[accumulated + j] as number);
        }
      }
    }
  }

  /** Summed squared window at each output sample, over all frames torch.istft sees (2 zero frames each side). */
  private envelope(): Float64Array {
    const { nfft, length, frames, window } = this;
    const sum = new Float64Array(length);
    for (let t = -2; t < frames + 2; t++) {
      const start = this.synthesisStart(t);
      for (let n = Math.max(0, -start); n < nfft && start + n < length; n++) {
        sum[start + n] = (sum[start + n] as number) + (window[n] as number) ** 2;
      }
    }
    return sum.map((value) => 1 / value);
  }
}

const TRANSPOSE_BLOCK = 32;

/** Mean and unbiased standard deviation of all values, accumulated in float64. */
export interface Normalization {
  readonly mean: number;
  readonly std: number;
}

/**
 * A graph output in phase layout [phases, planes, rows(, frames)]: row r of a plane is
 * phase r mod phases, row ⌊r / phases⌋ (one phase is the plain [planes, rows, ...]).
 */
export interface PhasedPlanes {
  readonly data: Float32Array;
  readonly phases: number;
  readonly planes: number;
  /** Rows per phase. */
  readonly rows: number;
  /** This source's first plane. */
  readonly firstPlane: number;
}

/** What `synthesize` combines for one source. */
export interface SourceOutput {
  /** The spectrogram branch: 4 CaC planes of freqs × frames. */
  readonly spec: PhasedPlanes;
  readonly specStats: Normalization;
  /** The time branch: 2 planes of samples. */
  readonly wave: PhasedPlanes;
  readonly waveStats: Normalization;
}

export function meanStd(values: Float32Array): Normalization {
  let sum = 0;
  for (let i = 0; i < values.length; i++) sum += values[i] as number;
  const mean = sum / values.length;
  let squares = 0;
  for (let i = 0; i < values.length; i++) squares += ((values[i] as number) - mean) ** 2;
  return { mean, std: Math.sqrt(squares / (values.length - 1)) };
}

/** dst[c·rows + r] = src[r·cols + c]·scale + shift for a rows×cols block of each array, in cache-sized tiles. */
function transpose(src: Float32Array, srcOffset: number, rows: number, cols: number, dst: Float32Array, dstOffset: number, scale = 1, shift = 0): void {
  transposeRows(src, (r) => srcOffset + r * cols, rows, cols, dst, dstOffset, scale, shift);
}

/** As `transpose`, with source row r starting at rowStart(r). */
function transposeRows(
  src: Float32Array,
  rowStart: (row: number) => number,
  rows: number,
  cols: number,
  dst: Float32Array,
  dstOffset: number,
  scale = 1,
  shift = 0,
): void {
  for (let r0 = 0; r0 < rows; r0 += TRANSPOSE_BLOCK) {
    const r1 = Math.min(rows, r0 + TRANSPOSE_BLOCK);
    for (let c0 = 0; c0 < cols; c0 += TRANSPOSE_BLOCK) {
      const c1 = Math.min(cols, c0 + TRANSPOSE_BLOCK);
      for (let r = r0; r < r1; r++) {
        const from = rowStart(r);
        for (let c = c0; c < c1; c++) dst[dstOffset + c * rows + r] = (src[from + c] as number) * scale + shift;
      }
    }
  }
}

/** Index into a signal reflect-padded on both sides (numpy/torch "reflect": the edge is not repeated). */
function reflect(index: number, length: number): number {
  if (index < 0) return -index;
  if (index >= length) return 2 * (length - 1) - index;
  return index;
}
