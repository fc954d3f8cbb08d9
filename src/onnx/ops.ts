/**
 * Typed helpers over OnnxGraph for the operators a convolutional transformer needs. Each
 * computes its output shape, so the network code reads like the PyTorch it mirrors and
 * shape mistakes fail at build time, not inside ONNX Runtime.
 */
import { attr, DATA_TYPE, MS_DOMAIN, type OnnxGraph, type Shape, type Value } from './graph.js';
import type { OnnxLstmWeights } from './lstm-weights.js';
import { inverseStd, preciseMoments } from './moments.js';
import { quantizeBlocks, quantizeWeight, type Precision } from './quantize.js';

export interface ConvOptions {
  readonly strides?: readonly number[];
  /** [begin..., end...] as ONNX orders them. */
  readonly pads?: readonly number[];
  readonly dilations?: readonly number[];
  /** Channel groups (a depthwise convolution has as many as channels). */
  readonly group?: number;
}

export interface OpsOptions {
  /** `int8`: products with a constant weight (linear, matmul, LSTM) run in int8 (onnx/quantize.ts). Default fp32. */
  readonly precision?: Precision;
  /**
   * At int8, matrix products as ORT's MatMulNBits (8-bit weights per block of this many inputs,
   * accuracy level 4: each row of activations quantized per block at run time) instead of
   * DynamicQuantizeMatMul (one activation scale for the whole tensor, which an outlier row
   * coarsens for every other). A power of two ≥ 16; absent: DynamicQuantizeMatMul.
   */
  readonly int8BlockSize?: number;
  /** At int8, graphs whose name matches keep their products in float32 (e.g. a network's first and last stages). */
  readonly floatGraphs?: RegExp;
}

export class Ops {
  private readonly shapeConstants = new Map<string, Value>();
  /** Constants by shape and content hash; entries are compared in full, so a collision is harmless. */
  private readonly sharedConstants = new Map<string, Array<{ values: Float32Array; value: Value }>>();

  constructor(
    readonly graph: OnnxGraph,
    private readonly options: OpsOptions = {},
  ) {}

  conv(x: Value, weight: Value, bias: Value | undefined, options: ConvOptions = {}): Value {
    const kernel = weight.shape.slice(2);
    const spatial = kernel.length;
    const strides = options.strides ?? kernel.map(() => 1);
    const pads = options.pads ?? kernel.map(() => 0).concat(kernel.map(() => 0));
    const dilations = options.dilations ?? kernel.map(() => 1);
    const outSpatial = kernel.map((k, i) => {
      const size = (x.shape[2 + i] as number) + (pads[i] as number) + (pads[spatial + i] as number);
      return Math.floor((size - (dilations[i] as number) * (k - 1) - 1) / (strides[i] as number)) + 1;
    });
    const group = options.group ?? 1;
    this.expectChannels(x, (weight.shape[1] as number) * group, 'Conv', weight);
    return this.graph.op('Conv', bias ? [x, weight, bias] : [x, weight], [x.shape[0] as number, weight.shape[0] as number, ...outSpatial], {
      kernel_shape: attr.ints(kernel),
      strides: attr.ints(strides),
      pads: attr.ints(pads),
      dilations: attr.ints(dilations),
      ...(group === 1 ? {} : { group: attr.int(group) }),
    });
  }

  /** Transposed convolution; `pads` crop the output ([begin..., end...]). */
  convTranspose(x: Value, weight: Value, bias: Value | undefined, strides: readonly number[], pads?: readonly number[]): Value {
    const kernel = weight.shape.slice(2);
    const crop = pads ?? kernel.map(() => 0).concat(kernel.map(() => 0));
    const outSpatial = kernel.map(
      (k, i) => ((x.shape[2 + i] as number) - 1) * (strides[i] as number) + k - (crop[i] as number) - (crop[kernel.length + i] as number),
    );
    this.expectChannels(x, weight.shape[0] as number, 'ConvTranspose', weight);
    return this.graph.op('ConvTranspose', bias ? [x, weight, bias] : [x, weight], [x.shape[0] as number, weight.shape[1] as number, ...outSpatial], {
      kernel_shape: attr.ints(kernel),
      strides: attr.ints(strides),
      pads: attr.ints(crop),
    });
  }

