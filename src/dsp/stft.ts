/**
 * torch.stft / torch.istft with `center=True` and reflect padding, for one fixed signal length,
 * in torch's layout: a spectrum is two planes (real, imaginary) of [bins, frames], bins =
 * n_fft/2 + 1, frames = 1 + ⌊length / hop⌋.
 *
 * - the window is `win_length` long, centred in n_fft (torch pads it with zeros); torch's
 *   default when no window is passed is all ones;
 * - `normalized` scales the forward transform by 1/√n_fft and the inverse input by √n_fft;
 * - the inverse is torch's: each frame's c2r transform (the imaginary parts of DC and Nyquist
 *   ignored) times the window, overlap-added, the n_fft/2 centre padding cut off on both sides
 *   (hop · (frames − 1) samples, or istft's `length`), divided by the summed squared window.
 *
 * Two real frames share one complex FFT each way. Families that lay spectra out otherwise
 * (frame-major, cropped to dim_f, split into sub-bands) copy to and from these planes.
 */
import { Fft, silentParts, unpackTwoReal } from './fft.js';
import { periodicHann } from './window.js';

export type StftWindow = 'ones' | 'hann';

export interface StftOptions {
  readonly nFft: number;
  readonly hop: number;
  readonly winLength: number;
  readonly window: StftWindow;
  readonly normalized: boolean;
  /** Round the window to float32, as torch's float32 hann_window tensor is. */
  readonly float32Window?: boolean;
  /** torch.istft's `length`: samples the inverse returns (default hop · (frames − 1)). */
  readonly outputLength?: number;
}

/** Real and imaginary planes the inverse reads (float64 where a family keeps masked spectra in double). */
export type SpectrumPlane = Float32Array | Float64Array;

export class TorchStft {
  readonly bins: number;
  readonly frames: number;
  /** Samples the inverse returns: hop · (frames − 1), or the `outputLength` asked for. */
  readonly outputLength: number;
  /** Some output sample no window reaches (torch.istft's NOLA check refuses such settings). */
  readonly hasGaps: boolean;
  private readonly fft: Fft;
  private readonly window: Float64Array;
  private readonly inverseEnvelope: Float64Array;
  private readonly re: Float64Array;
  private readonly im: Float64Array;
  /** One bin of the two spectra `unpackTwoReal` separates. */
  private readonly bin: Float64Array;
  private readonly overlapAdd: Float64Array;
  private readonly forwardScale: number;
  private readonly inverseScale: number;

  constructor(
    private readonly options: StftOptions,
    /** Samples per analysed signal. */
    readonly length: number,
  ) {
    const { nFft, hop, winLength } = options;
    if (winLength > nFft) throw new Error(`win_length ${winLength} is longer than n_fft ${nFft}`);
    if (length <= nFft / 2) throw new Error(`reflect padding of ${nFft / 2} needs more than ${length} samples`);
    this.fft = new Fft(nFft);
    this.bins = nFft / 2 + 1;
    this.frames = 1 + Math.floor(length / hop);
    this.outputLength = options.outputLength ?? hop * (this.frames - 1);
    this.window = centredWindow(options.window, winLength, nFft);
    if (options.float32Window) this.window = this.window.map(Math.fround);
    this.inverseEnvelope = this.envelope();
    this.hasGaps = this.inverseEnvelope.includes(0);
    this.re = new Float64Array(nFft);
    this.im = new Float64Array(nFft);
    this.bin = new Float64Array(4);
    this.overlapAdd = new Float64Array(this.outputLength);
    this.forwardScale = options.normalized ? 1 / Math.sqrt(nFft) : 1;
    this.inverseScale = (options.normalized ? Math.sqrt(nFft) : 1) / nFft;
  }

