/**
 * libsoxr's "HQ" resampler (20-bit precision, linear phase, small roll-off) as python-soxr's
 * `resample` runs it for librosa's default `res_type="soxr_hq"`: the VR separator brings the
 * stems of params not at 44.1 kHz back to 44.1 kHz with it.
 *
 * soxr splits a ratio into stages (cr.c `_soxr_init`); for the ratios VR params need there are no
 * half-band stages and no post stage, only
 * - a "pre" stage: an FFT-convolved FIR upsampling by L and keeping every M-th sample, and
 * - for ratios a small L/M cannot express, an "arb" stage: a rational polyphase FIR.
 * Each stage's filter is soxr's own design (filter.c `lsx_design_lpf`: a Kaiser-windowed sinc
 * whose β and length come from soxr's fitted formulas), and each stage is zero-phase: output k
 * is the filter centred on input position k·M/L, the input zero outside the track (soxr preloads
 * its FIFOs with zeros and flushes with zeros). The track gives round(n·out/in) samples.
 *
 * soxr's HQ engine computes in float32 (cr32s: float FIFOs, float coefficients, pffft): here the
 * input, each stage's coefficients and each stage's output are rounded to float32, and the sums
 * are taken in float64, so the result differs from soxr's by float32 rounding noise only.
 */
import { StemsplitError } from '../errors.js';
import { besselI0 } from './resample-math.js';
import { chained, fixedLength, OutputBuffer, SampleWindow, type ChannelResampler } from './resample-stream.js';

const f32 = Math.fround;

/** 20·log10(x). */
function linearToDb(x: number): number {
  return Math.log10(x) * 20;
}

/** soxr_quality_spec(SOXR_HQ, 0): 20 bits, pass band to 1 − 0.05 / (the −3 dB point's distance), stop band at 1. */
const PRECISION_BITS = 20;
/** cr.c: attenuation = (bits + 1)·6.02 dB ("+1: pass+stop"). */
const BASE_ATTENUATION = (PRECISION_BITS + 1) * linearToDb(2);
/** cr.c's "mode" for 20 bits: ((int)ceil(bits) − 6) / 4. */
const MODE = Math.trunc((PRECISION_BITS - 6) / 4);
/** cr.c `rolloffs[rolloff_small]`. */
const ROLLOFF_SMALL = -0.01;
/** cr.c's bound on the arb stage's coefficient table (soxr_runtime_spec: 400 kB). */
const COEF_SIZE_KBYTES = 400;
const FLOAT_BYTES = 4;
const MULT32 = 4294967296;

/** filter.c's sine-based fits of a Kaiser filter's response (`sinePhi`, `sinePsi`, `sinePow`). */
function sinePhi(x: number): number {
  return ((2.0517e-7 * x - 1.1303e-4) * x + 0.023154) * x + 0.55924;
}

function sinePow(x: number): number {
  return Math.log(0.5) / Math.log(Math.sin(x * 0.5));
}

/** filter.c `lsx_inv_f_resp`: where (as a fraction of the transition band) a filter of attenuation `a` has dropped by `drop` dB. */
function inverseFrequencyResponse(drop: number, a: number): number {
  const x = sinePhi(a);
  const linear = Math.exp(drop * (Math.LN10 * 0.05));
  const s = linear > 0.5 ? 1 - linear : linear;
  const t = Math.asin(s ** (1 / sinePow(x))) / x;
  return linear > 0.5 ? t : 1 - t;
}

/** soxr_quality_spec's pass-band end for HQ: 1 − 0.05 / lsx_to_3dB(precision·6.02 dB). */
const PASSBAND_END = 1 - 0.05 / (1 - inverseFrequencyResponse(-3, PRECISION_BITS * linearToDb(2)));
const STOPBAND_BEGIN = 1;