  /** y = x·Wᵀ + b for x [N, in], W [out, in] (PyTorch's Linear layout). */
  linear(x: Value, weight: Value, bias?: Value): Value {
    this.expectChannels({ name: x.name, shape: [0, x.shape[1] as number] }, weight.shape[1] as number, 'Gemm', weight);
    const quantized = this.quantizedMatMul(x, weight, 'out-in', bias);
    if (quantized !== undefined) return quantized;
    return this.graph.op('Gemm', bias ? [x, weight, bias] : [x, weight], [x.shape[0] as number, weight.shape[0] as number], {
      transB: attr.int(1),
    });
  }

  /** `fixed`: b is a fixed transform (a DFT), not a learned weight, and stays float32 at every precision. */
  matmul(a: Value, b: Value, options: { readonly fixed?: boolean } = {}): Value {
    const shape = [...a.shape.slice(0, -1), b.shape[b.shape.length - 1] as number];
    if (b.shape.length === 2 && options.fixed !== true) {
      const quantized = this.quantizedMatMul(a, b, 'in-out');
      if (quantized !== undefined) return quantized;
    }
    return this.graph.op('MatMul', [a, b], shape);
  }

  /**
   * x·W (+ b) as ORT's DynamicQuantizeMatMul when the precision is int8 and W is a constant
   * (2-D, `out-in` as PyTorch's Linear stores it or `in-out`); undefined otherwise.
   */
  private quantizedMatMul(x: Value, weight: Value, layout: 'out-in' | 'in-out', bias?: Value): Value | undefined {
    if (this.options.precision !== 'int8' || this.options.floatGraphs?.test(this.graph.name)) return undefined;
    const data = this.graph.constantData(weight);
    const biasData = bias === undefined ? undefined : this.graph.constantData(bias);
    if (data === undefined || (bias !== undefined && biasData === undefined)) return undefined;
    const [rows, columns] = weight.shape as [number, number];
    const [inputs, outputs] = layout === 'out-in' ? [columns, rows] : [rows, columns];
    if (this.options.int8BlockSize !== undefined) return this.blockQuantizedMatMul(x, weight.name, data, inputs, outputs, layout, bias);
    const { values, scales } = quantizeWeight(data, inputs, outputs, layout);
    const b = this.graph.constant(values, [inputs, outputs], `${weight.name}_int8`);
    const scale = this.graph.constant(scales, [outputs], `${weight.name}_scale`);
    const shape = [...x.shape.slice(0, -1), outputs];
    return this.graph.op('DynamicQuantizeMatMul', bias ? [x, b, scale, '', bias] : [x, b, scale], shape, {}, MS_DOMAIN);
  }

  /** x·W (+ b) as MatMulNBits with 8-bit block-quantized weights and int8 activations per block (accuracy level 4). */
  private blockQuantizedMatMul(x: Value, name: string, data: Float32Array, inputs: number, outputs: number, layout: 'out-in' | 'in-out', bias?: Value): Value {
    const blockSize = this.options.int8BlockSize as number;
    const { values, scales, blocks } = quantizeBlocks(data, inputs, outputs, layout, blockSize);
    const b = this.graph.constant(values, [outputs, blocks, blockSize], `${name}_q8`);
    const scale = this.graph.constant(scales, [outputs, blocks], `${name}_scale`);
    const shape = [...x.shape.slice(0, -1), outputs];
    const attributes = { K: attr.int(inputs), N: attr.int(outputs), bits: attr.int(8), block_size: attr.int(blockSize), accuracy_level: attr.int(4) };
    return this.graph.op('MatMulNBits', bias ? [x, b, scale, '', '', bias] : [x, b, scale], shape, attributes, MS_DOMAIN);
  }

  add(a: Value, b: Value): Value {
    return this.graph.op('Add', [a, b], broadcast(a.shape, b.shape));
  }

  sub(a: Value, b: Value): Value {
    return this.graph.op('Sub', [a, b], broadcast(a.shape, b.shape));
  }

  mul(a: Value, b: Value): Value {
    return this.graph.op('Mul', [a, b], broadcast(a.shape, b.shape));
  }

  /** Exact (erf) GELU, ORT's fused kernel. */
  gelu(x: Value): Value {
    return this.graph.op('Gelu', [x], x.shape, {}, MS_DOMAIN);
  }

  relu(x: Value): Value {
    return this.graph.op('Relu', [x], x.shape);
  }

  /** ELU: x for x > 0, alpha·(eˣ − 1) otherwise. */
  elu(x: Value, alpha: number): Value {
    return this.graph.op('Elu', [x], x.shape, { alpha: attr.float(alpha) });
  }

