/**
 * In-place complex FFT on split real/imaginary float64 arrays, one instance per size with
 * its tables built once. Sizes that are powers of four use radix-4 butterflies (half the
 * passes over the data of radix 2); other powers of two use radix 2. Other sizes whose only
 * prime factors are 2, 3 and 5 (UVR's n_fft 5120, 6144, 7680) use a mixed-radix Stockham
 * transform (`MixedRadixFft`), exact to float64 rounding like the others.
 */
export class Fft {
  readonly size: number;
  private readonly radix4: boolean;
  private readonly permutation: Uint32Array;
  /** Radix 4: per stage, for each j, the twiddles w^j, w^2j, w^3j (re, im interleaved). Radix 2: w^k. */
  private readonly twiddles: Float64Array[];
  /** Set for sizes that are not powers of two. */
  private readonly mixed: MixedRadixFft | undefined;

  /** Whether `Fft` takes `size`: a whole number ≥ 4 with no prime factor but 2, 3 and 5. */
  static supports(size: number): boolean {
    return Number.isInteger(size) && size >= 4 && radixFactors(size) !== undefined;
  }

  constructor(size: number) {
    if (!Fft.supports(size)) throw new Error(`FFT size must be a whole number ≥ 4 with no prime factor but 2, 3 and 5, got ${size}`);
    this.size = size;
    if ((size & (size - 1)) !== 0) {
      this.mixed = new MixedRadixFft(size, radixFactors(size) as number[]);
      this.radix4 = false;
      this.permutation = new Uint32Array(0);
      this.twiddles = [];
      return;
    }
    this.mixed = undefined;
    const bits = Math.log2(size);
    this.radix4 = bits % 2 === 0;
    this.permutation = this.radix4 ? digitReversal(size, 2, bits / 2) : digitReversal(size, 1, bits);
    this.twiddles = [];
    if (this.radix4) {
      for (let span = 1; span < size; span *= 4) {
        const table = new Float64Array(6 * span);
        for (let j = 0; j < span; j++) {
          for (let m = 1; m <= 3; m++) {
            const angle = (-2 * Math.PI * m * j) / (4 * span);
            table[6 * j + 2 * (m - 1)] = Math.cos(angle);
            table[6 * j + 2 * (m - 1) + 1] = Math.sin(angle);
          }
        }
        this.twiddles.push(table);
      }
    } else {
      for (let half = 1; half < size; half *= 2) {
        const table = new Float64Array(2 * half);
        for (let k = 0; k < half; k++) {
          table[2 * k] = Math.cos((-Math.PI * k) / half);
          table[2 * k + 1] = Math.sin((-Math.PI * k) / half);
        }
        this.twiddles.push(table);
      }
    }
  }

  /** Forward transform X[k] = Σ x[n]·e^(−2πikn/N). */
  forward(re: Float64Array, im: Float64Array): void {
    this.transform(re, im, 1);
  }

  /** Unscaled inverse x[n] = Σ X[k]·e^(+2πikn/N) (no 1/N). */
  inverse(re: Float64Array, im: Float64Array): void {
    this.transform(re, im, -1);
  }

  /** `conj` = −1 conjugates every twiddle, which turns the forward transform into the inverse. */
  private transform(re: Float64Array, im: Float64Array, conj: 1 | -1): void {
    if (this.mixed) return this.mixed.transform(re, im, conj);
    permute(re, im, this.permutation);
    if (this.radix4) this.radix4Stages(re, im, conj);
    else this.radix2Stages(re, im, conj);
  }

  private radix4Stages(re: Float64Array, im: Float64Array, conj: 1 | -1): void {
    const n = this.size;
    firstRadix4Stage(re, im, conj);
    let stage = 1;
    for (let span = 4; span < n; span *= 4) {
      const table = this.twiddles[stage++] as Float64Array;
      const block = 4 * span;
      for (let j = 0; j < span; j++) {
        const w1r = table[6 * j] as number;
        const w1i = conj * (table[6 * j + 1] as number);
        const w2r = table[6 * j + 2] as number;
        const w2i = conj * (table[6 * j + 3] as number);
        const w3r = table[6 * j + 4] as number;
        const w3i = conj * (table[6 * j + 5] as number);
        for (let i0 = j; i0 < n; i0 += block) {
          const i1 = i0 + span;
          const i2 = i1 + span;
          const i3 = i2 + span;
          const a0r = re[i0] as number;
          const a0i = im[i0] as number;
          const x1r = re[i1] as number;
          const x1i = im[i1] as number;
          const x2r = re[i2] as number;
          const x2i = im[i2] as number;
          const x3r = re[i3] as number;
          const x3i = im[i3] as number;
          const a1r = x1r * w1r - x1i * w1i;
          const a1i = x1r * w1i + x1i * w1r;
          const a2r = x2r * w2r - x2i * w2i;
          const a2i = x2r * w2i + x2i * w2r;
          const a3r = x3r * w3r - x3i * w3i;
          const a3i = x3r * w3i + x3i * w3r;
          const t0r = a0r + a2r;
          const t0i = a0i + a2i;
          const t1r = a0r - a2r;
          const t1i = a0i - a2i;
          const t2r = a1r + a3r;
          const t2i = a1i + a3i;
          // (a1 − a3) times −i (forward) or +i (inverse).
          const t3r = conj * (a1i - a3i);
          const t3i = -conj * (a1r - a3r);
          re[i0] = t0r + t2r;
          im[i0] = t0i + t2i;
          re[i1] = t1r + t3r;
          im[i1] = t1i + t3i;
          re[i2] = t0r - t2r;
          im[i2] = t0i - t2i;
          re[i3] = t1r - t3r;
          im[i3] = t1i - t3i;
        }
      }
    }
  }

