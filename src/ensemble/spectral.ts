/**
 * The spectral ensembles (`*_fft`, `uvr_*_spec`) over a streamed track, giving what the
 * official code gives on the whole track at once.
 *
 * librosa.stft(center=True, pad_mode='constant') with n_fft 2048 and hop 1024 makes
 * K = 1 + ⌊L / 1024⌋ frames; frame k covers the track's samples [1024k − 1024, 1024k + 1024),
 * zeros outside the track. Each frame is taken as soon as every member's samples up to its end
 * have arrived, combined bin by bin, inverted, windowed and overlap-added. With the hop half the
 * frame, a sample is covered by two frames at most, so the first half of frame k is final once
 * frame k is added: [1024(k − 1), 1024k) leaves divided by the summed squared window of the
 * frames that cover it, as librosa.istft divides. After the last frame its second half leaves
 * too: the track's tail up to L (`*_fft`, istft with length = L), or silence for `uvr_*_spec`,
 * whose istft without a length stops at 1024 (K − 1).
 */
import { Fft, silentParts, unpackTwoReal } from '../dsp/fft.js';
import { periodicHann } from '../dsp/window.js';
import { extremeIndex, median, uvrFoldIndex, type EnsembleAlgorithm } from './algorithms.js';
import type { StemCombiner } from './stem-combiner.js';

const N_FFT = 2048;
const HOP = 1024;
const BINS = N_FFT / 2 + 1;

/** One member's spectrum of one frame: left and right, real and imaginary, bins 0..n_fft/2. */
interface FrameSpectrum {
  readonly leftRe: Float64Array;
  readonly leftIm: Float64Array;
  readonly rightRe: Float64Array;
  readonly rightIm: Float64Array;
}

function frameSpectrum(): FrameSpectrum {
  return { leftRe: new Float64Array(BINS), leftIm: new Float64Array(BINS), rightRe: new Float64Array(BINS), rightIm: new Float64Array(BINS) };
}

/** A member's samples not yet consumed, planar, from track position `start`. */
class PendingInput {
  left = new Float32Array(4 * N_FFT);
  right = new Float32Array(4 * N_FFT);
  start = 0;
  count = 0;

  append(planar: Float32Array, frames: number): void {
    if (this.count + frames > this.left.length) {
      const size = Math.max(2 * this.left.length, this.count + frames);
      const left = new Float32Array(size);
      const right = new Float32Array(size);
      left.set(this.left.subarray(0, this.count));
      right.set(this.right.subarray(0, this.count));
      this.left = left;
      this.right = right;
    }
    this.left.set(planar.subarray(0, frames), this.count);
    this.right.set(planar.subarray(frames, 2 * frames), this.count);
    this.count += frames;
  }

  /** Drops the samples before track position `position`. */
  dropBefore(position: number): void {
    const drop = Math.min(this.count, Math.max(0, position - this.start));
    if (drop === 0) return;
    this.left.copyWithin(0, drop, this.count);
    this.right.copyWithin(0, drop, this.count);
    this.count -= drop;
    this.start += drop;
  }

  /** Sample at track position `at`: zero before the track, past its end, or not held. */
  sample(channel: 0 | 1, at: number): number {
    const index = at - this.start;
    if (index < 0 || index >= this.count) return 0;
    return (channel === 0 ? this.left[index] : this.right[index]) as number;
  }
}

export class SpectralCombiner implements StemCombiner {
  readonly #algorithm: EnsembleAlgorithm;
  readonly #weights: Float64Array;
  readonly #weightSum: number;
  readonly #length: number;
  readonly #frames: number;
  readonly #fft = new Fft(N_FFT);
  readonly #window = periodicHann(N_FFT); // librosa's default window
  readonly #inputs: PendingInput[];
  readonly #spectra: FrameSpectrum[];
  readonly #combined = frameSpectrum();
  readonly #re = new Float64Array(N_FFT);
  readonly #im = new Float64Array(N_FFT);
  readonly #bin = new Float64Array(4);
  /** The previous frame's windowed second half, per channel, waiting for the next frame. */
  readonly #tail = [new Float64Array(HOP), new Float64Array(HOP)] as const;
  readonly #scratchRe: Float64Array;
  readonly #scratchIm: Float64Array;
  #received = 0;
  #nextFrame = 0;
  #ended = false;