  sigmoid(x: Value): Value {
    return this.graph.op('Sigmoid', [x], x.shape);
  }

  /** Gated linear unit over `axis`: first half × sigmoid(second half). */
  glu(x: Value, axis: number): Value {
    const [a, b] = this.split(x, axis, 2);
    return this.mul(a as Value, this.sigmoid(b as Value));
  }

  /** Splits `axis` into equal parts (a number) or parts of the given sizes. */
  split(x: Value, axis: number, parts: number | readonly number[]): Value[] {
    const total = x.shape[axis] as number;
    const sizes = typeof parts === 'number' ? new Array<number>(parts).fill(total / parts) : parts;
    if (!sizes.every(Number.isInteger) || sizes.reduce((a, b) => a + b, 0) !== total) {
      throw new Error(`cannot split axis ${axis} of [${x.shape.join(', ')}] into [${sizes.join(', ')}]`);
    }
    const shapes = sizes.map((size) => x.shape.map((d, i) => (i === axis ? size : d)));
    return this.graph.node('Split', [x, this.graph.ints(sizes, 'split')], { axis: attr.int(axis) }, { outputs: shapes });
  }

  reshape(x: Value, shape: Shape): Value {
    const from = x.shape.reduce((a, b) => a * b, 1);
    const to = shape.reduce((a, b) => a * b, 1);
    if (from !== to) throw new Error(`cannot reshape [${x.shape.join(', ')}] to [${shape.join(', ')}]`);
    return this.graph.op('Reshape', [x, this.shapeConstant(shape)], shape);
  }

  transpose(x: Value, perm: readonly number[]): Value {
    return this.graph.op(
      'Transpose',
      [x],
      perm.map((p) => x.shape[p] as number),
      { perm: attr.ints(perm) },
    );
  }

  /** DepthToSpace (DCR): x [N, b·b·C, H, W] with channels ordered (row, column, c) → [N, C, H·b, W·b]. */
  depthToSpace(x: Value, block: number): Value {
    const [n, channels, height, width] = x.shape as [number, number, number, number];
    return this.graph.op('DepthToSpace', [x], [n, channels / (block * block), height * block, width * block], {
      blocksize: attr.int(block),
      mode: attr.string('DCR'),
    });
  }

  slice(x: Value, axis: number, start: number, end: number): Value {
    const shape = x.shape.map((d, i) => (i === axis ? end - start : d));
    return this.graph.op('Slice', [x, this.graph.ints([start], 'start'), this.graph.ints([end], 'end'), this.graph.ints([axis], 'axis')], shape);
  }

  concat(values: readonly Value[], axis: number): Value {
    const first = values[0] as Value;
    const total = values.reduce((sum, v) => sum + (v.shape[axis] as number), 0);
    return this.graph.op(
      'Concat',
      values,
      first.shape.map((d, i) => (i === axis ? total : d)),
      { axis: attr.int(axis) },
    );
  }

  softmax(x: Value, axis = -1): Value {
    return this.graph.op('Softmax', [x], x.shape, { axis: attr.int(axis) });
  }

  /** LayerNormalization over the last axis. */
  layerNorm(x: Value, scale: Value, bias: Value, epsilon: number): Value {
    return this.graph.op('LayerNormalization', [x, scale, bias], x.shape, { axis: attr.int(-1), epsilon: attr.float(epsilon) });
  }

  /**
   * InstanceNorm over x [N, C, ...]: per (sample, channel) statistics over the positions, then `scale`/`bias` [C].
   * Not ORT's InstanceNormalization, which sums each row in one float32 pass (see onnx/moments.ts).
   */
  instanceNorm(x: Value, scale: Value, bias: Value, epsilon = 1e-5): Value {
    return this.normalizeGroups(x, x.shape[1] as number, scale, bias, epsilon);
  }

  /** Inference-mode BatchNorm over x [N, C, ...] with running statistics; every operand [C]. */
  batchNorm(x: Value, scale: Value, bias: Value, mean: Value, variance: Value, epsilon = 1e-5): Value {
    return this.graph.op('BatchNormalization', [x, scale, bias, mean, variance], x.shape, { epsilon: attr.float(epsilon) });
  }

  /**
   * GroupNorm over x [N, C, ...]: statistics per (sample, group of C/G channels) over those
   * channels and every position; then a per-channel affine. `gamma`/`beta` are [C].
   */
  groupNorm(x: Value, groups: number, gamma: Float32Array, beta: Float32Array, epsilon = 1e-5): Value {
    const channels = x.shape[1] as number;
    return this.normalizeGroups(x, groups, this.graph.constant(gamma, [channels], 'gn_gamma'), this.graph.constant(beta, [channels], 'gn_beta'), epsilon);
  }

