/** The analysis windows the STFTs share. */

/**
 * The periodic Hann window of `size` samples, 0.5 − 0.5·cos(2πn / size): torch.hann_window's default,
 * scipy's `get_window('hann')` and so librosa's.
 */
export function periodicHann(size: number): Float64Array {
  return Float64Array.from({ length: size }, (_, n) => 0.5 - 0.5 * Math.cos((2 * Math.PI * n) / size));
}
