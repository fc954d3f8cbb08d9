/**
 * Frees fixed axes of an ONNX model's graph inputs and outputs: each named axis becomes a
 * symbolic dimension, and the graph's `value_info` (shape hints for inner tensors, which would
 * pin the old size) is dropped. ONNX Runtime checks a feed against the declared input shape, so
 * a graph exported for one time length runs on another only this way (what onnx2torch gives
 * PyTorch users). Everything else is copied byte for byte.
 */

// Field numbers of onnx.proto.
const MODEL_GRAPH = 7;
const GRAPH_INPUT = 11;
const GRAPH_OUTPUT = 12;
const GRAPH_VALUE_INFO = 13;
const VALUE_INFO_TYPE = 2;
const TYPE_TENSOR = 1;
const TENSOR_SHAPE = 2;
const SHAPE_DIM = 1;
const DIM_PARAM = 2;

interface Field {
  readonly number: number;
  readonly wire: number;
  /** The whole field, tag included. */
  readonly raw: Uint8Array;
  /** The payload of a length-delimited field. */
  readonly body: Uint8Array;
}

/** `model` with the given axes of every graph input and output symbolic (named `name_axis`). */
export function freeInputOutputAxes(model: Uint8Array, axes: readonly number[], name = 'free'): Uint8Array {
  return rewrite(model, (field) => (field.number === MODEL_GRAPH ? lengthField(MODEL_GRAPH, freeGraph(field.body, axes, name)) : field.raw));
}

function freeGraph(graph: Uint8Array, axes: readonly number[], name: string): Uint8Array {
  return rewrite(graph, (field) => {
    if (field.number === GRAPH_VALUE_INFO) return new Uint8Array(0);
    if (field.number !== GRAPH_INPUT && field.number !== GRAPH_OUTPUT) return field.raw;
    const valueInfo = rewrite(field.body, (info) => {
      if (info.number !== VALUE_INFO_TYPE) return info.raw;
      const type = rewrite(info.body, (tensor) => {
        if (tensor.number !== TYPE_TENSOR) return tensor.raw;
        const tensorType = rewrite(tensor.body, (shape) => (shape.number === TENSOR_SHAPE ? lengthField(TENSOR_SHAPE, freeShape(shape.body, axes, name)) : shape.raw));
        return lengthField(TYPE_TENSOR, tensorType);
      });
      return lengthField(VALUE_INFO_TYPE, type);
    });
    return lengthField(field.number, valueInfo);
  });
}

function freeShape(shape: Uint8Array, axes: readonly number[], name: string): Uint8Array {
  let axis = 0;
  return rewrite(shape, (dim) => {
    if (dim.number !== SHAPE_DIM) return dim.raw;
    const index = axis++;
    if (!axes.includes(index)) return dim.raw;
    return lengthField(SHAPE_DIM, lengthField(DIM_PARAM, new TextEncoder().encode(`${name}_${index}`)));
  });
}

/** The message with each field replaced by what `map` returns (its raw bytes to keep it, empty to drop it). */
function rewrite(message: Uint8Array, map: (field: Field) => Uint8Array): Uint8Array {
  const parts: Uint8Array[] = [];
  for (const field of fields(message)) parts.push(map(field));
  return concat(parts);
}

function* fields(message: Uint8Array): Generator<Field> {
  let at = 0;
  while (at < message.length) {
    const start = at;
    const [tag, afterTag] = varint(message, at);
    const number = Math.floor(tag / 8);
    const wire = tag % 8;
    let end: number;
    let body = message.subarray(afterTag, afterTag);
    if (wire === 0) end = varint(message, afterTag)[1];
    else if (wire === 1) end = afterTag + 8;
    else if (wire === 5) end = afterTag + 4;
    else if (wire === 2) {
      const [length, afterLength] = varint(message, afterTag);
      end = afterLength + length;
      body = message.subarray(afterLength, end);
    } else throw new Error(`unsupported protobuf wire type ${wire}`);
    if (end > message.length) throw new Error('truncated protobuf message');
    at = end;
    yield { number, wire, raw: message.subarray(start, end), body };
  }
}

function varint(bytes: Uint8Array, at: number): [number, number] {
  let value = 0;
  let scale = 1;
  for (let i = at; i < bytes.length; i++) {
    const byte = bytes[i] as number;
    value += (byte & 0x7f) * scale;
    if (byte < 0x80) return [value, i + 1];
    scale *= 128;
  }
  throw new Error('truncated protobuf varint');
}

function lengthField(number: number, body: Uint8Array): Uint8Array {
  return concat([encodeVarint(number * 8 + 2), encodeVarint(body.length), body]);
}

function encodeVarint(value: number): Uint8Array {
  const bytes: number[] = [];
  let rest = value;
  while (rest >= 0x80) {
    bytes.push((rest % 128) | 0x80);
    rest = Math.floor(rest / 128);
  }
  bytes.push(rest);
  return Uint8Array.from(bytes);
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}
