/**
 * Mean and variance over long rows, in float32 and as precise as PyTorch's float32 GroupNorm.
 *
 * ONNX Runtime's CPU kernels take statistics in one float32 pass: LayerNormalization and
 * InstanceNormalization sum values (and squares) along the row, and ReduceSum/ReduceMean/
 * ReduceSumSquare add a row's values one after another. Over the rows a network normalises (86,000 positions × 96
 * channels in a Demucs DConv layer, a third of them equal where a chunk is padded), that rounding
 * builds up to 1e-5 of the inverse standard deviation, and E[x²] − E[x]² loses more where the mean
 * is large beside the spread. Here the sums go in blocks of about BLOCK values, then the block
 * sums in blocks, and so on (each sum a short one: the error of a pairwise sum, not of a long
 * one), and the variance is a second pass over the deviations from that mean, corrected by
 * their own mean (the corrected two-pass algorithm). All float32, no Cast: the same graphs run on
 * GPU providers without float64 (WebGPU).
 */
import { attr, type OnnxGraph, type Shape, type Value } from './graph.js';

/** What the statistics need of ops.ts's `Ops` (which imports this file): declared here so the two are not a circle. */
export interface MomentOps {
  readonly graph: OnnxGraph;
  reshape(x: Value, shape: Shape): Value;
  add(a: Value, b: Value): Value;
  sub(a: Value, b: Value): Value;
  mul(a: Value, b: Value): Value;
}

/**
 * Values per block sum. ORT's CPU ReduceSum and ReduceSumSquare add a row one value after another, so a
 * block of b values carries up to b roundings: 336 in one go left a DConv GroupNorm's variance 3e-6 off
 * (PyTorch's: 1e-7), 16 keep it at float32's own rounding.
 */
const BLOCK = 16;
/** A row length's divisor this close to BLOCK serves as its block size without padding the row. */
const MIN_BLOCK = 8;
const MAX_BLOCK = 64;

export interface Moments {
  /** The first pass's mean [rows, 1]; the exact one is mean + residual. */
  readonly mean: Value;
  /** x − mean, as [rows, positions]. */
  readonly deviation: Value;
  /** The deviation's own mean [rows, 1] (the first mean's rounding error, ~1e-7 of it). */
  readonly residual: Value;
  /** The variance [rows, 1]: mean of deviation² less residual². */
  readonly variance: Value;
}

/**
 * Moments of x over all axes from `keep` on (rows: the product of the first `keep` axes; 0 keeps
 * none, one row). The mean is mean + residual; `deviation − residual` is x less its exact mean.
 */
export function preciseMoments(ops: MomentOps, x: Value, keep: number): Moments {
  const { graph } = ops;
  const rows = x.shape.slice(0, keep).reduce((a, b) => a * b, 1);
  const positions = x.shape.slice(keep).reduce((a, b) => a * b, 1);
  const flat = ops.reshape(x, [rows, positions]);
  const perPosition = graph.scalar(1 / positions, 'inverse_count');
  const mean = ops.mul(blockSum(ops, flat, 'ReduceSum'), perPosition);
  const deviation = ops.sub(flat, mean);
  const residual = ops.mul(blockSum(ops, deviation, 'ReduceSum'), perPosition);
  const squares = ops.mul(blockSum(ops, deviation, 'ReduceSumSquare'), perPosition);
  return { mean, deviation, residual, variance: ops.sub(squares, ops.mul(residual, residual)) };
}

/** 1/√(variance + ε). */
export function inverseStd(ops: MomentOps, variance: Value, epsilon: number): Value {
  const { graph } = ops;
  const root = graph.op('Sqrt', [ops.add(variance, graph.scalar(epsilon, 'eps'))], variance.shape);
  return graph.op('Reciprocal', [root], variance.shape);
}

/**
 * Each row's sum (of squares, for ReduceSumSquare) of x [rows, n] → [rows, 1], in levels: the row
 * as [n / b, b] summed over b, then those sums the same way, until a row is short. A row with no
 * divisor near BLOCK is padded with zeros to a multiple of it (zeros change neither sum).
 */
export function blockSum(ops: MomentOps, x: Value, reduce: 'ReduceSum' | 'ReduceSumSquare'): Value {
  const { graph } = ops;
  const rows = x.shape[0] as number;
  let value = x;
  let op = reduce;
  for (;;) {
    const length = value.shape[1] as number;
    if (length <= MAX_BLOCK) return reduceLast(ops, value, op, true);
    let block = blockSize(length);
    if (block === undefined) {
      block = BLOCK;
      const padded = Math.ceil(length / block) * block;
      value = graph.op('Pad', [value, graph.ints([0, 0, 0, padded - length], 'pads')], [rows, padded], { mode: attr.string('constant') });
    }
    const count = (value.shape[1] as number) / block;
    value = reduceLast(ops, ops.reshape(value, [rows, count, block]), op, false);
    op = 'ReduceSum';
  }
}

/** The divisor of `length` in [MIN_BLOCK, MAX_BLOCK] nearest BLOCK (on a log scale), if any. */
export function blockSize(length: number): number | undefined {
  let best: number | undefined;
  for (let b = MIN_BLOCK; b <= MAX_BLOCK; b++) {
    if (length % b !== 0) continue;
    if (best === undefined || Math.abs(Math.log(b / BLOCK)) < Math.abs(Math.log(best / BLOCK))) best = b;
  }
  return best;
}

/** ReduceSum (opset 13+: axes as an input) or ReduceSumSquare (axes an attribute until opset 18) over the last axis. */
function reduceLast(ops: MomentOps, x: Value, op: 'ReduceSum' | 'ReduceSumSquare', keepdims: boolean): Value {
  const { graph } = ops;
  const last = x.shape.length - 1;
  const shape = keepdims ? x.shape.map((d, i) => (i === last ? 1 : d)) : x.shape.slice(0, last);
  const keep = { keepdims: attr.int(keepdims ? 1 : 0) };
  return op === 'ReduceSum'
    ? graph.op('ReduceSum', [x, graph.ints([last], 'axes')], shape, keep)
    : graph.op('ReduceSumSquare', [x], shape, { axes: attr.ints([last]), ...keep });
}
