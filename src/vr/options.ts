/**
 * python-audio-separator's VR separator settings (its `vr_params`: `--vr_batch_size`,
 * `--vr_window_size`, `--vr_aggression`, `--vr_enable_tta`, `--vr_enable_post_process`,
 * `--vr_post_process_threshold`, `--vr_high_end_process`), with its defaults.
 */
import { StemsplitError } from '../errors.js';

export interface VrOptions {
  /** Windows per network run; does not change the result (masks are concatenated along time). */
  readonly batchSize: number;
  /** Frames per network window (UVR offers 320, 512, 1024). */
  readonly windowSize: number;
  /** −100…100: the mask's exponent (deeper extraction of the primary stem when larger). */
  readonly aggression: number;
  /** A second pass shifted by half a window, averaged with the first. */
  readonly enableTta: boolean;
  /** spec_utils.merge_artifacts on the mask. */
  readonly enablePostProcess: boolean;
  readonly postProcessThreshold: number;
  /** Mirror the input's highest bins into the output (high_end_process). */
  readonly highEndProcess: boolean;
}

export const VR_DEFAULTS: VrOptions = Object.freeze({
  batchSize: 1,
  windowSize: 512,
  aggression: 5,
  enableTta: false,
  enablePostProcess: false,
  postProcessThreshold: 0.2,
  highEndProcess: false,
});

/** Frames per window: UVR offers up to 1024; larger ones only cost memory. */
const MAX_WINDOW = 8192;

/** The options merged over the defaults, refused in one line where the official code would fail. */
export function vrOptions(options: Partial<VrOptions> = {}): VrOptions {
  const merged = { ...VR_DEFAULTS, ...options };
  const usage = (message: string): never => {
    throw new StemsplitError('USAGE', message);
  };
  if (!(Number.isInteger(merged.batchSize) && merged.batchSize >= 1)) usage(`--vr-batch-size must be a whole number ≥ 1, got ${merged.batchSize}`);
  if (!(Number.isInteger(merged.windowSize) && merged.windowSize >= 1 && merged.windowSize <= MAX_WINDOW)) usage(`--vr-window-size must be a whole number up to ${MAX_WINDOW}, got ${merged.windowSize}`);
  if (!(Number.isInteger(merged.aggression) && merged.aggression >= -100 && merged.aggression <= 100)) usage(`--vr-aggression must be a whole number from -100 to 100, got ${merged.aggression}`);
  if (!(Number.isFinite(merged.postProcessThreshold) && merged.postProcessThreshold > 0 && merged.postProcessThreshold < 1)) {
    usage(`--vr-post-process-threshold must be above 0 and below 1, got ${merged.postProcessThreshold}`);
  }
  return merged;
}
