/**
 * Typed helpers over OnnxGraph for the operators a convolutional transformer needs. Each
 * computes its output shape, so the network code reads like the PyTorch it mirrors and
 * shape mistakes fail at build time, not inside ONNX Runtime.
 */
import { attr, MS_DOMAIN, type OnnxGraph, type Shape, type Value } from './graph.js';

export interface ConvOptions {
  readonly strides?: readonly number[];
  /** [begin..., end...] as ONNX orders them. */
  readonly pads?: readonly number[];
  readonly dilations?: readonly number[];
}

export class Ops {
  private readonly shapeConstants = new Map<string, Value>();

  constructor(readonly graph: OnnxGraph) {}

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
    this.expectChannels(x, weight.shape[1] as number, 'Conv');
    return this.graph.op('Conv', bias ? [x, weight, bias] : [x, weight], [x.shape[0] as number, weight.shape[0] as number, ...outSpatial], {
      kernel_shape: attr.ints(kernel),
      strides: attr.ints(strides),
      pads: attr.ints(pads),
      dilations: attr.ints(dilations),
    });
  }

  /** Transposed convolution; `pads` crop the output ([begin..., end...]). */
  convTranspose(x: Value, weight: Value, bias: Value | undefined, strides: readonly number[], pads?: readonly number[]): Value {
    const kernel = weight.shape.slice(2);
    const crop = pads ?? kernel.map(() => 0).concat(kernel.map(() => 0));
    const outSpatial = kernel.map(
      (k, i) => ((x.shape[2 + i] as number) - 1) * (strides[i] as number) + k - (crop[i] as number) - (crop[kernel.length + i] as number),
    );
    this.expectChannels(x, weight.shape[0] as number, 'ConvTranspose');
    return this.graph.op(
      'ConvTranspose',
      bias ? [x, weight, bias] : [x, weight],
      [x.shape[0] as number, weight.shape[1] as number, ...outSpatial],
      { kernel_shape: attr.ints(kernel), strides: attr.ints(strides), pads: attr.ints(crop) },
    );
  }

  /** y = x·Wᵀ + b for x [N, in], W [out, in] (PyTorch's Linear layout). */
  linear(x: Value, weight: Value, bias?: Value): Value {
    this.expectChannels({ name: x.name, shape: [0, x.shape[1] as number] }, weight.shape[1] as number, 'Gemm');
    return this.graph.op('Gemm', bias ? [x, weight, bias] : [x, weight], [x.shape[0] as number, weight.shape[0] as number], {
      transB: attr.int(1),
    });
  }

  matmul(a: Value, b: Value): Value {
    const shape = [...a.shape.slice(0, -1), b.shape[b.shape.length - 1] as number];
    return this.graph.op('MatMul', [a, b], shape);
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
    return this.graph.op('Transpose', [x], perm.map((p) => x.shape[p] as number), { perm: attr.ints(perm) });
  }

  slice(x: Value, axis: number, start: number, end: number): Value {
    const shape = x.shape.map((d, i) => (i === axis ? end - start : d));
    return this.graph.op('Slice', [x, this.graph.ints([start], 'start'), this.graph.ints([end], 'end'), this.graph.ints([axis], 'axis')], shape);
  }

  concat(values: readonly Value[], axis: number): Value {
    const first = values[0] as Value;
    const total = values.reduce((sum, v) => sum + (v.shape[axis] as number), 0);
    return this.graph.op('Concat', values, first.shape.map((d, i) => (i === axis ? total : d)), { axis: attr.int(axis) });
  }

  softmax(x: Value, axis = -1): Value {
    return this.graph.op('Softmax', [x], x.shape, { axis: attr.int(axis) });
  }

  /** LayerNormalization over the last axis. */
  layerNorm(x: Value, scale: Value, bias: Value, epsilon: number): Value {
    return this.graph.op('LayerNormalization', [x, scale, bias], x.shape, { axis: attr.int(-1), epsilon: attr.float(epsilon) });
  }

  /**
   * Normalizes x [N, G, M] over M for each (n, g) without an affine part
   * (InstanceNormalization with unit scale), the core of GroupNorm.
   */
  normalizeLastAxis(x: Value, epsilon: number): Value {
    const groups = x.shape[1] as number;
    const ones = this.graph.constant(new Float32Array(groups).fill(1), [groups], 'ones');
    const zeros = this.graph.constant(new Float32Array(groups), [groups], 'zeros');
    return this.graph.op('InstanceNormalization', [x, ones, zeros], x.shape, { epsilon: attr.float(epsilon) });
  }

  /**
   * GroupNorm over x [N, C, ...]: statistics per (sample, group of C/G channels) over those
   * channels and every position; then a per-channel affine. `gamma`/`beta` are [C].
   */
  groupNorm(x: Value, groups: number, gamma: Float32Array, beta: Float32Array, epsilon = 1e-5): Value {
    const [batch, channels] = x.shape as [number, number];
    const affineShape = [channels, ...x.shape.slice(2).map(() => 1)];
    if (groups === 1) {
      // One LayerNormalization over everything but the batch axis; ORT broadcasts the
      // per-channel affine over the positions.
      return this.graph.op(
        'LayerNormalization',
        [x, this.graph.constant(gamma, affineShape, 'gn_gamma'), this.graph.constant(beta, affineShape, 'gn_beta')],
        x.shape,
        { axis: attr.int(1), epsilon: attr.float(epsilon) },
      );
    }
    const grouped = this.reshape(x, [batch, groups, x.shape.slice(1).reduce((a, b) => a * b, 1) / groups]);
    const normalized = this.reshape(this.normalizeLastAxis(grouped, epsilon), x.shape);
    const scaled = this.mul(normalized, this.graph.constant(gamma, affineShape, 'gn_gamma'));
    return this.add(scaled, this.graph.constant(beta, affineShape, 'gn_beta'));
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

  private expectChannels(x: Value, expected: number, op: string): void {
    if (x.shape[1] !== expected) {
      throw new Error(`${op} expects ${expected} input channels, got [${x.shape.join(', ')}]`);
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