  /**
   * GroupNorm(1, C) on one sample stored channels-last, x [..., C] (the statistics are the same
   * in any layout).
   */
  channelsLastGroupNorm(x: Value, gamma: Float32Array, beta: Float32Array, epsilon = 1e-5): Value {
    const channels = gamma.length;
    const { deviation, residual, variance } = preciseMoments(this, x, 0);
    const scale = this.mul(this.graph.constant(gamma, [channels], 'gn_gamma'), this.reshape(inverseStd(this, variance, epsilon), [1]));
    const shift = this.sub(this.graph.constant(beta, [channels], 'gn_beta'), this.mul(this.reshape(residual, [1]), scale));
    return this.add(this.mul(this.reshape(deviation, x.shape), scale), shift);
  }

  /**
   * The normalisations' common core: precise statistics per (sample, group) (onnx/moments.ts; ORT's
   * LayerNormalization and InstanceNormalization take them in one float32 pass, 1e-5 off on long
   * rows), then y = (x − mean)·γ/σ + β as the deviation times a per-(sample, channel) scale plus a
   * shift, each [N, C, 1, …].
   */
  private normalizeGroups(x: Value, groups: number, gamma: Value, beta: Value, epsilon: number): Value {
    const [batch, channels, ...positions] = x.shape as [number, number, ...number[]];
    const perGroup = channels / groups;
    const grouped = this.reshape(x, [batch, groups, perGroup * positions.reduce((a, b) => a * b, 1)]);
    const { deviation, residual, variance } = preciseMoments(this, grouped, 2);
    const stats = [batch, groups, 1];
    const scale = this.mul(this.reshape(inverseStd(this, variance, epsilon), stats), this.reshape(gamma, [1, groups, perGroup]));
    const shift = this.sub(this.reshape(beta, [1, groups, perGroup]), this.mul(this.reshape(residual, stats), scale));
    const affine = [batch, channels, ...positions.map(() => 1)];
    return this.add(this.mul(this.reshape(deviation, x.shape), this.reshape(scale, affine)), this.reshape(shift, affine));
  }

  /**
   * ONNX LSTM over x [seq, batch, input] (time-major: ORT's CPU kernel has no batch-major
   * layout) → [seq, directions, batch, hidden]. `weights` come in ONNX's layout and gate
   * order (see `onnxLstmWeights`). At int8 it is ORT's DynamicQuantizeLSTM: W and R stored as
   * int8 with one scale per gate row (as quantizedMatMul), the input and hidden state quantized
   * per step at run time.
   */
  lstm(x: Value, weights: OnnxLstmWeights): Value {
    const { directions, hidden } = weights;
    const [seq, batch, input] = x.shape as [number, number, number];
    if (input !== weights.input) throw new Error(`LSTM expects ${weights.input} inputs, got [${x.shape.join(', ')}]`);
    const shape = [seq, directions, batch, hidden];
    const attributes = { hidden_size: attr.int(hidden), direction: attr.string(directions === 2 ? 'bidirectional' : 'forward') };
    const b = this.graph.constant(weights.b, [directions, 8 * hidden], 'lstm_b');
    if (this.options.precision === 'int8') {
      const w = this.quantizedLstmWeight(weights.w, directions, input, 4 * hidden, 'lstm_w');
      const r = this.quantizedLstmWeight(weights.r, directions, hidden, 4 * hidden, 'lstm_r');
      return this.graph.op(
        'DynamicQuantizeLSTM',
        [x, w.values, r.values, b, '', '', '', '', w.scales, w.zeros, r.scales, r.zeros],
        shape,
        attributes,
        MS_DOMAIN,
      );
    }
    const w = this.graph.constant(weights.w, [directions, 4 * hidden, input], 'lstm_w');
    const r = this.graph.constant(weights.r, [directions, 4 * hidden, hidden], 'lstm_r');
    return this.graph.op('LSTM', [x, w, r, b], shape, attributes);
  }