  constructor(algorithm: EnsembleAlgorithm, weights: readonly number[], length: number) {
    this.#algorithm = algorithm;
    this.#weights = Float64Array.from(weights);
    this.#weightSum = weights.reduce((sum, weight) => sum + weight, 0);
    this.#length = length;
    this.#frames = 1 + Math.floor(length / HOP);
    this.#inputs = weights.map(() => new PendingInput());
    this.#spectra = weights.map(() => frameSpectrum());
    this.#scratchRe = new Float64Array(weights.length);
    this.#scratchIm = new Float64Array(weights.length);
  }

  push(inputs: readonly Float32Array[], frames: number): Float32Array {
    for (const [member, input] of this.#inputs.entries()) input.append(inputs[member] as Float32Array, frames);
    this.#received += frames;
    const blocks: Float32Array[] = [];
    while (this.#nextFrame < this.#frames && this.#received >= Math.min(this.#nextFrame * HOP + HOP, this.#length)) {
      blocks.push(this.#frame(this.#nextFrame));
      this.#nextFrame++;
      for (const input of this.#inputs) input.dropBefore(this.#nextFrame * HOP - HOP);
    }
    if (!this.#ended && this.#nextFrame === this.#frames) {
      this.#ended = true;
      blocks.push(this.#lastHalf());
    }
    return concatPlanar(blocks);
  }

  finish(): Float32Array {
    if (!this.#ended || this.#received !== this.#length) {
      throw new Error(`spectral ensemble ended after ${this.#received} of ${this.#length} samples`);
    }
    return new Float32Array(0);
  }

  /** Takes frame k, adds it to the tail and returns the samples it settles: [1024(k − 1), 1024k) within the track. */
  #frame(k: number): Float32Array {
    const start = k * HOP - HOP;
    for (const [member, input] of this.#inputs.entries()) this.#analyze(input, start, this.#spectra[member] as FrameSpectrum);
    this.#combine();
    this.#synthesize();
    const window = this.#window;
    const from = Math.max(0, start);
    const end = Math.min(start + HOP, this.#length);
    const count = Math.max(0, end - from);
    const out = new Float32Array(2 * count);
    for (let channel = 0; channel < 2; channel++) {
      const tail = this.#tail[channel as 0 | 1];
      const frame = channel === 0 ? this.#re : this.#im;
      for (let n = 0; n < HOP; n++) {
        const at = start + n;
        const w = window[n] as number;
        const previous = window[n + HOP] as number;
        // Frame k − 1's second half and frame k's first half cover this sample (only frame 0 before the track).
        const value = (tail[n] as number) + (frame[n] as number) * w;
        const envelope = w * w + (k > 0 ? previous * previous : 0);
        if (at >= from && at < end) out[channel * count + at - from] = envelope > 0 ? value / envelope : value;
        tail[n] = (frame[n + HOP] as number) * (window[n + HOP] as number);
      }
    }
    return out;
  }

  /** After the last frame: its second half, divided by its window alone; silence for UVR's unbounded istft. */
  #lastHalf(): Float32Array {
    const start = (this.#frames - 1) * HOP;
    const count = this.#length - start;
    const out = new Float32Array(2 * count);
    if (this.#algorithm.startsWith('uvr_')) return out;
    for (let channel = 0; channel < 2; channel++) {
      const tail = this.#tail[channel as 0 | 1];
      for (let n = 0; n < count; n++) {
        const w = this.#window[n + HOP] as number;
        out[channel * count + n] = (tail[n] as number) / (w * w);
      }
    }
    return out;
  }

  /** Both channels' spectra of the frame from `start` through one complex FFT (left real, right imaginary). */
  #analyze(input: PendingInput, start: number, spectrum: FrameSpectrum): void {
    const re = this.#re;
    const im = this.#im;
    for (let n = 0; n < N_FFT; n++) {
      const w = this.#window[n] as number;
      re[n] = w * input.sample(0, start + n);
      im[n] = w * input.sample(1, start + n);
    }
    const silent = silentParts(re, im);
    this.#fft.forward(re, im);
    const bin = this.#bin;
    for (let k = 0; k < BINS; k++) {
      unpackTwoReal(re, im, k, bin, silent);
      spectrum.leftRe[k] = bin[0] as number;
      spectrum.leftIm[k] = bin[1] as number;
      spectrum.rightRe[k] = bin[2] as number;
      spectrum.rightIm[k] = bin[3] as number;
    }
  }

  #combine(): void {
    const pairs = [
      ['leftRe', 'leftIm'],
      ['rightRe', 'rightIm'],
    ] as const;
    for (const [reKey, imKey] of pairs) {
      const outRe = this.#combined[reKey];
      const outIm = this.#combined[imKey];
      for (let bin = 0; bin < BINS; bin++) {
        for (let m = 0; m < this.#spectra.length; m++) {
          this.#scratchRe[m] = (this.#spectra[m] as FrameSpectrum)[reKey][bin] as number;
          this.#scratchIm[m] = (this.#spectra[m] as FrameSpectrum)[imKey][bin] as number;
        }
        const [re, im] = this.#combineBin(this.#scratchRe, this.#scratchIm);
        outRe[bin] = re;
        outIm[bin] = im;
      }
    }
  }

  #combineBin(re: Float64Array, im: Float64Array): readonly [number, number] {
    switch (this.#algorithm) {
      case 'avg_fft': {
        let sumRe = 0;
        let sumIm = 0;
        for (let m = 0; m < re.length; m++) {
          sumRe += (re[m] as number) * (this.#weights[m] as number);
          sumIm += (im[m] as number) * (this.#weights[m] as number);
        }
        return [sumRe / this.#weightSum, sumIm / this.#weightSum];
      }
      case 'median_fft':
        return [median(re), median(im)];
      case 'min_fft':
      case 'max_fft': {
        const index = extremeIndex(re, im, this.#algorithm === 'max_fft' ? 1 : -1);
        return [re[index] as number, im[index] as number];
      }
      case 'uvr_max_spec':
      case 'uvr_min_spec': {
        const index = uvrFoldIndex(re, im, this.#algorithm === 'uvr_max_spec' ? 1 : -1);
        return [re[index] as number, im[index] as number];
      }
      default:
        throw new Error(`${this.#algorithm} is not a spectral algorithm`);
    }
  }

  /** The combined frame back to time: left into #re, right into #im (irfft: the DC and Nyquist imaginary parts are dropped). */
  #synthesize(): void {
    const re = this.#re;
    const im = this.#im;
    const { leftRe, leftIm, rightRe, rightIm } = this.#combined;
    for (let k = 0; k < BINS; k++) {
      const edge = k === 0 || k === N_FFT / 2;
      const a = leftRe[k] as number;
      const b = edge ? 0 : (leftIm[k] as number);
      const c = rightRe[k] as number;
      const d = edge ? 0 : (rightIm[k] as number);
      // Z = L + iR over the whole circle, with L[N−k] = conj L[k] and R[N−k] = conj R[k].
      re[k] = a - d;
      im[k] = b + c;
      if (!edge) {
        re[N_FFT - k] = a + d;
        im[N_FFT - k] = c - b;
      }
    }
    this.#fft.inverse(re, im);
    for (let n = 0; n < N_FFT; n++) {
      re[n] = (re[n] as number) / N_FFT;
      im[n] = (im[n] as number) / N_FFT;
    }
  }
}

/** Planar [2, n] blocks joined into one planar [2, Σn] block. */
export function concatPlanar(blocks: readonly Float32Array[]): Float32Array {
  if (blocks.length === 1) return blocks[0] as Float32Array;
  const frames = blocks.reduce((sum, block) => sum + block.length / 2, 0);
  const out = new Float32Array(2 * frames);
  let at = 0;
  for (const block of blocks) {
    const n = block.length / 2;
    out.set(block.subarray(0, n), at);
    out.set(block.subarray(n), frames + at);
    at += n;
  }
  return out;
}