  private radix2Stages(re: Float64Array, im: Float64Array, conj: 1 | -1): void {
    const n = this.size;
    let stage = 0;
    for (let half = 1; half < n; half *= 2) {
      const table = this.twiddles[stage++] as Float64Array;
      for (let k = 0; k < half; k++) {
        const wr = table[2 * k] as number;
        const wi = conj * (table[2 * k + 1] as number);
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

/** The first radix-4 stage: all twiddles are 1, so each butterfly is adds only. */
function firstRadix4Stage(re: Float64Array, im: Float64Array, conj: 1 | -1): void {
  for (let i0 = 0; i0 < re.length; i0 += 4) {
    const a0r = re[i0] as number;
    const a0i = im[i0] as number;
    const a1r = re[i0 + 1] as number;
    const a1i = im[i0 + 1] as number;
    const a2r = re[i0 + 2] as number;
    const a2i = im[i0 + 2] as number;
    const a3r = re[i0 + 3] as number;
    const a3i = im[i0 + 3] as number;
    const t0r = a0r + a2r;
    const t0i = a0i + a2i;
    const t1r = a0r - a2r;
    const t1i = a0i - a2i;
    const t2r = a1r + a3r;
    const t2i = a1i + a3i;
    const t3r = conj * (a1i - a3i);
    const t3i = -conj * (a1r - a3r);
    re[i0] = t0r + t2r;
    im[i0] = t0i + t2i;
    re[i0 + 1] = t1r + t3r;
    im[i0 + 1] = t1i + t3i;
    re[i0 + 2] = t0r - t2r;
    im[i0 + 2] = t0i - t2i;
    re[i0 + 3] = t1r - t3r;
    im[i0 + 3] = t1i - t3i;
  }
}

/** Index permutation reversing the base-2^digitBits digits of each index. */
function digitReversal(size: number, digitBits: number, digits: number): Uint32Array {
  const mask = (1 << digitBits) - 1;
  const table = new Uint32Array(size);
  for (let i = 0; i < size; i++) {
    let reversed = 0;
    for (let d = 0; d < digits; d++) reversed = (reversed << digitBits) | ((i >> (d * digitBits)) & mask);
    table[i] = reversed;
  }
  return table;
}

function permute(re: Float64Array, im: Float64Array, permutation: Uint32Array): void {
  for (let i = 0; i < permutation.length; i++) {
    const j = permutation[i] as number;
    if (j > i) {
      const tr = re[i] as number;
      re[i] = re[j] as number;
      re[j] = tr;
      const ti = im[i] as number;
      im[i] = im[j] as number;
      im[j] = ti;
    }
  }
}

/** Radices for `size` (4s first, then 2, 3, 5), or undefined when another prime divides it. */
function radixFactors(size: number): number[] | undefined {
  const factors: number[] = [];
  let rest = size;
  for (const radix of [4, 2, 3, 5]) {
    while (rest % radix === 0) {
      factors.push(radix);
      rest /= radix;
    }
  }
  return rest === 1 ? factors : undefined;
}

/**
 * Stockham autosort FFT (decimation in time) with one radix per stage: stage s with radix R,
 * after the earlier stages' product P, reads x[j + r·N/R], multiplies by w^(r·(j mod P)) with
 * w = e^(−2πi/(P·R)), takes the R-point DFT and writes it at (j − j mod P)·R + j mod P + r·P.
 * No bit reversal; two buffers ping-pong.
 */
class MixedRadixFft {
  /** Per stage: for each j mod P and r in 1..R−1, cos and sin of −2π·r·(j mod P)/(P·R), interleaved. */
  private readonly stageTwiddles: Float64Array[];
  private readonly scratchRe: Float64Array;
  private readonly scratchIm: Float64Array;
  /** cos and sin of −2πk/R for the generic small DFTs (3 and 5), per radix. */
  private readonly roots = new Map<number, Float64Array>();
  private readonly vr = new Float64Array(5);
  private readonly vi = new Float64Array(5);

  constructor(
    private readonly size: number,
    private readonly radices: readonly number[],
  ) {
    this.scratchRe = new Float64Array(size);
    this.scratchIm = new Float64Array(size);
    this.stageTwiddles = [];
    let product = 1;
    for (const radix of radices) {
      const table = new Float64Array(2 * product * (radix - 1));
      for (let s = 0; s < product; s++) {
        for (let r = 1; r < radix; r++) {
          const angle = (-2 * Math.PI * r * s) / (product * radix);
          table[2 * (s * (radix - 1) + r - 1)] = Math.cos(angle);
          table[2 * (s * (radix - 1) + r - 1) + 1] = Math.sin(angle);
        }
      }
      this.stageTwiddles.push(table);
      if (radix === 3 || radix === 5) {
        const roots = new Float64Array(2 * radix);
        for (let k = 0; k < radix; k++) {
          roots[2 * k] = Math.cos((-2 * Math.PI * k) / radix);
          roots[2 * k + 1] = Math.sin((-2 * Math.PI * k) / radix);
        }
        this.roots.set(radix, roots);
      }
      product *= radix;
    }
  }

  transform(re: Float64Array, im: Float64Array, conj: 1 | -1): void {
    let fromRe = re;
    let fromIm = im;
    let toRe = this.scratchRe;
    let toIm = this.scratchIm;
    let product = 1;
    for (const [stage, radix] of this.radices.entries()) {
      this.stage(radix, product, this.stageTwiddles[stage] as Float64Array, fromRe, fromIm, toRe, toIm, conj);
      [fromRe, toRe] = [toRe, fromRe];
      [fromIm, toIm] = [toIm, fromIm];
      product *= radix;
    }
    if (fromRe !== re) {
      re.set(fromRe);
      im.set(fromIm);
    }
  }

  private stage(
    radix: number,
    product: number,
    table: Float64Array,
    srcRe: Float64Array,
    srcIm: Float64Array,
    dstRe: Float64Array,
    dstIm: Float64Array,
    conj: 1 | -1,
  ): void {
    const { vr, vi } = this;
    const stride = this.size / radix;
    for (let j = 0; j < stride; j++) {
      const s = j % product;
      const twiddle = 2 * s * (radix - 1);
      vr[0] = srcRe[j] as number;
      vi[0] = srcIm[j] as number;
      for (let r = 1; r < radix; r++) {
        const xr = srcRe[j + r * stride] as number;
        const xi = srcIm[j + r * stride] as number;
        const wr = table[twiddle + 2 * (r - 1)] as number;
        const wi = conj * (table[twiddle + 2 * (r - 1) + 1] as number);
        vr[r] = xr * wr - xi * wi;
        vi[r] = xr * wi + xi * wr;
      }
      const to = (j - s) * radix + s;
      if (radix === 4) this.dft4(dstRe, dstIm, to, product, conj);
      else if (radix === 2) {
        dstRe[to] = (vr[0] as number) + (vr[1] as number);
        dstIm[to] = (vi[0] as number) + (vi[1] as number);
        dstRe[to + product] = (vr[0] as number) - (vr[1] as number);
        dstIm[to + product] = (vi[0] as number) - (vi[1] as number);
      } else this.dftSmall(radix, dstRe, dstIm, to, product, conj);
    }
  }

  /** The 4-point DFT of vr/vi written at to + k·gap. */
  private dft4(dstRe: Float64Array, dstIm: Float64Array, to: number, gap: number, conj: 1 | -1): void {
    const { vr, vi } = this;
    const t0r = (vr[0] as number) + (vr[2] as number);
    const t0i = (vi[0] as number) + (vi[2] as number);
    const t1r = (vr[0] as number) - (vr[2] as number);
    const t1i = (vi[0] as number) - (vi[2] as number);
    const t2r = (vr[1] as number) + (vr[3] as number);
    const t2i = (vi[1] as number) + (vi[3] as number);
    // (v1 − v3) times −i (forward) or +i (inverse).
    const t3r = conj * ((vi[1] as number) - (vi[3] as number));
    const t3i = -conj * ((vr[1] as number) - (vr[3] as number));
    dstRe[to] = t0r + t2r;
    dstIm[to] = t0i + t2i;
    dstRe[to + gap] = t1r + t3r;
    dstIm[to + gap] = t1i + t3i;
    dstRe[to + 2 * gap] = t0r - t2r;
    dstIm[to + 2 * gap] = t0i - t2i;
    dstRe[to + 3 * gap] = t1r - t3r;
    dstIm[to + 3 * gap] = t1i - t3i;
  }

  /** The R-point DFT (R = 3 or 5) of vr/vi by its definition, written at to + k·gap. */
  private dftSmall(radix: number, dstRe: Float64Array, dstIm: Float64Array, to: number, gap: number, conj: 1 | -1): void {
    const { vr, vi } = this;
    const roots = this.roots.get(radix) as Float64Array;
    for (let k = 0; k < radix; k++) {
      let sr = vr[0] as number;
      let si = vi[0] as number;
      for (let r = 1; r < radix; r++) {
        const at = 2 * ((r * k) % radix);
        const wr = roots[at] as number;
        const wi = conj * (roots[at + 1] as number);
        sr += (vr[r] as number) * wr - (vi[r] as number) * wi;
        si += (vr[r] as number) * wi + (vi[r] as number) * wr;
      }
      dstRe[to + k * gap] = sr;
      dstIm[to + k * gap] = si;
    }
  }
}
