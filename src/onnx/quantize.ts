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
  return precision === undefined || precision === 'fp32' ? '' : `-${precision}`;
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
    scales[n] = scaleFor(peak);
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
    const scale = scaleFor(row.reduce((peak, w) => Math.max(peak, Math.abs(w)), 0));
    scales[c] = scale;
    for (let i = 0; i < size; i++) values[c * size + i] = Math.round((row[i] as number) / scale);
  }
  return { values, scales };
}

/** Symmetric: the largest magnitude maps to ±127 (an all-zero column keeps scale 1). */
function scaleFor(peak: number): number {
  return peak > 0 ? peak / 127 : 1;
}
