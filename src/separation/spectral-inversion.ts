/**
 * UVR's "invert using spec" (python-audio-separator's `--invert_spect`, spec_utils.invert_stem):
 * the secondary stem made from the mix and the primary stem in the STFT domain instead of as their
 * difference in time. Per channel, with X = STFT(mix) and Y = STFT(primary) (n_fft 2048, hop 1024,
 * periodic Hann, centred frames as librosa's), V = Y − max(|X|, |Y|)·e^{i∠X}, and the secondary
 * stem is −ISTFT(V): the mix minus the primary where the mix is the louder, and where the primary
 * is louder than the mix, the mix's phase at the primary's magnitude minus the primary (so the
 * secondary never carries what the primary over-estimated). ISTFT is librosa's overlap-add divided
 * by the summed squared window. Two differences, at the track's ends only: frames reach past the
 * ends through zeros (librosa 0.10's default padding), and the last `length mod 1024` samples are
 * kept where librosa's ISTFT drops them.
 *
 * Streamed: each output sample is settled once the frame after it is computed, so the secondary
 * stem lags the input by at most n_fft samples and `InvertedStemWriter` holds the other stems
 * back by as much, writing them all together in order.
 *
 * Where a model's stems come without the mix beside them (VR), `invertingSecondary` reads the mix
 * again alongside them (one more decode); `withSpectralComplement` does the same for `--two-stems X`
 * of a multi-stem model run with `--invert-spect`, whose `no_X` is then the inversion of the mix
 * and X (UVR's separate.py, a multi-stem Demucs or MDX-C model without "combine stems").
 */
import { Fft } from '../dsp/fft.js';
import { periodicHann } from '../dsp/window.js';
import { StemsplitError } from '../errors.js';
import type { SeparationModel, TrackModel } from './model.js';
import { IDENTITY } from './normalization.js';
import { TrackWindow, type StemWriter, type TrackStream } from './track-stream.js';

const N_FFT = 2048;
const HOP = 1024;
const HALF = N_FFT / 2;

/** One channel's running inversion: samples in, settled secondary samples out. */
class ChannelInversion {
  #mix: number[] = [];
  #primary: number[] = [];
  /** Track position of `#mix[0]`. */
  #inputBase = 0;
  #numerator: number[] = [];
  #denominator: number[] = [];
  /** Track position of `#numerator[0]`: every sample before it was handed out. */
  #outputBase = 0;
  #nextFrame = 0;

  constructor(
    private readonly length: number,
    private readonly fft: Fft,
    private readonly window: Float64Array,
  ) {}

