/**
 * Resampling by ranges, for VR's streamed bands (stream.ts): any range of librosa.resample's
 * output computed from a slice of its input that reaches past every sample it depends on, so
 * each value is the one the whole band's resampling gives. Split from stream.ts.
 */
import type { ResType, VrParams } from './params.js';
import { SincRanges, type SincConverter } from './resample-libsamplerate.js';
import { librosaResample } from './resample.js';
import { OUTPUT_RESAMPLER, type StereoWave } from './spectrogram.js';

/** librosa.resample's output length. */
export function resampledLength(length: number, from: number, to: number): number {
  return from === to ? length : Math.ceil((length * to) / from);
}

/** A stereo slice of a signal: samples [start, end), zeros outside the signal. */
export type RangeReader = (start: number, end: number) => Promise<StereoWave>;

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b);
}

/** from → to as up/down in lowest terms. */
function reduced(from: number, to: number): { readonly up: number; readonly down: number } {
  const divisor = gcd(from, to);
  return { up: to / divisor, down: from / divisor };
}

/** Whether every resampling step of the params can be computed in slices exactly: resample_poly and libsamplerate's converters (the others are computed over whole bands). */
export function slicedExactly(params: VrParams): boolean {
  return params.bands.every((band, d) => {
    const above = params.bands[d + 1];
    return (
      above === undefined ||
      above.sr === band.sr ||
      ([band.resType, OUTPUT_RESAMPLER] as ResType[]).every((resType) => resType === 'polyphase' || isSinc(resType))
    );
  });
}

function isSinc(resType: ResType): resType is SincConverter {
  return resType === 'sinc_fastest' || resType === 'sinc_medium' || resType === 'sinc_best';
}

/**
 * Samples [start, end) of librosa.resample(signal) for a signal of `fromLength` samples read by
 * `read`, computed from a slice that reaches past every sample they depend on (or, with `whole`,
 * from the whole signal): resample_poly from a slice starting where its phase is the signal's
 * start; libsamplerate by carrying its walk to `start` (resample-libsamplerate.ts SincRanges).
 */
export class RangeResampler {
  readonly #sinc: SincRanges | undefined;

  constructor(
    private readonly fromLength: number,
    private readonly from: number,
    private readonly to: number,
    private readonly resType: ResType,
    private readonly float32: boolean,
    private readonly whole: boolean,
  ) {
    this.#sinc = whole || from === to || !isSinc(resType) ? undefined : new SincRanges(fromLength, to / from, resType);
  }

  async range(read: RangeReader, start: number, end: number): Promise<StereoWave> {
    const { fromLength, from, to, resType, float32, whole } = this;
    if (from === to) return read(start, end);
    const out: StereoWave = [new Float64Array(end - start), new Float64Array(end - start)];
    const lo = Math.max(0, start);
    const hi = Math.min(end, resampledLength(fromLength, from, to));
    if (hi <= lo) return out;
    if (this.#sinc !== undefined) {
      const { first, last } = this.#sinc.inputs(lo, hi);
      const slice = await read(first, Math.min(fromLength, last));
      for (let c = 0; c < 2; c++) (out[c] as Float64Array).set(this.#sinc.range(lo, hi, slice[c] as Float64Array, first), lo - start);
      return out;
    }
    const { up, down } = reduced(from, to);
    // resample_poly's filter has 10·max(up, down) taps a side at the upsampled rate.
    const reach = Math.ceil((10 * Math.max(up, down)) / up) + 8;
    // Whole: the signal itself, as librosa resamples it.
    const phase = whole ? 0 : Math.floor(lo / up) - Math.ceil(reach / down) - 1;
    const firstOut = phase * up;
    const sliceStart = phase * down;
    const sliceEnd = whole ? fromLength : Math.min(fromLength, Math.ceil((hi * down) / up) + reach + 1);
    const slice = await read(sliceStart, sliceEnd);
    for (let c = 0; c < 2; c++) {
      const resampled = librosaResample(slice[c] as Float64Array, from, to, resType, float32);
      const target = out[c] as Float64Array;
      for (let i = lo; i < hi; i++) target[i - start] = resampled[i - firstOut] ?? 0;
    }
    return out;
  }
}