  /** `signal` (length samples) → `real` and `imag` planes [bins, frames]. */
  analyze(signal: Float32Array, real: Float32Array, imag: Float32Array): void {
    const { nFft, hop } = this.options;
    const { re, im, bin, window, frames, bins, length, forwardScale: scale } = this;
    const half = nFft / 2;
    for (let t = 0; t < frames; t += 2) {
      const second = t + 1 < frames;
      for (let n = 0; n < nFft; n++) {
        const w = window[n] as number;
        re[n] = w === 0 ? 0 : w * (signal[reflect(t * hop + n - half, length)] as number);
        im[n] = second && w !== 0 ? w * (signal[reflect((t + 1) * hop + n - half, length)] as number) : 0;
      }
      const silent = silentParts(re, im);
      this.fft.forward(re, im);
      for (let k = 0; k < bins; k++) {
        unpackTwoReal(re, im, k, bin, silent);
        const at = k * frames + t;
        real[at] = (bin[0] as number) * scale;
        imag[at] = (bin[1] as number) * scale;
        if (second) {
          real[at + 1] = (bin[2] as number) * scale;
          imag[at + 1] = (bin[3] as number) * scale;
        }
      }
    }
  }

  /** `real` and `imag` planes [bins, frames] → `target` (outputLength samples, or fewer: the rest is cut). */
  synthesize(real: SpectrumPlane, imag: SpectrumPlane, target: Float32Array): void {
    const { nFft, hop } = this.options;
    const { re, im, window, frames, bins, overlapAdd: sum, inverseScale } = this;
    const half = nFft / 2;
    sum.fill(0);
    for (let t = 0; t < frames; t += 2) {
      const second = t + 1 < frames;
      // Two real outputs a, b from one complex inverse of A + i·B (Hermitian A, B). A spectrum of zeros
      // adds nothing (the inverse would give it ~1e-16 of its partner), as in analyze.
      let firstSounds = false;
      let secondSounds = false;
      for (let k = 0; k < bins; k++) {
        const edge = k === 0 || k === bins - 1; // c2r ignores the imaginary part of DC and Nyquist
        const at = k * frames + t;
        const ar = real[at] as number;
        const ai = edge ? 0 : (imag[at] as number);
        const br = second ? (real[at + 1] as number) : 0;
        const bi = second && !edge ? (imag[at + 1] as number) : 0;
        firstSounds ||= ar !== 0 || ai !== 0;
        secondSounds ||= br !== 0 || bi !== 0;
        re[k] = ar - bi;
        im[k] = ai + br;
        if (!edge) {
          re[nFft - k] = ar + bi;
          im[nFft - k] = br - ai;
        }
      }
      this.fft.inverse(re, im);
      for (let n = 0; n < nFft; n++) {
        const w = (window[n] as number) * inverseScale;
        if (w === 0) continue;
        const first = t * hop + n - half;
        if (firstSounds && first >= 0 && first < sum.length) sum[first] = (sum[first] as number) + (re[n] as number) * w;
        const next = first + hop;
        if (secondSounds && next >= 0 && next < sum.length) sum[next] = (sum[next] as number) + (im[n] as number) * w;
      }
    }
    const count = Math.min(target.length, sum.length);
    for (let i = 0; i < count; i++) target[i] = (sum[i] as number) * (this.inverseEnvelope[i] as number);
  }

  /** 1 / Σ window² at each output sample (after the centre trim); 0 where no frame reaches. */
  private envelope(): Float64Array {
    const { nFft, hop } = this.options;
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

/** The window of `win` samples (ones, or torch.hann_window's periodic Hann) centred in n_fft, as torch.stft pads it. */
export function centredWindow(kind: StftWindow, win: number, nFft: number): Float64Array {
  const out = new Float64Array(nFft);
  out.set(kind === 'ones' ? new Float64Array(win).fill(1) : periodicHann(win), Math.floor((nFft - win) / 2));
  return out;
}

/** Reflect padding index (the edge sample not repeated), folded as often as needed. */
export function reflect(index: number, length: number): number {
  if (length === 1) return 0;
  const period = 2 * (length - 1);
  let i = index % period;
  if (i < 0) i += period;
  return i < length ? i : period - i;
}
