/**
 * The mixed-radix FFT `Fft` uses for sizes that are not powers of two (products of 2, 3 and 5,
 * e.g. VR's and MDX-Net's window sizes): a Stockham autosort transform, one specialised loop per
 * radix. Split from fft.ts, which keeps the radix-2/4 path and the real-signal helpers.
 */
/** Radices for `size` (4s first, then 2, 3, 5), or undefined when another prime divides it. */
export function radixFactors(size: number): number[] | undefined {
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
export class MixedRadixFft {
  /** Per stage: for each j mod P and r in 1..R−1, cos and sin of −2π·r·(j mod P)/(P·R), interleaved. */
  private readonly stageTwiddles: Float64Array[];
  private readonly scratchRe: Float64Array;
  private readonly scratchIm: Float64Array;

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
    (STOCKHAM_STAGES[radix] as StockhamStage)(srcRe, srcIm, dstRe, dstIm, this.size / radix, product, table, conj);
  }
}

/**
 * One Stockham stage of radix R over the whole signal: for j = g·P + s (P the earlier radices'
 * product), reads x[j + r·stride] for r < R, multiplies input r by the stage's twiddle r for s,
 * and writes the R-point DFT at g·R + s + k·P. One function per radix keeps each loop's
 * butterfly inlined.
 */
type StockhamStage = (
  srcRe: Float64Array,
  srcIm: Float64Array,
  dstRe: Float64Array,
  dstIm: Float64Array,
  stride: number,
  product: number,
  table: Float64Array,
  conj: 1 | -1,
) => void;

const radix2Stage: StockhamStage = (srcRe, srcIm, dstRe, dstIm, stride, product, table, conj) => {
  for (let g = 0; g < stride; g += product) {
    for (let s = 0; s < product; s++) {
      const j = g + s;
      const to = 2 * g + s;
      const wr = table[2 * s] as number;
      const wi = conj * (table[2 * s + 1] as number);
      const xr = srcRe[j + stride] as number;
      const xi = srcIm[j + stride] as number;
      const ar = xr * wr - xi * wi;
      const ai = xr * wi + xi * wr;
      const br = srcRe[j] as number;
      const bi = srcIm[j] as number;
      dstRe[to] = br + ar;
      dstIm[to] = bi + ai;
      dstRe[to + product] = br - ar;
      dstIm[to + product] = bi - ai;
    }
  }
};

const radix4Stage: StockhamStage = (srcRe, srcIm, dstRe, dstIm, stride, product, table, conj) => {
  for (let g = 0; g < stride; g += product) {
    for (let s = 0; s < product; s++) {
      const j = g + s;
      const to = 4 * g + s;
      const w = 6 * s;
      const w1r = table[w] as number;
      const w1i = conj * (table[w + 1] as number);
      const w2r = table[w + 2] as number;
      const w2i = conj * (table[w + 3] as number);
      const w3r = table[w + 4] as number;
      const w3i = conj * (table[w + 5] as number);
      const x1r = srcRe[j + stride] as number;
      const x1i = srcIm[j + stride] as number;
      const x2r = srcRe[j + 2 * stride] as number;
      const x2i = srcIm[j + 2 * stride] as number;
      const x3r = srcRe[j + 3 * stride] as number;
      const x3i = srcIm[j + 3 * stride] as number;
      const a0r = srcRe[j] as number;
      const a0i = srcIm[j] as number;
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
      dstRe[to] = t0r + t2r;
      dstIm[to] = t0i + t2i;
      dstRe[to + product] = t1r + t3r;
      dstIm[to + product] = t1i + t3i;
      dstRe[to + 2 * product] = t0r - t2r;
      dstIm[to + 2 * product] = t0i - t2i;
      dstRe[to + 3 * product] = t1r - t3r;
      dstIm[to + 3 * product] = t1i - t3i;
    }
  }
};

const SIN_60 = Math.sqrt(3) / 2;

