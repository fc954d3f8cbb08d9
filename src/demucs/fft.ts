/**
 * In-place iterative radix-2 complex FFT on split real/imaginary float64 arrays.
 * One instance per size; tables are built once and reused for every frame.
 */
export class Fft {
  readonly size: number;
  private readonly bitReversed: Uint32Array;
  private readonly cos: Float64Array;
  private readonly sin: Float64Array;

  constructor(size: number) {
    if (size < 2 || (size & (size - 1)) !== 0) throw new Error(`FFT size must be a power of two, got ${size}`);
    this.size = size;
    const bits = Math.log2(size);
    this.bitReversed = new Uint32Array(size);
    for (let i = 0; i < size; i++) {
      let r = 0;
      for (let b = 0; b < bits; b++) r |= ((i >> b) & 1) << (bits - 1 - b);
      this.bitReversed[i] = r;
    }
    this.cos = new Float64Array(size / 2);
    this.sin = new Float64Array(size / 2);
    for (let k = 0; k < size / 2; k++) {
      this.cos[k] = Math.cos((2 * Math.PI * k) / size);
      this.sin[k] = Math.sin((2 * Math.PI * k) / size);
    }
  }

  /** Forward transform X[k] = Σ x[n]·e^(−2πikn/N). */
  forward(re: Float64Array, im: Float64Array): void {
    this.transform(re, im, -1);
  }

  /** Unscaled inverse x[n] = Σ X[k]·e^(+2πikn/N) (no 1/N). */
  inverse(re: Float64Array, im: Float64Array): void {
    this.transform(re, im, 1);
  }

  private transform(re: Float64Array, im: Float64Array, sign: 1 | -1): void {
    const n = this.size;
    const reversed = this.bitReversed;
    for (let i = 0; i < n; i++) {
      const j = reversed[i] as number;
      if (j > i) {
        const tr = re[i] as number;
        re[i] = re[j] as number;
        re[j] = tr;
        const ti = im[i] as number;
        im[i] = im[j] as number;
        im[j] = ti;
      }
    }
    // First stage (pairs) has the trivial twiddle 1.
    for (let a = 0; a < n; a += 2) {
      const br = re[a + 1] as number;
      const bi = im[a + 1] as number;
      const ar = re[a] as number;
      const ai = im[a] as number;
      re[a] = ar + br;
      im[a] = ai + bi;
      re[a + 1] = ar - br;
      im[a + 1] = ai - bi;
    }
    const cosTable = this.cos;
    const sinTable = this.sin;
    for (let half = 2; half < n; half <<= 1) {
      const step = n / (2 * half);
      // Twiddle outermost: each one is loaded once per stage.
      for (let k = 0; k < half; k++) {
        const wr = cosTable[k * step] as number;
        const wi = sign * (sinTable[k * step] as number);
        for (let a = k; a < n; a += 2 * half) {
          const b = a + half;
          const br = re[b] as number;
          const bi = im[b] as number;
          const tr = br * wr - bi * wi;
          const ti = br * wi + bi * wr;
          const ar = re[a] as number;
          const ai = im[a] as number;
          re[a] = ar + tr;
          im[a] = ai + ti;
          re[b] = ar - tr;
          im[b] = ai - ti;
        }
      }
    }
  }
}
