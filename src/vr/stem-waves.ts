/**
 * A VR stem's samples for any range (spec_to_wav, band by band): each band's iSTFT over the frames
 * that reach the range, plus the lower bands' sum resampled up to the band's rate from a slice
 * that reaches past the resampler's filter (range-resampler.ts), so a range is computed from the
 * same numbers in the same order as the whole track's computation (stream.ts).
 */
import type { VrGeometry } from './geometry.js';
import type { VrBand, VrParams } from './params.js';
import { RangeResampler } from './range-resampler.js';
import { bandStemWave, mirrorHighEnd, OUTPUT_RESAMPLER, type StereoWave } from './spectrogram.js';
import type { Spectrogram } from './stft.js';

/** Where a stem's stacked spectrogram comes from: the mask (or 1 − mask) times X over frames [from, to), and the input's high end. */
export interface StemFrames {
  stemFrames(from: number, to: number, inverse: boolean): Promise<{ readonly spec: Spectrogram; readonly highEnd?: Spectrogram }>;
}

/** spec_to_wav for any range of a stem's samples, band by band. */
export class StemWaves {
  /** Per stem (primary, secondary), the lower bands' sum below band d resampled up to band d's rate. */
  readonly #resamplers: (readonly RangeResampler[])[];

  constructor(
    private readonly params: VrParams,
    private readonly isV51: boolean,
    private readonly geometry: VrGeometry,
    private readonly masks: StemFrames,
    private readonly whole: boolean,
    private readonly reversed: boolean,
  ) {
    const { bands } = params;
    const upwards = () =>
      bands
        .slice(1)
        .map((band, i) => new RangeResampler(geometry.outputLengths[i] as number, (bands[i] as VrBand).sr, band.sr, OUTPUT_RESAMPLER, false, whole));
    this.#resamplers = [upwards(), upwards()];
  }

  /** The stem at band d's rate, samples [start, end): band d's own part plus the lower bands' sum resampled up to it. */
  async level(d: number, start: number, end: number, inverse: boolean): Promise<StereoWave> {
    const own = await this.bandPart(d, start, end, inverse);
    if (d === 0) return own;
    const { bands } = this.params;
    const lower = await (this.#resamplers[inverse ? 1 : 0]?.[d - 1] as RangeResampler).range((a, b) => this.level(d - 1, a, b, inverse), start, end);
    return [lower[0].map((v, i) => v + (own[0][i] as number)), lower[1].map((v, i) => v + (own[1][i] as number))];
  }

  /** Band d's iSTFT of the stem over the frames that reach samples [start, end) (zeros outside the band's wave). */
  private async bandPart(d: number, start: number, end: number, inverse: boolean): Promise<StereoWave> {
    const out: StereoWave = [new Float64Array(end - start), new Float64Array(end - start)];
    const length = this.geometry.outputLengths[d] as number;
    const lo = Math.max(0, start);
    const hi = Math.min(end, length);
    if (hi <= lo) return out;
    const { bands } = this.params;
    const band = bands[d] as VrBand;
    const half = band.nFft / 2;
    const { frames } = this.geometry;
    // `reverse`: the band's iSTFT is the stem flipped, its samples [length − hi, length − lo) are [lo, hi) backwards.
    const [from, to] = this.reversed ? [length - hi, length - lo] : [lo, hi];
    const first = this.whole ? 0 : Math.max(0, Math.floor((from + half - band.nFft) / band.hl));
    const last = this.whole ? frames : Math.min(frames, Math.floor((to + half) / band.hl) + 2);
    const { spec, highEnd } = await this.masks.stemFrames(first, last, inverse);
    const top = d === bands.length - 1;
    const mirrored = top && highEnd !== undefined ? mirrorHighEnd(spec, { bins: highEnd.bins, spec: highEnd }, this.params) : undefined;
    const wave = bandStemWave(spec, d, this.params, this.isV51, mirrored);
    const offset = first * band.hl;
    for (let c = 0; c < 2; c++) {
      const part = (wave[c] as Float64Array).subarray(from - offset, to - offset);
      (out[c] as Float64Array).set(this.reversed ? part.slice().reverse() : part, lo - start);
    }
    return out;
  }
}