const radix3Stage: StockhamStage = (srcRe, srcIm, dstRe, dstIm, stride, product, table, conj) => {
  for (let g = 0; g < stride; g += product) {
    for (let s = 0; s < product; s++) {
      const j = g + s;
      const to = 3 * g + s;
      const w = 4 * s;
      const w1r = table[w] as number;
      const w1i = conj * (table[w + 1] as number);
      const w2r = table[w + 2] as number;
      const w2i = conj * (table[w + 3] as number);
      const x1r = srcRe[j + stride] as number;
      const x1i = srcIm[j + stride] as number;
      const x2r = srcRe[j + 2 * stride] as number;
      const x2i = srcIm[j + 2 * stride] as number;
      const a0r = srcRe[j] as number;
      const a0i = srcIm[j] as number;
      const a1r = x1r * w1r - x1i * w1i;
      const a1i = x1r * w1i + x1i * w1r;
      const a2r = x2r * w2r - x2i * w2i;
      const a2i = x2r * w2i + x2i * w2r;
      const sr = a1r + a2r;
      const si = a1i + a2i;
      const mr = a0r - 0.5 * sr;
      const mi = a0i - 0.5 * si;
      // ∓i·sin 60°·(a1 − a2): −i forward, +i inverse.
      const dr = conj * SIN_60 * (a1i - a2i);
      const di = -conj * SIN_60 * (a1r - a2r);
      dstRe[to] = a0r + sr;
      dstIm[to] = a0i + si;
      dstRe[to + product] = mr + dr;
      dstIm[to + product] = mi + di;
      dstRe[to + 2 * product] = mr - dr;
      dstIm[to + 2 * product] = mi - di;
    }
  }
};

const COS_72 = Math.cos((2 * Math.PI) / 5);
const COS_144 = Math.cos((4 * Math.PI) / 5);
const SIN_72 = Math.sin((2 * Math.PI) / 5);
const SIN_144 = Math.sin((4 * Math.PI) / 5);

const radix5Stage: StockhamStage = (srcRe, srcIm, dstRe, dstIm, stride, product, table, conj) => {
  for (let g = 0; g < stride; g += product) {
    for (let s = 0; s < product; s++) {
      const j = g + s;
      const to = 5 * g + s;
      const w = 8 * s;
      const w1r = table[w] as number;
      const w1i = conj * (table[w + 1] as number);
      const w2r = table[w + 2] as number;
      const w2i = conj * (table[w + 3] as number);
      const w3r = table[w + 4] as number;
      const w3i = conj * (table[w + 5] as number);
      const w4r = table[w + 6] as number;
      const w4i = conj * (table[w + 7] as number);
      const x1r = srcRe[j + stride] as number;
      const x1i = srcIm[j + stride] as number;
      const x2r = srcRe[j + 2 * stride] as number;
      const x2i = srcIm[j + 2 * stride] as number;
      const x3r = srcRe[j + 3 * stride] as number;
      const x3i = srcIm[j + 3 * stride] as number;
      const x4r = srcRe[j + 4 * stride] as number;
      const x4i = srcIm[j + 4 * stride] as number;
      const a0r = srcRe[j] as number;
      const a0i = srcIm[j] as number;
      const a1r = x1r * w1r - x1i * w1i;
      const a1i = x1r * w1i + x1i * w1r;
      const a2r = x2r * w2r - x2i * w2i;
      const a2i = x2r * w2i + x2i * w2r;
      const a3r = x3r * w3r - x3i * w3i;
      const a3i = x3r * w3i + x3i * w3r;
      const a4r = x4r * w4r - x4i * w4i;
      const a4i = x4r * w4i + x4i * w4r;
      const b1r = a1r + a4r;
      const b1i = a1i + a4i;
      const b2r = a2r + a3r;
      const b2i = a2i + a3i;
      const d1r = a1r - a4r;
      const d1i = a1i - a4i;
      const d2r = a2r - a3r;
      const d2i = a2i - a3i;
      // X1, X4 = a0 + cos72·b1 + cos144·b2 ∓ i·(sin72·d1 + sin144·d2); X2, X3 the same with the angles doubled.
      const m1r = a0r + COS_72 * b1r + COS_144 * b2r;
      const m1i = a0i + COS_72 * b1i + COS_144 * b2i;
      const m2r = a0r + COS_144 * b1r + COS_72 * b2r;
      const m2i = a0i + COS_144 * b1i + COS_72 * b2i;
      const e1r = conj * (SIN_72 * d1i + SIN_144 * d2i);
      const e1i = -conj * (SIN_72 * d1r + SIN_144 * d2r);
      const e2r = conj * (SIN_144 * d1i - SIN_72 * d2i);
      const e2i = -conj * (SIN_144 * d1r - SIN_72 * d2r);
      dstRe[to] = a0r + b1r + b2r;
      dstIm[to] = a0i + b1i + b2i;
      dstRe[to + product] = m1r + e1r;
      dstIm[to + product] = m1i + e1i;
      dstRe[to + 2 * product] = m2r + e2r;
      dstIm[to + 2 * product] = m2i + e2i;
      dstRe[to + 3 * product] = m2r - e2r;
      dstIm[to + 3 * product] = m2i - e2i;
      dstRe[to + 4 * product] = m1r - e1r;
      dstIm[to + 4 * product] = m1i - e1i;
    }
  }
};

const STOCKHAM_STAGES: Readonly<Record<number, StockhamStage>> = { 2: radix2Stage, 3: radix3Stage, 4: radix4Stage, 5: radix5Stage };
