/**
 * One output stem of an ensemble, combined as its members' blocks arrive: every member's
 * planar [2, n] block of the same stretch of the track goes in together, and the settled
 * planar [2, m] output comes out (m = n for the `*_wave` rules; the spectral ones hold back
 * up to a frame until its neighbour has arrived).
 */
import { combineSample, isSpectral, type EnsembleAlgorithm } from './algorithms.js';
import { SpectralCombiner } from './spectral.js';
import type { StemCombiner } from './stem-combiner.js';

/**
 * The combiner of a stem made by members with these `weights` over a track of `length`
 * samples. A stem only one member makes is that member's stem as it is (as `Ensembler`
 * returns a lone waveform), whatever the algorithm.
 */
export function stemCombiner(algorithm: EnsembleAlgorithm, weights: readonly number[], length: number): StemCombiner {
  if (weights.length === 1) return new PassThrough();
  return isSpectral(algorithm) ? new SpectralCombiner(algorithm, weights, length) : new SampleCombiner(algorithm, weights);
}

class PassThrough implements StemCombiner {
  push(inputs: readonly Float32Array[], frames: number): Float32Array {
    return (inputs[0] as Float32Array).slice(0, 2 * frames);
  }

  finish(): Float32Array {
    return new Float32Array(0);
  }
}

/** The `*_wave` rules, sample by sample (float64 sums, rounded once to float32). */
class SampleCombiner implements StemCombiner {
  readonly #algorithm: EnsembleAlgorithm;
  readonly #weights: Float64Array;
  readonly #weightSum: number;
  readonly #values: Float64Array;

  constructor(algorithm: EnsembleAlgorithm, weights: readonly number[]) {
    this.#algorithm = algorithm;
    this.#weights = Float64Array.from(weights);
    this.#weightSum = weights.reduce((sum, weight) => sum + weight, 0);
    this.#values = new Float64Array(weights.length);
  }

  push(inputs: readonly Float32Array[], frames: number): Float32Array {
    const out = new Float32Array(2 * frames);
    for (let i = 0; i < 2 * frames; i++) {
      for (let m = 0; m < inputs.length; m++) this.#values[m] = (inputs[m] as Float32Array)[i] as number;
      out[i] = combineSample(this.#algorithm, this.#values, this.#weights, this.#weightSum);
    }
    return out;
  }

  finish(): Float32Array {
    return new Float32Array(0);
  }
}
