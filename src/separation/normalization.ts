/**
 * Whole-track normalisation by the mono mix: its statistics, met in a first pass over the audio
 * (`NormalizationMeter`), and the mean and scale a normalising model's input is brought to, as
 * Demucs' apply_model normalises a track (its models were trained on input so scaled).
 */
/** The mono mix's normalisation: x' = (x - mean) / scale; identity when off. */
export interface Normalization {
  readonly mean: number;
  /** Standard deviation plus 1e-8, the divisor. */
  readonly scale: number;
}

export const IDENTITY: Normalization = { mean: 0, scale: 1 };

/** Mean of the mono mix and the sum of squared deviations from it, over `frames` frames. */
export interface TrackStatistics {
  readonly frames: number;
  readonly mean: number;
  readonly squares: number;
  /** The largest |sample| of either channel (python-audio-separator normalises by the peak). */
  readonly peak?: number;
}

/**
 * The mono mix's mean/std normalisation from its statistics: mean and unbiased std (plus 1e-8), as
 * float32 values like torch's tensors, as Demucs' apply_model computes them.
 */
export function monoMixNormalization(statistics: TrackStatistics): Normalization {
  const { frames, mean, squares } = statistics;
  const std = frames > 1 ? Math.sqrt(squares / (frames - 1)) : 0;
  return { mean: Math.fround(mean), scale: Math.fround(Math.fround(std) + 1e-8) };
}

/** The mono mix's statistics, met one block at a time (Welford's update in float64, as stable as a second pass). */
export class NormalizationMeter {
  #count = 0;
  #mean = 0;
  #squares = 0;
  #peak = 0;

  /** Adds interleaved stereo frames. */
  add(interleaved: Float32Array): void {
    for (let i = 0; i + 1 < interleaved.length; i += 2) {
      const left = interleaved[i] as number;
      const right = interleaved[i + 1] as number;
      this.#peak = Math.max(this.#peak, Math.abs(left), Math.abs(right));
      const mono = (left + right) / 2;
      this.#count++;
      const delta = mono - this.#mean;
      this.#mean += delta / this.#count;
      this.#squares += delta * (mono - this.#mean);
    }
  }

  get frames(): number {
    return this.#count;
  }

  statistics(): TrackStatistics {
    return { frames: this.#count, mean: this.#mean, squares: this.#squares, peak: this.#peak };
  }

  /** The mono mix's normalisation of what was met. */
  result(): Normalization {
    return monoMixNormalization(this.statistics());
  }
}