  /** ONNX's [dirs, gates, inputs] weight as DynamicQuantizeLSTM takes it: int8 [dirs, inputs, gates], scales and zero points [dirs, gates]. */
  private quantizedLstmWeight(
    weight: Float32Array,
    directions: number,
    inputs: number,
    gates: number,
    hint: string,
  ): { values: Value; scales: Value; zeros: Value } {
    const values = new Int8Array(directions * inputs * gates);
    const scales = new Float32Array(directions * gates);
    for (let d = 0; d < directions; d++) {
      const quantized = quantizeWeight(weight.subarray(d * gates * inputs, (d + 1) * gates * inputs), inputs, gates, 'out-in');
      values.set(quantized.values, d * inputs * gates);
      scales.set(quantized.scales, d * gates);
    }
    return {
      values: this.graph.constant(values, [directions, inputs, gates], `${hint}_int8`),
      scales: this.graph.constant(scales, [directions, gates], `${hint}_scale`),
      zeros: this.graph.constant(new Int8Array(directions * gates), [directions, gates], `${hint}_zero`),
    };
  }

  /** Mean over one axis, kept as size 1 (opset 17: axes as an attribute). */
  reduceMean(x: Value, axis: number): Value {
    const shape = x.shape.map((d, i) => (i === axis ? 1 : d));
    return this.graph.op('ReduceMean', [x], shape, { axes: attr.ints([axis]), keepdims: attr.int(1) });
  }

  /**
   * `x` made to wait for `dependency`: x · 1, with the 1 read off `dependency`'s first element
   * (true for every value, NaN included). ONNX Runtime folds a node whose inputs are all
   * constant and may run a node as soon as its inputs exist; this makes a constant's product
   * transient, or a cheap recomputation run where it is used rather than first.
   */
  after(x: Value, dependency: Value): Value {
    const { graph } = this;
    const ones = dependency.shape.map(() => 1);
    const first = graph.op(
      'Slice',
      [
        dependency,
        graph.ints(
          ones.map(() => 0),
          'start',
        ),
        graph.ints(ones, 'end'),
      ],
      ones,
    );
    const always = graph.op('Or', [graph.op('Equal', [first, first], ones), graph.op('IsNaN', [first], ones)], ones);
    const one = graph.op('Cast', [always], ones, { to: attr.int(DATA_TYPE.float) });
    return this.mul(
      x,
      x.shape.length === ones.length
        ? one
        : this.reshape(
            one,
            x.shape.map(() => 1),
          ),
    );
  }

  /** A constant shared by every node that needs the same values in the same shape. */
  cachedConstant(values: Float32Array, shape: Shape, hint: string): Value {
    const key = `${shape.join(',')}:${contentHash(values)}`;
    const candidates = this.sharedConstants.get(key) ?? [];
    const same = candidates.find((entry) => sameValues(entry.values, values));
    if (same !== undefined) return same.value;
    const value = this.graph.constant(values, shape, hint);
    this.sharedConstants.set(key, [...candidates, { values, value }]);
    return value;
  }

  private shapeConstant(shape: Shape): Value {
    const key = shape.join(',');
    let value = this.shapeConstants.get(key);
    if (value === undefined) {
      value = this.graph.ints(shape, 'shape');
      this.shapeConstants.set(key, value);
    }
    return value;
  }

  /** Refuses an input the weight does not fit, naming the weight as its builder named it (a checkpoint's tensor, mostly). */
  private expectChannels(x: Value, expected: number, op: string, weight: Value): void {
    if (x.shape[1] !== expected) {
      const tensor = (weight.name.split('/').at(-1) ?? weight.name).replace(/_\d+$/, '');
      throw new Error(`${op} with the weight ${tensor} expects ${expected} input channels, got [${x.shape.join(', ')}]`);
    }
  }
}

export function broadcast(a: Shape, b: Shape): number[] {
  const rank = Math.max(a.length, b.length);
  const out: number[] = [];
  for (let i = 0; i < rank; i++) {
    const da = a[a.length - rank + i] ?? 1;
    const db = b[b.length - rank + i] ?? 1;
    if (da !== db && da !== 1 && db !== 1) throw new Error(`cannot broadcast [${a.join(', ')}] with [${b.join(', ')}]`);
    out.push(Math.max(da, db));
  }
  return out;
}

function sameValues(a: Float32Array, b: Float32Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) return false;
  return true;
}

/** FNV-1a over the bytes: equal content, equal key. */
function contentHash(values: Float32Array): string {
  const bytes = new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
  let hash = 0x811c9dc5;
  for (const byte of bytes) hash = Math.imul(hash ^ byte, 0x01000193) >>> 0;
  return `${values.length}:${hash.toString(16)}`;
}