/** filter.c `lsx_kaiser_beta`: β for attenuation `att` (dB) and transition width `trBw`, from soxr's fitted cubics (att ≥ 60). */
const KAISER_BETA_FITS: readonly (readonly [number, number, number, number])[] = [
  [-6.784957e-10, 1.02856e-5, 0.1087556, -0.8988365 + 0.001],
  [-6.897885e-10, 1.027433e-5, 0.10876, -0.8994658 + 0.002],
  [-1.000683e-9, 1.030092e-5, 0.1087677, -0.9007898 + 0.003],
  [-3.654474e-10, 1.040631e-5, 0.1087085, -0.8977766 + 0.006],
  [8.106988e-9, 6.983091e-6, 0.1091387, -0.9172048 + 0.015],
  [9.519571e-9, 7.272678e-6, 0.1090068, -0.9140768 + 0.025],
  [-5.626821e-9, 1.342186e-5, 0.1083999, -0.9065452 + 0.05],
  [-9.965946e-8, 5.073548e-5, 0.1040967, -0.7672778 + 0.085],
  [1.604808e-7, -5.856462e-5, 0.1185998, -1.34824 + 0.1],
  [-1.511964e-7, 6.363034e-5, 0.1064627, -0.9876665 + 0.18],
];

function kaiserBeta(att: number, trBw: number): number {
  if (att < 60) throw new StemsplitError('SEPARATION_FAILED', `soxr design below 60 dB (${att}) is not reproduced`);
  const realm = Math.log(trBw / 0.0005) / Math.log(2);
  const last = KAISER_BETA_FITS.length - 1;
  const c0 = KAISER_BETA_FITS[Math.min(Math.max(Math.trunc(realm), 0), last)] as readonly number[];
  const c1 = KAISER_BETA_FITS[Math.min(Math.max(1 + Math.trunc(realm), 0), last)] as readonly number[];
  const cubic = (c: readonly number[]): number => (((c[0] as number) * att + (c[1] as number)) * att + (c[2] as number)) * att + (c[3] as number);
  const b0 = cubic(c0);
  const b1 = cubic(c1);
  return b0 + (b1 - b0) * (realm - Math.trunc(realm));
}

interface LowPass {
  readonly taps: number;
  readonly cutoff: number;
  readonly beta: number;
  readonly rho: number;
  readonly scale: number;
}

/**
 * filter.c `lsx_design_lpf` without making the filter: its length (estimated when `taps` is 0,
 * then rounded to 1 mod `modulo`, or to phases·k − 1 for a polyphase filter), cutoff and β.
 */
function designLowPass(passEnd: number, stopBegin: number, nyquist: number, att: number, taps: number, phasesOrModulo: number): LowPass {
  const phases = Math.max(phasesOrModulo, 1);
  const modulo = Math.max(-phasesOrModulo, 1);
  const rho = phases === 1 ? 0.5 : att < 120 ? 0.63 : 0.75;
  const fp = passEnd / Math.abs(nyquist);
  let fs = stopBegin / Math.abs(nyquist);
  let trBw = (0.5 * (fs - fp)) / phases;
  fs /= phases;
  trBw = Math.min(trBw, 0.5 * fs);
  const cutoff = fs - trBw;
  const beta = kaiserBeta(att, (trBw * 0.5) / cutoff);
  let n = taps;
  if (n === 0) {
    const a = ((0.0007528358 - 1.577737e-5 * beta) * beta + 0.6248022) * beta + 0.06186902;
    const estimate = Math.ceil(a / trBw + 1);
    n = phases > 1 ? Math.trunc(estimate / phases) * phases + phases - 1 : Math.trunc((estimate + modulo - 2) / modulo) * modulo + 1;
  }
  return { taps: n, cutoff, beta, rho, scale: phases };
}

/** filter.c `lsx_make_lpf`: the symmetric Kaiser-windowed sinc (cutoff as a fraction of Nyquist). */
function makeLowPass({ taps, cutoff, beta, rho, scale }: LowPass): Float64Array {
  const m = taps - 1;
  const h = new Float64Array(taps);
  const mult = scale / besselI0(beta);
  const mult1 = 1 / (0.5 * m + rho);
  for (let i = 0; i <= m / 2; i++) {
    const z = i - 0.5 * m;
    const x = z * Math.PI;
    const y = z * mult1;
    const v = (x !== 0 ? Math.sin(cutoff * x) / x : cutoff) * (besselI0(beta * Math.sqrt(1 - y * y)) * mult);
    h[i] = v;
    h[m - i] = v;
  }
  return h;
}

