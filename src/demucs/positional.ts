/**
 * The transformer's fixed sinusoidal position embeddings (demucs/transformer.py), computed
 * with float32 rounding at each step as PyTorch does, so phases of large positions match.
 */
const f32 = Math.fround;

/**
 * 1-D embedding for `length` positions, [length, dim] row-major:
 * cos(pos / period^(i / (dim/2 − 1))) for i < dim/2, then the sines.
 */
export function sinEmbedding(length: number, dim: number, maxPeriod: number): Float32Array {
  const half = dim / 2;
  const out = new Float32Array(length * dim);
  const divisors = Array.from({ length: half }, (_, i) => f32(maxPeriod ** f32(i / (half - 1))));
  for (let pos = 0; pos < length; pos++) {
    for (let i = 0; i < half; i++) {
      const phase = f32(pos / (divisors[i] as number));
      out[pos * dim + i] = Math.cos(phase);
      out[pos * dim + half + i] = Math.sin(phase);
    }
  }
  return out;
}

/**
 * 2-D embedding for a [height = freqs, width = frames] grid, returned in token order
 * (token = frame · height + freq) as [width · height, dim]. The first half of the channels
 * encodes the frame (sin at even, cos at odd channels), the second half the frequency.
 */
export function sin2dEmbedding(dim: number, height: number, width: number, maxPeriod: number): Float32Array {
  const half = dim / 2;
  const terms = half / 2;
  const factor = f32(-(Math.log(maxPeriod) / half));
  const divTerm = Array.from({ length: terms }, (_, i) => f32(Math.exp(f32(2 * i * factor))));
  const out = new Float32Array(width * height * dim);
  for (let w = 0; w < width; w++) {
    for (let h = 0; h < height; h++) {
      const row = (w * height + h) * dim;
      for (let i = 0; i < terms; i++) {
        const div = divTerm[i] as number;
        const phaseW = f32(w * div);
        const phaseH = f32(h * div);
        out[row + 2 * i] = Math.sin(phaseW);
        out[row + 2 * i + 1] = Math.cos(phaseW);
        out[row + half + 2 * i] = Math.sin(phaseH);
        out[row + half + 2 * i + 1] = Math.cos(phaseH);
      }
    }
  }
  return out;
}
