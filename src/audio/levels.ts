/**
 * A stem's level before it is written: `--normalize` (python-audio-separator's --normalization)
 * and `--clip-mode` (demucs'). Both act on each stem alone, on its samples as separated (at the
 * model's rate, before any resampling, mono downmix or lossy coding, which can move the peak a little).
 *
 * - clip mode `none` (the default, as stemsplit always did and demucs' `none`): samples go to
 *   the encoder as they are; an integer format (16/24-bit WAV, FLAC, AIFF, ALAC) clips what lies
 *   beyond ±1 as it converts, a float WAV and the lossy formats keep it.
 * - `clamp`: every sample is clamped to [-1, 1] first.
 * - `rescale`: a stem whose peak p exceeds 1/1.01 is divided by 1.01·p (demucs'
 *   `wav / max(1.01 * |wav|.max(), 1)`), so its peak is just under 1 and nothing clips.
 * - normalize to P (0 < P ≤ 1, default 0.9): a stem whose peak exceeds P is scaled so its peak
 *   is P; a quieter stem is left alone (python-audio-separator does the same: it never
 *   amplifies unless told to, and a near-silent stem amplified would be mostly noise).
 *
 * Rescale and normalize need a stem's peak before its first sample is written: the split
 * spools the stems first (split-worker/levels.ts).
 */

export const CLIP_MODES = ['rescale', 'clamp', 'none'] as const;
export type ClipMode = (typeof CLIP_MODES)[number];
export const DEFAULT_CLIP_MODE: ClipMode = 'none';
/** `--normalize` without a value, as python-audio-separator's --normalization default. */
export const DEFAULT_NORMALIZE_PEAK = 0.9;

export interface LevelOptions {
  readonly clipMode?: ClipMode;
  /** Scale a stem whose peak exceeds this down to it (0 < peak ≤ 1). */
  readonly normalizePeak?: number;
}

export function isClipMode(value: string): value is ClipMode {
  return (CLIP_MODES as readonly string[]).includes(value);
}

/** Why `peak` cannot be a normalize target, naming `field`; undefined when it can. */
export function normalizePeakProblem(peak: number, field: string): string | undefined {
  return Number.isFinite(peak) && peak > 0 && peak <= 1 ? undefined : `${field} must be a peak level above 0 and at most 1 (e.g. 0.9), got ${peak}`;
}

/** Whether the levels depend on each stem's peak, known only once the whole stem is separated. */
export function needsPeak(levels: LevelOptions): boolean {
  return levels.clipMode === 'rescale' || levels.normalizePeak !== undefined;
}

/** The gain a stem whose peak is `peak` is written with. */
export function stemGain(peak: number, levels: LevelOptions): number {
  let gain = levels.normalizePeak !== undefined && peak > levels.normalizePeak ? levels.normalizePeak / peak : 1;
  if (levels.clipMode === 'rescale') gain /= Math.max(1.01 * peak * gain, 1);
  return gain;
}

/** The largest |sample| among the first `count` samples. */
export function peakOf(samples: Float32Array, count = samples.length): number {
  let peak = 0;
  for (let i = 0; i < count; i++) {
    const magnitude = Math.abs(samples[i] as number);
    if (magnitude > peak) peak = magnitude;
  }
  return peak;
}

/** `samples` with `gain` applied and, in clamp mode, clamped to [-1, 1]: a new array (the caller's may be shared), or the same when nothing changes. */
export function leveled(samples: Float32Array, gain: number, levels: LevelOptions): Float32Array {
  const clamp = levels.clipMode === 'clamp';
  if (gain === 1 && !clamp) return samples;
  const out = new Float32Array(samples.length);
  for (let i = 0; i < samples.length; i++) {
    const value = (samples[i] as number) * gain;
    out[i] = clamp ? Math.max(-1, Math.min(1, value)) : value;
  }
  return out;
}
