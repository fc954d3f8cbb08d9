/**
 * An ONNX graph builder with static shapes: nodes, weights (initializers), inputs and
 * outputs, serialized as a ModelProto (IR 8, opset 17, plus com.microsoft for ORT's fused
 * CPU kernels). Field numbers follow onnx/onnx.proto.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { ProtoMessage } from './protobuf.js';

export type Shape = readonly number[];

/** A tensor in the graph: its name and (static) shape. */
export interface Value {
  readonly name: string;
  readonly shape: Shape;
}

export type TensorData = Float32Array | BigInt64Array | Int32Array | Int8Array | Uint8Array;

export type Attribute =
  | { readonly type: 'int'; readonly value: number }
  | { readonly type: 'float'; readonly value: number }
  | { readonly type: 'ints'; readonly value: readonly number[] }
  | { readonly type: 'floats'; readonly value: readonly number[] }
  | { readonly type: 'string'; readonly value: string };

export const attr = {
  int: (value: number): Attribute => ({ type: 'int', value }),
  float: (value: number): Attribute => ({ type: 'float', value }),
  ints: (value: readonly number[]): Attribute => ({ type: 'ints', value }),
  floats: (value: readonly number[]): Attribute => ({ type: 'floats', value }),
  string: (value: string): Attribute => ({ type: 'string', value }),
};

export const MS_DOMAIN = 'com.microsoft';

const IR_VERSION = 8;
const OPSETS: ReadonlyMap<string, number> = new Map([
  ['', 17],
  [MS_DOMAIN, 1],
]);

/** ONNX's TensorProto data types (onnx.proto), for tensors and Cast's `to`. */
export const DATA_TYPE = { float: 1, uint8: 2, int8: 3, int32: 6, int64: 7 } as const;
const ATTRIBUTE_TYPE = { float: 1, int: 2, string: 3, floats: 6, ints: 7 } as const;

export interface NodeOptions {
  readonly domain?: string;
  /** Shapes of the outputs, one per output (the caller knows them: shapes are static). */
  readonly outputs: readonly Shape[];
}

export class OnnxGraph {
  private readonly nodes: ProtoMessage[] = [];
  private readonly initializers: { readonly name: string; readonly tensor: ProtoMessage }[] = [];
  private readonly inputs: ProtoMessage[] = [];
  private readonly outputs: ProtoMessage[] = [];
  private readonly used = new Set<string>();
  /** Names some node reads: only these initializers are written (a weight replaced by its int8 form drops out). */
  private readonly read = new Set<string>();
  /** The values of float constants by name, for rewrites that need a weight's data (quantization). */
  private readonly floatConstants = new Map<string, Float32Array>();
  private readonly prefixes: string[] = [];
  private counter = 0;
  /** Bytes of weight data, for reporting. */
  weightBytes = 0;

  constructor(readonly name: string) {}

  /** Names created inside `body` get `prefix/` in front, which makes graphs readable in Netron. */
  scope<T>(prefix: string, body: () => T): T {
    this.prefixes.push(prefix);
    try {
      return body();
    } finally {
      this.prefixes.pop();
    }
  }

  input(name: string, shape: Shape): Value {
    this.claim(name);
    this.inputs.push(valueInfo(name, shape));
    return { name, shape };
  }

  output(value: Value, name: string): Value {
    const renamed = this.node('Identity', [value], {}, { outputs: [value.shape] }, name)[0] as Value;
    this.outputs.push(valueInfo(renamed.name, renamed.shape));
    return renamed;
  }

  /** A weight or constant, stored in the model file. */
  constant(data: TensorData, shape: Shape, hint = 'const'): Value {
    const count = shape.reduce((a, b) => a * b, 1);
    if (count !== data.length) throw new Error(`constant ${hint}: ${data.length} values for shape [${shape.join(', ')}]`);
    const name = this.fresh(hint);
    const tensor = tensorProto(name, data, shape);
    this.initializers.push({ name, tensor });
    this.weightBytes += data.byteLength;
    if (data instanceof Float32Array) this.floatConstants.set(name, data);
    return { name, shape };
  }

  /** The data of a float constant made by `constant`, or undefined for a computed value. */
  constantData(value: Value): Float32Array | undefined {
    return this.floatConstants.get(value.name);
  }

  ints(values: readonly number[], hint = 'ints'): Value {
    return this.constant(
      BigInt64Array.from(values, (v) => BigInt(v)),
      [values.length],
      hint,
    );
  }

  scalar(value: number, hint = 'scalar'): Value {
    return this.constant(Float32Array.of(value), [], hint);
  }

  /** Adds a node; returns its outputs. An empty string stands for an omitted optional input. */
  node(opType: string, inputs: readonly (Value | '')[], attributes: Readonly<Record<string, Attribute>>, options: NodeOptions, outputName?: string): Value[] {
    const outputs = options.outputs.map((shape, i) => ({
      name: i === 0 && outputName !== undefined ? this.claim(outputName) : this.fresh(opType.toLowerCase()),
      shape,
    }));
    const node = new ProtoMessage();
    for (const input of inputs) {
      node.string(1, input === '' ? '' : input.name);
      if (input !== '') this.read.add(input.name);
    }
    for (const output of outputs) node.string(2, output.name);
    node.string(3, outputs[0]?.name ?? this.fresh(opType));
    node.string(4, opType);
    for (const [key, value] of Object.entries(attributes)) node.message(5, encodeAttribute(key, value));
    if (options.domain !== undefined && options.domain !== '') node.string(7, options.domain);
    this.nodes.push(node);
    return outputs;
  }

