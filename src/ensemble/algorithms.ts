/**
 * python-audio-separator's ensemble algorithms (its `Ensembler`, and the UVR `spec_utils`
 * functions two of them call), by the names its `--ensemble_algorithm` takes.
 *
 * - `*_wave` combine sample by sample: the weighted mean, the median, and the value of least
 *   or greatest magnitude (`np.argmin/argmax(np.abs(…))`: the first member on a tie).
 * - `*_fft` combine librosa STFTs (n_fft 2048, hop 1024, periodic Hann, centred with zero
 *   padding) bin by bin and invert them to the track's length: the weighted complex mean, the
 *   median of the real and imaginary parts taken apart, and the bin of least or greatest
 *   magnitude (first member on a tie).
 * - `uvr_*_spec` are UVR's `ensembling(MIN_SPEC|MAX_SPEC)`: the same spectra folded member by
 *   member with `np.where(|s_i| <= |acc|, s_i, acc)` (so the later member wins a tie), inverted
 *   without a length: librosa then returns hop × (frames − 1) samples, and the tail past that
 *   is silence here (UVR pads the result to the track with zeros the same way).
 *
 * Weights enter `avg_wave` and `avg_fft` only, as there; a stem made by one member is that
 * member's stem untouched, as `Ensembler.ensemble` returns a single waveform as it is.
 */
import { StemsplitError } from '../errors.js';

export const ENSEMBLE_ALGORITHMS = [
  'avg_wave',
  'median_wave',
  'min_wave',
  'max_wave',
  'avg_fft',
  'median_fft',
  'min_fft',
  'max_fft',
  'uvr_max_spec',
  'uvr_min_spec',
] as const;
export type EnsembleAlgorithm = (typeof ENSEMBLE_ALGORITHMS)[number];

export const DEFAULT_ENSEMBLE_ALGORITHM: EnsembleAlgorithm = 'avg_wave';

/** How the members of an ensemble are combined. */
export interface EnsembleMethod {
  readonly algorithm: EnsembleAlgorithm;
  /** One per member, in member order; absent: equal weights. */
  readonly weights?: readonly number[];
}

export function isEnsembleAlgorithm(name: string): name is EnsembleAlgorithm {
  return (ENSEMBLE_ALGORITHMS as readonly string[]).includes(name);
}

/** Whether an algorithm works on spectra (and so delays its output by a frame). */
export function isSpectral(algorithm: EnsembleAlgorithm): boolean {
  return !algorithm.endsWith('_wave');
}

/** Whether an algorithm uses weights (the others would ignore them, so giving some is refused). */
export function takesWeights(algorithm: EnsembleAlgorithm): boolean {
  return algorithm === 'avg_wave' || algorithm === 'avg_fft';
}

/**
 * `--ensemble` and `--ensemble-weights` checked against the member count: a known algorithm;
 * weights only where the algorithm uses them, one per member, finite, not negative, not all zero.
 */
export function parseEnsembleMethod(algorithm: string | undefined, weights: string | undefined, members: number): EnsembleMethod {
  const name = algorithm ?? DEFAULT_ENSEMBLE_ALGORITHM;
  if (!isEnsembleAlgorithm(name)) throw new StemsplitError('USAGE', `--ensemble must be one of ${ENSEMBLE_ALGORITHMS.join(', ')}, got "${name}"`);
  if (weights === undefined) return { algorithm: name };
  const values = weights.split(',').map((part) => Number(part.trim()));
  if (values.some((value) => !Number.isFinite(value) || value < 0))
    throw new StemsplitError('USAGE', `--ensemble-weights must be numbers ≥ 0, got "${weights}"`);
  const problem = ensembleWeightsProblem(name, values, members);
  if (problem !== undefined) throw new StemsplitError('USAGE', `--ensemble-weights ${problem}: "${weights}"`);
  return { algorithm: name, weights: values };
}

/** What is wrong with an ensemble's weights for its algorithm and members, after the weights' own name (a request's, a preset's), or undefined. */
export function ensembleWeightsProblem(algorithm: EnsembleAlgorithm, weights: readonly number[], members: number): string | undefined {
  if (weights.length !== members) return `needs one weight per model (${members}), got ${weights.length}`;
  if (!takesWeights(algorithm)) return `applies to avg_wave and avg_fft only (${algorithm} ignores weights)`;
  if (weights.every((weight) => weight === 0)) return 'must not all be 0';
  return undefined;
}

/** `max_wave`, `avg_fft with weights 3, 1`: a method in words, for the lines split and serve print. */
export function describeEnsembleMethod(method: EnsembleMethod): string {
  return `${method.algorithm}${method.weights ? ` with weights ${method.weights.join(', ')}` : ''}`;
}

/** The `*_wave` rule for one sample: `values` are the members' samples (reordered freely). */
export function combineSample(algorithm: EnsembleAlgorithm, values: Float64Array, weights: Float64Array, weightSum: number): number {
  switch (algorithm) {
    case 'avg_wave': {
      let sum = 0;
      for (let m = 0; m < values.length; m++) sum += (values[m] as number) * (weights[m] as number);
      return sum / weightSum;
    }
    case 'median_wave':
      return median(values);
    case 'min_wave':
      return values[extremeIndex(values, undefined, -1)] as number;
    case 'max_wave':
      return values[extremeIndex(values, undefined, 1)] as number;
    default:
      throw new Error(`${algorithm} is not a per-sample algorithm`);
  }
}

/** np.median: the middle value, or the mean of the two middle ones; sorts `values` in place. */
export function median(values: Float64Array): number {
  values.sort();
  const middle = values.length >> 1;
  return values.length % 2 === 1 ? (values[middle] as number) : ((values[middle - 1] as number) + (values[middle] as number)) / 2;
}

/**
 * Index of the least (`sign` −1) or greatest (+1) magnitude, the first on a tie (np.argmin,
 * np.argmax); magnitudes of complex values when `imag` is given, of real values otherwise.
 */
export function extremeIndex(real: Float64Array, imag: Float64Array | undefined, sign: 1 | -1): number {
  let best = 0;
  let bestMagnitude = -Infinity;
  for (let m = 0; m < real.length; m++) {
    const re = real[m] as number;
    const magnitude = sign * (imag === undefined ? Math.abs(re) : Math.hypot(re, imag[m] as number));
    if (magnitude > bestMagnitude) {
      best = m;
      bestMagnitude = magnitude;
    }
  }
  return best;
}

/** UVR's fold: member by member, the later one replaces the kept one when its magnitude is ≤ (min) or ≥ (max). */
export function uvrFoldIndex(real: Float64Array, imag: Float64Array, sign: 1 | -1): number {
  let kept = 0;
  let keptMagnitude = Math.hypot(real[0] as number, imag[0] as number);
  for (let m = 1; m < real.length; m++) {
    const magnitude = Math.hypot(real[m] as number, imag[m] as number);
    if (sign * magnitude >= sign * keptMagnitude) {
      kept = m;
      keptMagnitude = magnitude;
    }
  }
  return kept;
}
