import { MixedRadixFft, radixFactors } from './mixed-radix-fft.js';

/**
 * Bin `k` of two real signals a and b that one complex `forward` transformed together as z = a + i·b
 * (two spectra for the price of one FFT): A[k] = (Z[k] + conj Z[N−k]) / 2 and B[k] = (Z[k] − conj Z[N−k]) / 2i,
 * written to `out` as [A.re, A.im, B.re, B.im]; `silent` (`silentParts`) writes zeros for a signal of zeros.
 */
export function unpackTwoReal(re: Float64Array, im: Float64Array, k: number, out: Float64Array, silent = 0): void {
  const mirror = k === 0 ? 0 : re.length - k;
  const zr = re[k] as number;
  const zi = im[k] as number;
  const mr = re[mirror] as number;
  const mi = im[mirror] as number;
  out[0] = silent & SILENT_FIRST ? 0 : (zr + mr) / 2;
  out[1] = silent & SILENT_FIRST ? 0 : (zi - mi) / 2;
  out[2] = silent & SILENT_SECOND ? 0 : (zi + mi) / 2;
  out[3] = silent & SILENT_SECOND ? 0 : (mr - zr) / 2;
}

/** `silentParts` bits: the first signal (packed as the real part) is all zeros; the second (the imaginary part) is. */
export const SILENT_FIRST = 1;
export const SILENT_SECOND = 2;

/**
 * Which of the two real signals packed into one complex transform (the first as `re`, the second
 * as `im`, read before the FFT) are all zeros, as `unpackTwoReal`'s `silent` bits. Splitting the
 * transform leaves ~1e-16 of one signal's spectrum in the other's; a silent one (padding, a frame
 * of digital silence, a muted channel) then comes out as exact zeros, as a transform of its own
 * gives: RMSNorm in a RoFormer scales such a residue up to 1e-2.
 */
export function silentParts(re: Float64Array, im: Float64Array): number {
  let silent = SILENT_FIRST | SILENT_SECOND;
  for (let n = 0; n < re.length && silent !== 0; n++) {
    if (re[n] !== 0) silent &= ~SILENT_FIRST;
    if (im[n] !== 0) silent &= ~SILENT_SECOND;
  }
  return silent;
}

/**
 * In-place complex FFT on split real/imaginary float64 arrays, one instance per size with
 * its tables built once. Sizes that are powers of four use radix-4 butterflies (half the
 * passes over the data of radix 2); other powers of two use radix 2. The early stages run
 * tile by tile (`FFT_TILE`), so a large transform's first passes stay in L1. Other sizes whose
 * only prime factors are 2, 3 and 5 (UVR's n_fft 5120, 6144, 7680) use a mixed-radix Stockham
 * transform (`MixedRadixFft`, one specialised loop per radix), exact to float64 rounding like
 * the others. `scripts/bench/fft.ts` times them.
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
    // The stages whose blocks fit in a tile run tile by tile, so the tile stays in L1 between them.
    const tile = Math.min(n, FFT_TILE);
    for (let base = 0; base < n; base += tile) {
      let stage = 1;
      for (let span = 4; 4 * span <= tile; span *= 4) radix4Butterflies(re, im, this.twiddles[stage++] as Float64Array, span, base, base + tile, conj);
    }
    let stage = 1;
    for (let span = 4; span < n; span *= 4, stage++) {
      if (4 * span > tile) radix4Butterflies(re, im, this.twiddles[stage] as Float64Array, span, 0, n, conj);
    }
  }

  private radix2Stages(re: Float64Array, im: Float64Array, conj: 1 | -1): void {
    const n = this.size;
    // As radix4Stages: the stages whose blocks fit in a tile run tile by tile.
    const tile = Math.min(n, FFT_TILE);
    for (let base = 0; base < n; base += tile) {
      let stage = 0;
      for (let half = 1; 2 * half <= tile; half *= 2) radix2Butterflies(re, im, this.twiddles[stage++] as Float64Array, half, base, base + tile, conj);
    }
    let stage = 0;
    for (let half = 1; half < n; half *= 2, stage++) {
      if (2 * half > tile) radix2Butterflies(re, im, this.twiddles[stage] as Float64Array, half, 0, n, conj);
    }
  }
}

/** One radix-2 stage (half-span `half`, twiddles `table`) over the blocks of [from, to). */
function radix2Butterflies(re: Float64Array, im: Float64Array, table: Float64Array, half: number, from: number, to: number, conj: 1 | -1): void {
  for (let k = 0; k < half; k++) {
    const wr = table[2 * k] as number;
    const wi = conj * (table[2 * k + 1] as number);
    for (let a = from + k; a < to; a += 2 * half) {
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

/**
 * Elements (re and im float64: 16 bytes each) the early stages work on at a time: 32 KB, a
 * typical L1 data cache, where a whole 4096- or 8192-point signal (64 or 128 KB) is not.
 */
const FFT_TILE = 2048;

/** One radix-4 stage (span `span`, twiddles `table`) over the blocks of [from, to). */
function radix4Butterflies(re: Float64Array, im: Float64Array, table: Float64Array, span: number, from: number, to: number, conj: 1 | -1): void {
  const block = 4 * span;
  for (let j = 0; j < span; j++) {
    const w1r = table[6 * j] as number;
    const w1i = conj * (table[6 * j + 1] as number);
    const w2r = table[6 * j + 2] as number;
    const w2i = conj * (table[6 * j + 3] as number);
    const w3r = table[6 * j + 4] as number;
    const w3i = conj * (table[6 * j + 5] as number);
    for (let i0 = from + j; i0 < to; i0 += block) {
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
