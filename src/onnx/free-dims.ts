/**
 * Frees fixed axes of an ONNX model's graph inputs and outputs: each named axis becomes a
 * symbolic dimension, and the graph's `value_info` (shape hints for inner tensors, which would
 * pin the old size) is dropped. ONNX Runtime checks a feed against the declared input shape, so
 * a graph exported for one time length runs on another only this way (what onnx2torch gives
 * PyTorch users). Everything else is copied byte for byte.
 */

import { lengthField, rewriteMessage as rewrite } from './protobuf.js';

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
        const tensorType = rewrite(tensor.body, (shape) =>
          shape.number === TENSOR_SHAPE ? lengthField(TENSOR_SHAPE, freeShape(shape.body, axes, name)) : shape.raw,
        );
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