/** One zero-phase stage: output k = Σ_n x[n]·h[centre + k·down − n·up], float32 coefficients. */
interface Stage {
  readonly up: number;
  readonly down: number;
  readonly h: Float32Array;
}

export interface SoxrPlan {
  readonly stages: readonly Stage[];
}

function isPowerOfTwo(n: number): boolean {
  return n > 0 && (n & (n - 1)) === 0;
}

/** cr.c's search for a rational ratio within float precision (maxL phases). */
function rationalFraction(frac: number, maxL: number): { readonly i: number; readonly tries: number } | undefined {
  const epsilon = Math.abs(Math.floor(frac * MULT32 + 0.5) / (frac * MULT32) - 1);
  for (let i = 1; i <= maxL; i++) {
    const d = frac * i;
    const tries = Math.trunc(d + 0.5);
    if (Math.abs(tries / d - 1) <= epsilon) return { i, tries };
  }
  return undefined;
}

const planCache = new Map<string, SoxrPlan>();

/**
 * cr.c `_soxr_init`'s stages for `inRate → outRate` at HQ. Supported: the ratios whose plan is a
 * pre stage and at most one rational arb stage (every ratio VR params need); anything needing
 * half-band stages, a post stage or interpolated polyphase coefficients is refused.
 */
export function soxrHqPlan(inRate: number, outRate: number): SoxrPlan {
  const key = `${inRate}/${outRate}`;
  const cached = planCache.get(key);
  if (cached !== undefined) return cached;
  const unsupported = (why: string): StemsplitError =>
    new StemsplitError('SEPARATION_FAILED', `soxr ${inRate} → ${outRate} Hz: ${why}, which stemsplit does not reproduce`);
  const ioRatio = inRate / outRate;
  let arbM = ioRatio;
  const upsample = arbM < 1;
  if (Math.trunc(0.5 * arbM) >> 1 !== 0) throw unsupported('half-band stages');
  const preM = upsample || (arbM > 1.5 && arbM < 2) ? 1 : 0;
  const postM = 1 + (arbM > 1 && preM === 1 ? 1 : 0);
  if (postM !== 1) throw unsupported('a post stage');
  arbM /= postM;
  let preL = 1 + (preM === 0 && arbM < 2 ? 1 : 0) + (upsample && MODE !== 0 ? 1 : 0);
  let preDown = preM;
  arbM *= preL;
  let arbL = 1;
  const frac = arbM - Math.trunc(arbM);
  let rational = frac === 0;
  if (!rational) {
    const found = rationalFraction(frac, 2048);
    if (found === undefined) throw unsupported('an irrational ratio (interpolated coefficients)');
    rational = true;
    if (found.tries === found.i) throw unsupported('a rounded-up ratio');
    arbM = found.i * Math.trunc(arbM) + found.tries;
    arbL = found.i;
  }
  let l = preL * arbL;
  let m = arbM;
  const odd = (l | m) & 1;
  if (odd === 0) {
    l >>= 1;
    m >>= 1;
  }
  if ((preL * arbL) / arbM > 4) throw unsupported('a post stage (large upsampling)');
  if (Math.max(l, m) < 5 || l * m < 6) {
    preL = l;
    preDown = m;
    arbM = 1;
    arbL = 1;
  }
  const hasArb = arbM * arbL !== 1;
  const stages: Stage[] = [];
  let att = BASE_ATTENUATION;
  if (hasArb) att += linearToDb(2);
  const attArb = att;
  const preDownEffective = Math.max(preDown, 1);
  let fp1 = PASSBAND_END;
  let fs1 = STOPBAND_BEGIN;
  // cr.c's have_pre_stage: preM·preL ≠ 1 (preM is 0 where the pre stage only filters and upsamples).
  if (preL * preDown !== 1) {
    const fn1 = preDown !== 0 ? Math.max(preL, preDown) : arbM / arbL;
    const modulo = isPowerOfTwo(preL) && fn1 === preL ? preL << 1 : 4;
    // cr.c's tighten(Fp1) with no tightening: Fs0 − (Fs0 − Fp1)·1, as C rounds it.
    const design = designLowPass(STOPBAND_BEGIN - (STOPBAND_BEGIN - fp1) * 1, fs1, fn1, att, 0, -modulo);
    const h = makeLowPass(design);
    stages.push({ up: preL, down: preDownEffective, h: Float32Array.from(h, (v) => v * preL) });
    fp1 /= fn1;
    fs1 /= fn1;
  }
  if (hasArb) {
    const fn = 1;
    if (!upsample && preDown !== 0) throw unsupported('a decimating arb stage after a decimating pre stage');
    const fs = 2 - (MODE !== 0 ? fp1 + (fs1 - fp1) * 0.7 : fs1);
    const fp = MODE !== 0 ? fs - (fs - fp1) / (1 - inverseFrequencyResponse(ROLLOFF_SMALL, attArb)) : fp1;
    let phases = arbL;
    const phases0 = Math.max(phases, 19);
    const sizing = designLowPass(fp, fs, -fn, attArb, 0, phases0);
    let coefs = Math.trunc(sizing.taps / phases0) + 1;
    if (preDown === 0) coefs += coefs & 1;
    if ((coefs & 1) === 1 && (arbL & 1) === 1) {
      phases <<= 1;
      arbL <<= 1;
      arbM *= 2;
    }
    const coefs4 = (coefs + 3) & ~3;
    if (Math.trunc((coefs4 * phases * FLOAT_BYTES) / 1000) > COEF_SIZE_KBYTES) throw unsupported('interpolated polyphase coefficients');
    const design = designLowPass(fp, fs, fn, attArb, coefs * phases - 1, phases);
    stages.push({ up: arbL, down: arbM, h: Float32Array.from(makeLowPass(design)) });
  }
  const plan = { stages };
  planCache.set(key, plan);
  return plan;
}