  /** One-output shorthand for `node`. */
  op(opType: string, inputs: readonly (Value | '')[], shape: Shape, attributes: Readonly<Record<string, Attribute>> = {}, domain?: string): Value {
    return this.node(opType, inputs, attributes, { outputs: [shape], ...(domain ? { domain } : {}) })[0] as Value;
  }

  /** The ModelProto, as chunks ready to be written. */
  encode(): ProtoMessage {
    const graph = new ProtoMessage();
    for (const node of this.nodes) graph.message(1, node);
    graph.string(2, this.name);
    for (const { name, tensor } of this.initializers) if (this.read.has(name)) graph.message(5, tensor);
    for (const input of this.inputs) graph.message(11, input);
    for (const output of this.outputs) graph.message(12, output);
    const model = new ProtoMessage();
    model.int(1, IR_VERSION);
    model.string(2, 'stemsplit');
    model.message(7, graph);
    for (const [domain, version] of OPSETS) {
      const opset = new ProtoMessage();
      if (domain !== '') opset.string(1, domain);
      opset.int(2, version);
      model.message(8, opset);
    }
    return model;
  }

  private fresh(hint: string): string {
    const base = [...this.prefixes, hint].join('/');
    let name: string;
    do name = `${base}_${this.counter++}`;
    while (this.used.has(name));
    this.used.add(name);
    return name;
  }

  private claim(name: string): string {
    if (this.used.has(name)) throw new Error(`duplicate graph name ${name}`);
    this.used.add(name);
    return name;
  }
}

/** Writes the encoded model to `path`, coalescing small chunks. */
export function writeModel(model: ProtoMessage, path: string): void {
  const fd = openSync(path, 'w');
  try {
    const buffer = Buffer.allocUnsafe(1 << 20);
    let used = 0;
    const drain = (): void => {
      if (used > 0) writeAll(fd, buffer.subarray(0, used));
      used = 0;
    };
    for (const chunk of model.encoded()) {
      if (chunk.byteLength > buffer.length / 4) {
        drain();
        writeAll(fd, chunk);
      } else {
        if (used + chunk.byteLength > buffer.length) drain();
        buffer.set(chunk, used);
        used += chunk.byteLength;
      }
    }
    drain();
  } finally {
    closeSync(fd);
  }
}

function writeAll(fd: number, bytes: Uint8Array): void {
  let done = 0;
  while (done < bytes.byteLength) done += writeSync(fd, bytes, done, bytes.byteLength - done);
}

/** A TensorProto holding `data` (raw little-endian bytes, referenced, not copied). */
export function tensorProto(name: string, data: TensorData, shape: Shape): ProtoMessage {
  const tensor = new ProtoMessage();
  for (const dim of shape) tensor.int(1, dim);
  tensor.int(2, dataType(data));
  tensor.string(8, name);
  return tensor.bytes(9, new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
}

/** A NodeProto; `attributes` are encoded ones (AttributeProto payloads), copied as they are. */
export function nodeProto(opType: string, inputs: readonly string[], outputs: readonly string[], attributes: readonly Uint8Array[] = []): ProtoMessage {
  const node = new ProtoMessage();
  for (const input of inputs) node.string(1, input);
  for (const output of outputs) node.string(2, output);
  node.string(3, outputs[0] ?? opType);
  node.string(4, opType);
  for (const attribute of attributes) node.bytes(5, attribute);
  return node;
}

function dataType(data: TensorData): number {
  if (data instanceof Float32Array) return DATA_TYPE.float;
  if (data instanceof BigInt64Array) return DATA_TYPE.int64;
  if (data instanceof Int8Array) return DATA_TYPE.int8;
  if (data instanceof Uint8Array) return DATA_TYPE.uint8;
  return DATA_TYPE.int32;
}

function valueInfo(name: string, shape: Shape): ProtoMessage {
  const dims = new ProtoMessage();
  for (const size of shape) dims.message(1, new ProtoMessage().int(1, size));
  const tensorType = new ProtoMessage().int(1, DATA_TYPE.float).message(2, dims);
  const type = new ProtoMessage().message(1, tensorType);
  return new ProtoMessage().string(1, name).message(2, type);
}

export function encodeAttribute(name: string, attribute: Attribute): ProtoMessage {
  const message = new ProtoMessage().string(1, name);
  switch (attribute.type) {
    case 'int':
      message.int(3, attribute.value);
      break;
    case 'float':
      message.float(2, attribute.value);
      break;
    case 'string':
      message.string(4, attribute.value);
      break;
    case 'ints':
      for (const value of attribute.value) message.int(8, value);
      break;
    case 'floats':
      for (const value of attribute.value) message.float(7, value);
      break;
  }
  return message.int(20, ATTRIBUTE_TYPE[attribute.type]);
}
