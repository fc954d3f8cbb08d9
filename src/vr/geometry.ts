/**
 * The geometry of a VR separation: UVR's network windows (make_padding) and the lengths of each
 * band's waves and of the stacked spectrogram for a track, as the whole-track computation has
 * them. Split from stream.ts.
 */
import { StemsplitError } from '../errors.js';
import type { VrBand, VrParams } from './params.js';
import { resampledLength } from './range-resampler.js';

/**
 * make_padding's geometry for `frames` frames: |X| gets `offset` zero frames on the left (plus
 * `shift` for TTA's second pass) and enough on the right for whole windows; window p starts at
 * padded frame p·roi, and its cropped mask covers track frames [p·roi − shift, (p + 1)·roi − shift).
 */
export function vrWindows(frames: number, window: number, offset: number, shift: number): { readonly roi: number; readonly patches: number } {
  const roi = window - 2 * offset;
  const padRight = roi - (frames % roi) + offset;
  return { roi, patches: Math.floor((offset + shift + frames + padRight + shift - 2 * offset) / roi) };
}

/** Band lengths and frame counts of a track of `length` samples, as the whole-track computation has them. */
export interface VrGeometry {
  /** Samples of each band's input wave (band 0 lowest). */
  readonly inputLengths: readonly number[];
  /** Frames of the stacked spectrogram: the shortest band's. */
  readonly frames: number;
  /** Samples of each band's stem wave, hop·(frames − 1); the top band's is the stems' length. */
  readonly outputLengths: readonly number[];
}

export function vrGeometry(params: VrParams, length: number): VrGeometry {
  const { bands } = params;
  const top = bands.length - 1;
  const inputLengths = new Array<number>(bands.length);
  inputLengths[top] = length;
  for (let d = top - 1; d >= 0; d--) inputLengths[d] = resampledLength(inputLengths[d + 1] as number, (bands[d + 1] as VrBand).sr, (bands[d] as VrBand).sr);
  const frames = Math.min(...bands.map((band, d) => 1 + Math.floor((inputLengths[d] as number) / band.hl)));
  const outputLengths = bands.map((band) => band.hl * (frames - 1));
  for (let d = 1; d <= top; d++) {
    const below = resampledLength(outputLengths[d - 1] as number, (bands[d - 1] as VrBand).sr, (bands[d] as VrBand).sr);
    if (below !== outputLengths[d]) {
      throw new StemsplitError(
        'SEPARATION_FAILED',
        `VR params ${params.name}: band waves of ${below} and ${outputLengths[d]} samples do not line up (the official code fails here too)`,
      );
    }
  }
  return { inputLengths, frames, outputLengths };
}
