/**
 * Reduced precision, chosen when a checkpoint is converted (so the conversion cache keys on it).
 * `int8`: every matrix product with a constant weight (PyTorch Linear, 1×1 projections) runs as
 * ONNX Runtime's com.microsoft DynamicQuantizeMatMul: the weight stored as int8, one scale per
 * output column (symmetric, zero point 0), the activations quantized to uint8 per tensor at run
 * time, the product in integers (VNNI where the CPU has it) and rescaled to float32. Everything
 * else (convolutions, attention, norms) stays float32. `fp32` (the default) changes nothing.
 * A shipped graph stemsplit did not build (the bundled models) gets int8 convolutions instead:
 * quantize-graph.ts.
 *
 * On x86 CPUs without AVX-512 VNNI / AVX-VNNI, ORT's u8×s8 kernel sums pairs of products in
 * 16 bits (VPMADDUBSW), which can saturate; the boxes measured here have VNNI.
 */
import { StemsplitError } from '../errors.js';

export const PRECISIONS = ['fp32', 'int8'] as const;
export type Precision = (typeof PRECISIONS)[number];

export const DEFAULT_PRECISION: Precision = 'fp32';

/** `--precision` / STEMSPLIT_PRECISION checked; `where` names the flag in the error. */
export function parsePrecision(value: string, where = '--precision'): Precision {
  if ((PRECISIONS as readonly string[]).includes(value)) return value as Precision;
  throw new StemsplitError('USAGE', `${where} must be ${PRECISIONS.join(' or ')}, got "${value}"`);
}

/** What a conversion cache key adds for a precision: nothing for fp32, so existing caches stay valid. */
export function precisionKey(precision: Precision | undefined): string {
  // `-7bit`: graphs converted with 8-bit u8 × s8 weights (before SEVEN_BIT_PEAK) are not reused.
  return precision === undefined || precision === 'fp32' ? '' : `-${precision}-7bit`;
}

export interface QuantizedWeight {
  /** int8 weights: [K, N] row-major for quantizeWeight (the matrix a MatMul multiplies by), the weight's own layout for quantizeChannels. */
  readonly values: Int8Array;
  /** One scale per output column or channel, w ≈ values · scale. */
  readonly scales: Float32Array;
}

/**
 * Quantizes a weight to int8 per output column. `layout` says how `weight` is stored:
 * `out-in` is PyTorch's Linear [N, K] (Gemm with transB), `in-out` a MatMul's [K, N].
 */
export function quantizeWeight(weight: Float32Array, inputs: number, outputs: number, layout: 'out-in' | 'in-out'): QuantizedWeight {
  const at = layout === 'out-in' ? (k: number, n: number) => weight[n * inputs + k] as number : (k: number, n: number) => weight[k * outputs + n] as number;
  const scales = new Float32Array(outputs);
  for (let n = 0; n < outputs; n++) {
    let peak = 0;
    for (let k = 0; k < inputs; k++) peak = Math.max(peak, Math.abs(at(k, n)));
    scales[n] = scaleFor(peak, SEVEN_BIT_PEAK);
  }
  const values = new Int8Array(inputs * outputs);
  for (let k = 0; k < inputs; k++) {
    for (let n = 0; n < outputs; n++) values[k * outputs + n] = Math.round(at(k, n) / (scales[n] as number));
  }
  return { values, scales };
}

/**
 * Quantizes a convolution's weight [C_out, …] to int8 per output channel, in its own layout:
 * `values` is [C_out, …] as `weight` was, `scales` [C_out].
 */
export function quantizeChannels(weight: Float32Array, channels: number): QuantizedWeight {
  const size = weight.length / channels;
  const scales = new Float32Array(channels);
  const values = new Int8Array(weight.length);
  for (let c = 0; c < channels; c++) {
    const row = weight.subarray(c * size, (c + 1) * size);
    const scale = scaleFor(
      row.reduce((peak, w) => Math.max(peak, Math.abs(w)), 0),
      SEVEN_BIT_PEAK,
    );
    scales[c] = scale;
    for (let i = 0; i < size; i++) values[c * size + i] = Math.round((row[i] as number) / scale);
  }
  return { values, scales };
}

export interface BlockQuantizedWeight {
  /** [N, blocks, blockSize]: each weight's int8 value + 128 (MatMulNBits' default zero point), 128 (zero) past K. */
  readonly values: Uint8Array;
  /** One scale per output column and block of K, [N, blocks]. */
  readonly scales: Float32Array;
  readonly blocks: number;
}

/**
 * Quantizes a weight to int8 per output column and block of `blockSize` inputs, as ORT's
 * com.microsoft MatMulNBits (bits 8) takes it. Each block has its own symmetric scale, so a few
 * large weights cost only their block's resolution.
 */
export function quantizeBlocks(weight: Float32Array, inputs: number, outputs: number, layout: 'out-in' | 'in-out', blockSize: number): BlockQuantizedWeight {
  const at = layout === 'out-in' ? (k: number, n: number) => weight[n * inputs + k] as number : (k: number, n: number) => weight[k * outputs + n] as number;
  const blocks = Math.ceil(inputs / blockSize);
  const values = new Uint8Array(outputs * blocks * blockSize).fill(128);
  const scales = new Float32Array(outputs * blocks);
  for (let n = 0; n < outputs; n++) {
    for (let b = 0; b < blocks; b++) {
      const end = Math.min(inputs, (b + 1) * blockSize);
      let peak = 0;
      for (let k = b * blockSize; k < end; k++) peak = Math.max(peak, Math.abs(at(k, n)));
      const scale = scaleFor(peak);
      scales[n * blocks + b] = scale;
      for (let k = b * blockSize; k < end; k++) values[n * blocks * blockSize + k] = 128 + Math.round(at(k, n) / scale);
    }
  }
  return { values, scales, blocks };
}

/**
 * The largest weight of the u8 × s8 kernels (DynamicQuantizeMatMul, ConvInteger): 7 bits, as
 * ONNX Runtime's reduce_range. On x86 without VNNI (AVX2: AMD Zen 3, older Intel) MLAS multiplies
 * pairs of u8 × s8 into int16 with saturation (VPMADDUBSW): 2 × 255 × 127 overflows it, 2 × 255 × 63
 * does not. With full 8-bit weights htdemucs_small's int8 forward was 57.2–67.7 dB from the
 * reference on an AMD EPYC (AVX2), 81.7–94.0 with 7 (test/precision.test.ts); VNNI machines lose
 * about 6 dB of headroom they did not need for the 40 dB asked.
 */
const SEVEN_BIT_PEAK = 63;

/** Symmetric: the largest magnitude maps to ±`top` (127 by default; an all-zero column keeps scale 1). */
function scaleFor(peak: number, top = 127): number {
  return peak > 0 ? peak / top : 1;
}
