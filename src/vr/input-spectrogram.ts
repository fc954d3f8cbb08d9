/**
 * The input side of a VR separation over a streamed track (stream.ts): loading_mix and
 * combine_spectrograms for any block of frames, from the band waves resampled by ranges.
 * Split from stream.ts.
 */
import type { VrGeometry } from './geometry.js';
import type { VrBand, VrParams } from './params.js';
import { RangeResampler } from './range-resampler.js';
import { bandSpectrogram, combine, highEndOf, type HighEnd, type StereoWave } from './spectrogram.js';
import type { Spectrogram } from './stft.js';

/** Where the input side reads the track: samples [start, end) of each channel (zeros outside the track), and what it will not read again. */
export interface TrackSource {
  read(start: number, end: number): Promise<StereoWave>;
  discardBefore(position: number): void;
}

/** One block of the stacked spectrogram: frames [from, to). */
export interface SpectrogramBlock {
  readonly spec: Spectrogram;
  readonly highEnd?: HighEnd;
  /** |X| as float32, [2·(bins + 1)][frames]. */
  readonly magnitude: Float32Array;
}

/** loading_mix + combine_spectrograms for any block of frames, from the track's samples in `window`. */
export class InputSpectrogram {
  /** The earliest track sample the last block read: no later block reads before it. */
  #lowest = Infinity;
  /** Band d's wave from band d + 1's. */
  readonly #resamplers: RangeResampler[];

  constructor(
    private readonly params: VrParams,
    private readonly isV51: boolean,
    private readonly highEndProcess: boolean,
    private readonly geometry: VrGeometry,
    private readonly source: TrackSource,
    private readonly whole: boolean,
    private readonly reversed: boolean,
  ) {
    const { bands } = params;
    this.#resamplers = bands
      .slice(0, -1)
      .map((band, d) => new RangeResampler(geometry.inputLengths[d + 1] as number, (bands[d + 1] as VrBand).sr, band.sr, band.resType, true, whole));
  }

  async block(from: number, to: number): Promise<SpectrogramBlock> {
    const { bands } = this.params;
    const top = bands.length - 1;
    this.#lowest = Infinity;
    const specs: Spectrogram[] = [];
    let highEnd: HighEnd | undefined;
    for (let d = top; d >= 0; d--) {
      const band = bands[d] as VrBand;
      const length = this.geometry.inputLengths[d] as number;
      const half = band.nFft / 2;
      let start = from * band.hl - half;
      let end = (to - 1) * band.hl + half;
      if (this.whole) [start, end] = [Math.min(start, 0), Math.max(end, length)];
      // `reverse`: samples [start, end) of the band flipped are its samples [length − end, length − start) backwards.
      const wave = this.reversed ? flipped(await this.wave(d, length - end, length - start)) : await this.wave(d, start, end);
      specs[d] = bandSpectrogram(wave, { start, length }, band, this.params, this.isV51, [from, to]);
      if (d === top && this.highEndProcess) highEnd = highEndOf(specs[d] as Spectrogram, band, this.params);
    }
    this.source.discardBefore(this.#lowest);
    const spec = combine(specs, this.params, this.isV51);
    const magnitude = new Float32Array(spec.re.length);
    for (let i = 0; i < magnitude.length; i++) magnitude[i] = Math.hypot(spec.re[i] as number, spec.im[i] as number);
    return highEnd === undefined ? { spec, magnitude } : { spec, highEnd, magnitude };
  }

  /** Band d's input wave, samples [start, end) (zeros outside the band). */
  private async wave(d: number, start: number, end: number): Promise<StereoWave> {
    const { bands } = this.params;
    if (d === bands.length - 1) return this.track(start, end);
    return (this.#resamplers[d] as RangeResampler).range((a, b) => this.wave(d + 1, a, b), start, end);
  }

  private async track(start: number, end: number): Promise<StereoWave> {
    this.#lowest = Math.min(this.#lowest, Math.max(0, start));
    return this.source.read(start, end);
  }
}

export function flipped(wave: StereoWave): StereoWave {
  return [wave[0].slice().reverse(), wave[1].slice().reverse()];
}