  /** Takes the next input samples; returns the secondary samples now settled. */
  push(mix: Float32Array, primary: Float32Array): Float32Array {
    for (let i = 0; i < mix.length; i++) {
      this.#mix.push(mix[i] as number);
      this.#primary.push(primary[i] as number);
    }
    const received = this.#inputBase + this.#mix.length;
    const frames = Math.floor((this.length - 1) / HOP) + 2;
    while (this.#nextFrame < frames && Math.min(this.length, this.#nextFrame * HOP + HALF) <= received) this.#frame(this.#nextFrame++);
    const settled = this.#nextFrame >= frames ? this.length : Math.min(this.length, (this.#nextFrame - 1) * HOP);
    return this.#take(settled);
  }

  /** Frame t covers track positions [t·HOP − HALF, t·HOP + HALF), zeros outside the track. */
  #frame(t: number): void {
    const start = t * HOP - HALF;
    const x = { re: new Float64Array(N_FFT), im: new Float64Array(N_FFT) };
    const y = { re: new Float64Array(N_FFT), im: new Float64Array(N_FFT) };
    for (let j = 0; j < N_FFT; j++) {
      const index = start + j - this.#inputBase;
      if (start + j < 0 || start + j >= this.length || index < 0) continue;
      x.re[j] = (this.#mix[index] ?? 0) * (this.window[j] as number);
      y.re[j] = (this.#primary[index] ?? 0) * (this.window[j] as number);
    }
    this.fft.forward(x.re, x.im);
    this.fft.forward(y.re, y.im);
    // −V = max(|X|, |Y|)·e^{i∠X} − Y, so the minus of −ISTFT(V) is taken here.
    for (let k = 0; k < N_FFT; k++) {
      const xMag = Math.hypot(x.re[k] as number, x.im[k] as number);
      const yMag = Math.hypot(y.re[k] as number, y.im[k] as number);
      const scale = xMag > 0 ? Math.max(xMag, yMag) / xMag : 0;
      x.re[k] = (x.re[k] as number) * scale - (y.re[k] as number);
      x.im[k] = (x.im[k] as number) * scale - (y.im[k] as number);
    }
    this.fft.inverse(x.re, x.im);
    for (let j = 0; j < N_FFT; j++) {
      const at = start + j - this.#outputBase;
      if (at < 0) continue;
      const w = this.window[j] as number;
      this.#numerator[at] = (this.#numerator[at] ?? 0) + ((x.re[j] as number) / N_FFT) * w;
      this.#denominator[at] = (this.#denominator[at] ?? 0) + w * w;
    }
    // Input before the next frame's start is no longer needed.
    const drop = Math.max(0, (t + 1) * HOP - HALF - this.#inputBase);
    this.#mix.splice(0, drop);
    this.#primary.splice(0, drop);
    this.#inputBase += drop;
  }

  #take(settled: number): Float32Array {
    const count = Math.max(0, settled - this.#outputBase);
    const out = new Float32Array(count);
    for (let i = 0; i < count; i++) {
      const denominator = this.#denominator[i] ?? 0;
      out[i] = denominator > 1e-10 ? (this.#numerator[i] ?? 0) / denominator : 0;
    }
    this.#numerator.splice(0, count);
    this.#denominator.splice(0, count);
    this.#outputBase += count;
    return out;
  }
}

/**
 * A StemWriter's stand-in for a model that derives its last stem from the mix and its first: it is
 * handed the other stems and the mix block, and writes every stem, the spectrally inverted
 * secondary last, as the secondary settles (the others held back to match).
 */
export class InvertedStemWriter {
  readonly #channels: ChannelInversion[];
  /** Per stem and channel, samples not yet written. */
  #pending: number[][][] = [];
  #secondary: number[][] = [[], []];

  constructor(
    private readonly write: StemWriter,
    length: number,
  ) {
    const fft = new Fft(N_FFT);
    const window = periodicHann(N_FFT);
    this.#channels = [0, 1].map(() => new ChannelInversion(length, fft, window));
  }

  /**
   * `stems`: planar [2, count] blocks, the primary first; `mix`: the same span of the mix, planar
   * [2, count]; `primary`: what is inverted against the mix where not the first stem as written
   * (MDX-Net's primary times its compensation).
   */
  async push(stems: readonly Float32Array[], mix: Float32Array, count: number, primary = stems[0] as Float32Array): Promise<void> {
    if (this.#pending.length === 0) this.#pending = stems.map(() => [[], []]);
    stems.forEach((stem, s) => {
      for (let c = 0; c < 2; c++) for (let i = 0; i < count; i++) this.#pending[s]?.[c]?.push(stem[c * count + i] as number);
    });
    for (let c = 0; c < 2; c++) {
      const settled = this.#channels[c]?.push(mix.subarray(c * count, (c + 1) * count), primary.subarray(c * count, (c + 1) * count)) as Float32Array;
      for (const value of settled) this.#secondary[c]?.push(value);
    }
    const ready = Math.min(this.#secondary[0]?.length ?? 0, this.#secondary[1]?.length ?? 0);
    if (ready > 0) await this.write([...this.#pending.map((planes) => takePlanar(planes, ready)), takePlanar(this.#secondary, ready)], ready);
  }
}

/** The first `count` samples of each channel as one planar block, removed. */
function takePlanar(planes: number[][], count: number): Float32Array {
  const block = new Float32Array(2 * count);
  planes.forEach((plane, c) => block.set(plane.splice(0, count), c * count));
  return block;
}

/** The mix read once more from the start, block by block as a model's stems arrive. */
class MixBlocks {
  readonly #window: TrackWindow;
  #at = 0;

  constructor(input: TrackStream) {
    const { reread } = input;
    if (reread === undefined) throw new Error('unreachable: spectral inversion reads the mix again, and this stream cannot be read again');
    this.#window = new TrackWindow({ length: input.length, frames: reread() }, 1 << 16);
  }

  /** The mix's next `count` samples, planar [2, count]. */
  async next(count: number): Promise<Float32Array> {
    const block = new Float32Array(2 * count);
    await this.#window.ensure(this.#at + count);
    this.#window.read(this.#at, count, IDENTITY, block);
    this.#at += count;
    this.#window.discardBefore(this.#at);
    return block;
  }

  finish(): Promise<void> {
    return this.#window.finish();
  }

  close(): Promise<void> {
    return this.#window.close();
  }
}

type StreamTrack = TrackModel['streamTrack'];

/**
 * A model's streamTrack, its stems [primary, secondary] written as [primary, the spectral
 * inversion of the mix and the primary]: `--invert-spect` for a model that makes its secondary
 * itself (VR: (1 − mask)·X in its own spectrogram).
 */
export function invertingSecondary(stream: StreamTrack): StreamTrack {
  return (input, write, run) => streamInverted(stream, input, write, run, 0);
}

async function streamInverted(stream: StreamTrack, input: TrackStream, write: StemWriter, run: Parameters<StreamTrack>[2], index: number): Promise<void> {
  const mix = new MixBlocks(input);
  const inverter = new InvertedStemWriter(write, input.length);
  try {
    await stream(input, async (stems, frames) => inverter.push([stems[index] as Float32Array], await mix.next(frames), frames), run);
    await mix.finish();
  } catch (error) {
    await mix.close().catch(() => undefined);
    throw error;
  }
}

/**
 * A multi-stem model run with `--invert-spect`: its own streamTrack refuses to run (it has no
 * secondary stem to invert), and `--two-stems X` runs it through `withSpectralComplement`.
 */
export interface SpectralComplementModel extends TrackModel {
  /** The model's stems, as streamTrack would write them. */
  readonly streamStems: StreamTrack;
}

/** `model` marked as SpectralComplementModel: run alone without `--two-stems`, or in an ensemble, it is refused in one line naming `--two-stems`. */
export function needsTwoStems(model: TrackModel): SpectralComplementModel {
  return { ...model, streamStems: model.streamTrack, streamTrack: () => Promise.reject(noSecondary(model)) };
}

function noSecondary(model: TrackModel): StemsplitError {
  return new StemsplitError(
    'USAGE',
    `--invert-spect: ${model.name} writes ${model.sources.join(', ')} and no secondary stem; give --two-stems STEM for no_STEM by spectral inversion of the mix and STEM (alone, not in an ensemble)`,
  );
}

function isSpectralComplement(model: SeparationModel): model is SpectralComplementModel {
  return 'streamStems' in model;
}

/**
 * The model a split runs (`twoStems`: its `--two-stems X`): a SpectralComplementModel becomes a
 * model of the two stems X and no_X, no_X the spectral inversion of the mix and X (UVR's
 * `invert_stem`), and without `twoStems` it is refused before anything runs; any other model is
 * itself (no_X is the sum of the others).
 */
export function withSpectralComplement(model: SeparationModel, twoStems: string | undefined): SeparationModel {
  if (!isSpectralComplement(model)) return model;
  if (twoStems === undefined) throw noSecondary(model);
  const index = model.sources.indexOf(twoStems);
  if (index < 0) return model;
  return {
    ...model,
    sources: [twoStems, `no_${twoStems}`],
    streamTrack: (input, write, run) => streamInverted(model.streamStems, input, write, run, index),
  };
}