/** One stage over the zero-extended input fed in order, every output its filter reaches, rounded to float32. */
class StageStream implements ChannelResampler {
  readonly #x = new SampleWindow();
  readonly #out = new OutputBuffer();
  readonly #centre: number;
  readonly #outputs: number;
  #k = 0;

  constructor(
    private readonly n: number,
    private readonly stage: Stage,
  ) {
    const { up, down, h } = stage;
    this.#centre = (h.length - 1) / 2;
    this.#outputs = n === 0 ? 0 : Math.floor(((n - 1) * up + this.#centre) / down) + 1;
  }

  /** The outputs in stage's output count for an input of n samples. */
  get outputs(): number {
    return this.#outputs;
  }

  push(samples: Float64Array): Float64Array {
    const { up, down, h } = this.stage;
    const n = this.n;
    this.#x.append(samples);
    const x = this.#x.data;
    const base = this.#x.base;
    const received = this.#x.received;
    for (; this.#k < this.#outputs; this.#k++) {
      const t = this.#centre + this.#k * down;
      // Taps t − i·up inside [0, h.length): i from ⌈(t − (len − 1)) / up⌉ to ⌊t / up⌋.
      const first = Math.max(0, Math.ceil((t - (h.length - 1)) / up));
      const last = Math.min(n - 1, Math.floor(t / up));
      if (last >= received) break;
      let sum = 0;
      for (let i = first; i <= last; i++) sum += (h[t - i * up] as number) * (x[i - base] as number);
      this.#out.add(f32(sum));
    }
    this.#x.discardBefore(Math.max(0, Math.ceil((this.#centre + this.#k * down - (h.length - 1)) / up)));
    return this.#out.take();
  }
}

/** python-soxr's `resample(x, inRate, outRate, 'HQ')` of one channel: round(n·out/in) samples. */
export function soxrHq(signal: Float64Array, inRate: number, outRate: number): Float64Array {
  return soxrHqStream(signal.length, inRate, outRate).push(signal);
}

/** soxrHq fed in order (soxr is a streaming library: each stage's output reads the input near its own time). */
export function soxrHqStream(n: number, inRate: number, outRate: number): ChannelResampler {
  const stages: StageStream[] = [];
  let length = n;
  for (const stage of soxrHqPlan(inRate, outRate).stages) {
    const stream = new StageStream(length, stage);
    stages.push(stream);
    length = stream.outputs;
  }
  return fixedLength(chained([{ push: (x) => Float64Array.from(x, f32) }, ...stages]), n, Math.floor(n / (inRate / outRate) + 0.5));
}
