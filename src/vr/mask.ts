/**
 * What UVR's VR code does to the network's mask before the stems are made (python-audio-separator's
 * vr_separator.py `postprocess`, uvr_lib_v5/spec_utils.py `adjust_aggr`, `merge_artifacts`), and the
 * masking itself. Every step here is per frame or per element, except merge_artifacts' search for
 * runs of clean frames: that is split into per-frame flags (`cleanFrames`) and the weights made
 * from a stretch of them (`artifactWeights`), so a stream can weigh a block from the flags around it.
 */
import type { Spectrogram } from './stft.js';

/**
 * spec_utils.adjust_aggr (no aggr_correction: no params file sets one) on a mask of [2][bins][frames]
 * in place: raised to 1 + a/3 below `splitBin`, 1 + a above.
 */
export function adjustAggression(mask: Float32Array, bins: number, frames: number, splitBin: number, aggression: number, nonAccompaniment: boolean): void {
  // vr_separator.py keeps aggression / 100; adjust_aggr doubles it.
  let aggr = (aggression / 100) * 2;
  if (aggr === 0) return;
  if (nonAccompaniment) aggr = 1 - aggr;
  // numpy raises a float32 mask to a Python float exponent in float32.
  const low = Math.fround(1 + aggr / 3);
  const high = Math.fround(1 + aggr);
  for (let c = 0; c < 2; c++) {
    for (let k = 0; k < bins; k++) {
      const exponent = k < splitBin ? low : high;
      const at = (c * bins + k) * frames;
      for (let t = 0; t < frames; t++) mask[at + t] = Math.fround(Math.pow(mask[at + t] as number, exponent));
    }
  }
}

/** merge_artifacts' test of each frame: the mask above `threshold` in every bin of both channels (1), else 0. */
export function cleanFrames(mask: Float32Array, rows: number, frames: number, threshold: number): Uint8Array {
  const clean = new Uint8Array(frames);
  for (let t = 0; t < frames; t++) {
    let min = Infinity;
    for (let r = 0; r < rows; r++) min = Math.min(min, mask[r * frames + t] as number);
    clean[t] = min > threshold ? 1 : 0;
  }
  return clean;
}

/**
 * merge_artifacts' weights from its frames' flags: stretches of more than `minRange` clean frames
 * get weight 1 with `fadeSize`-frame fades (a stretch starting within a fade of the previous one's
 * end fades in from 2·fadeSize frames before that end, over it). Undefined where the official code
 * leaves the mask as it was: no clean frame at all, or fades that do not fit.
 *
 * A frame's weight depends only on the flags within 256 frames of it (a stretch reaches back at
 * most 3·fadeSize before its start through the previous one's end, whose own length is known
 * minRange + 1 frames back), so weights made from a stretch of flags that extends
 * `ARTIFACT_REACH` frames beyond a block on each side (or to the track's ends) are the whole
 * track's for that block.
 */
export function artifactWeights(clean: Uint8Array, minRange = 64, fadeSize = 32): Float32Array | undefined {
  const frames = clean.length;
  const above: number[] = [];
  for (let t = 0; t < frames; t++) if (clean[t] === 1) above.push(t);
  if (above.length === 0) return undefined;
  const starts = [above[0] as number];
  const ends: number[] = [];
  for (let i = 1; i < above.length; i++) {
    if ((above[i] as number) - (above[i - 1] as number) !== 1) {
      ends.push(above[i - 1] as number);
      starts.push(above[i] as number);
    }
  }
  ends.push(above[above.length - 1] as number);
  const weight = new Float32Array(frames);
  const assign = (from: number, to: number, values: Float64Array | number): boolean => {
    const [a, b] = pySlice(from, to, frames);
    const count = Math.max(0, b - a);
    if (typeof values !== 'number' && values.length !== count) return false;
    for (let i = 0; i < count; i++) weight[a + i] = typeof values === 'number' ? values : (values[i] as number);
    return true;
  };
  const fadeIn = linspaceF(0, 1, fadeSize);
  const fadeOut = linspaceF(1, 0, fadeSize);
  let oldEnd: number | undefined;
  for (let i = 0; i < starts.length; i++) {
    let s = starts[i] as number;
    let e = ends[i] as number;
    if (!(e - s > minRange)) continue;
    if (oldEnd !== undefined && s - oldEnd < fadeSize) s = oldEnd - fadeSize * 2;
    if (s !== 0) {
      if (!assign(s, s + fadeSize, fadeIn)) return undefined;
    } else s -= fadeSize;
    if (e !== frames) {
      if (!assign(e - fadeSize, e, fadeOut)) return undefined;
    } else e += fadeSize;
    assign(s + fadeSize, e - fadeSize, 1);
    oldEnd = e;
  }
  return weight;
}

/** Flags beyond a block that `artifactWeights` needs on each side (twice what a weight depends on). */
export const ARTIFACT_REACH = 512;

/** mask + weight·(1 − mask), in float32, each frame t of the [rows][frames] mask by weights[t]. */
export function applyArtifactWeights(mask: Float32Array, rows: number, frames: number, weights: Float32Array): void {
  for (let r = 0; r < rows; r++) {
    for (let t = 0; t < frames; t++) {
      const at = r * frames + t;
      const m = mask[at] as number;
      mask[at] = Math.fround(m + Math.fround((weights[t] as number) * Math.fround(1 - m)));
    }
  }
}

/** Python's slice [from:to] of a sequence of `length`: negative bounds count from the end, both clamped. */
function pySlice(from: number, to: number, length: number): [number, number] {
  const norm = (i: number) => Math.min(length, Math.max(0, i < 0 ? i + length : i));
  return [norm(from), norm(to)];
}

function linspaceF(a: number, b: number, n: number): Float64Array {
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) out[i] = a + ((b - a) * i) / (n - 1);
  out[n - 1] = b;
  return out;
}

/** mask·|X|·e^{i∠X} (or (1 − mask)·…), complex64, NaN and ±∞ as 0 (nan_to_num). */
export function masked(spec: Spectrogram, mask: Float32Array, inverse: boolean): Spectrogram {
  const re = new Float32Array(spec.re.length);
  const im = new Float32Array(spec.im.length);
  for (let i = 0; i < re.length; i++) {
    const m = inverse ? Math.fround(1 - (mask[i] as number)) : (mask[i] as number);
    const xr = spec.re[i] as number;
    const xi = spec.im[i] as number;
    const magnitude = Math.fround(m * Math.fround(Math.hypot(xr, xi)));
    const phase = Math.fround(Math.atan2(xi, xr));
    const r = Math.fround(magnitude * Math.fround(Math.cos(phase)));
    const j = Math.fround(magnitude * Math.fround(Math.sin(phase)));
    re[i] = Number.isFinite(r) ? r : 0;
    im[i] = Number.isFinite(j) ? j : 0;
  }
  return { bins: spec.bins, frames: spec.frames, re, im };
}
