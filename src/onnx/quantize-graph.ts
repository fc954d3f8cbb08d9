/**
 * `--precision int8` for an ONNX graph stemsplit did not build itself (a bundled model's
 * `model.onnx`), rewritten in memory when it is loaded. The bundled networks are convolutions
 * (no Linear layers), so their matrix products are Conv nodes: each Conv whose weight is a float
 * initializer becomes the integer convolution ORT's own dynamic quantizer makes of it,
 *
 *   x ─ DynamicQuantizeLinear ─ ConvInteger(x_u8, w_s8, x_zero) ─ Cast ─ × (x_scale · w_scale) ─ + bias
 *
 * the weight stored as int8 with one scale per output channel (symmetric, zero point 0, as
 * quantize.ts does for matrix products), the activations quantized to uint8 per tensor at run
 * time. A Conv whose weight is computed in the graph (the STFT's DFT kernels) is a fixed
 * transform, not a learned weight, and stays float32, as does everything else.
 *
 * The first and the last learned Conv stay float32, as is usual in int8 networks: the first reads
 * the raw features (log-magnitudes spanning many decades, through few input channels, so int8 saves
 * nothing there), the last writes the mask logits every output sample goes through. Quantizing the
 * bundled graph's layers one at a time on a synthetic segment showed these two cost the most; keeping
 * them took its worst stem from about 33 to 44 dB against fp32 (chosen before any real clip was run).
 */
import { attr, DATA_TYPE, encodeAttribute, nodeProto, tensorProto } from './graph.js';
import { defaultOpset, GRAPH, graphOf, MODEL, readGraph, readString, TENSOR, type Graph, type Initializer, type Node } from './model-proto.js';
import { concatBytes, lengthField, protoFields, rewriteMessage, type ProtoField } from './protobuf.js';
import { quantizeChannels } from './quantize.js';

/** DynamicQuantizeLinear is in the default domain from opset 11. */
const MIN_OPSET = 11;
/** Names of the tensors the rewrite adds start with this, which no exporter writes. */
const PREFIX = 'stemsplit_int8/';

export interface QuantizedGraph {
  readonly model: Uint8Array;
  /** How many Conv nodes now run in int8 (0: the graph is returned unchanged). */
  readonly convolutions: number;
}

/** `model` with its learned convolutions in int8 (see the file comment). */
export function quantizeConvolutions(model: Uint8Array): QuantizedGraph {
  const graph = graphOf(model);
  if (defaultOpset(model) < MIN_OPSET) return { model, convolutions: 0 };
  const rewrite = rewriteGraph(graph);
  if (rewrite.convolutions === 0) return { model, convolutions: 0 };
  const out = rewriteMessage(model, (field) => (field.number === MODEL.graph ? lengthField(MODEL.graph, rewrite.graph) : field.raw));
  return { model: out, convolutions: rewrite.convolutions };
}

export interface LearnedConvolution {
  /** The name of the weight initializer. */
  readonly weight: string;
  /** [C_out, C_in / group, …kernel]. */
  readonly dims: readonly number[];
  readonly data: Float32Array;
}

/** The Conv nodes whose weight is a float initializer, in graph order (what int8 would quantize, ends included). */
export function learnedConvolutions(model: Uint8Array): LearnedConvolution[] {
  return learnedConvs(readGraph(graphOf(model))).map(({ node, conv }) => ({
    weight: node.inputs[1] as string,
    dims: conv.weight.dims,
    data: conv.weight.data,
  }));
}

function learnedConvs(graph: Graph): { node: Node; conv: QuantizableConv }[] {
  return graph.nodes.flatMap((node) => {
    const conv = quantizableConv(node, graph.initializers);
    return conv === undefined ? [] : [{ node, conv }];
  });
}

function rewriteGraph(graph: Uint8Array): { graph: Uint8Array; convolutions: number } {
  const parsed = readGraph(graph);
  const { nodes } = parsed;
  const replaced = new Map<Node, Uint8Array[]>();
  const added: Uint8Array[] = [];
  const quantizedInputs = new Set<string>();
  for (const { node, conv } of learnedConvs(parsed).slice(1, -1)) {
    const { nodes: newNodes, initializers: newInitializers } = integerConv(node, conv, quantizedInputs);
    replaced.set(node, newNodes);
    added.push(...newInitializers);
  }
  if (replaced.size === 0) return { graph, convolutions: 0 };
  const stillRead = new Set([...parsed.outputs, ...nodes.filter((node) => !replaced.has(node)).flatMap((node) => node.inputs)]);
  let nodeIndex = 0;
  const parts = [...protoFields(graph)].flatMap((field): Uint8Array[] => {
    if (field.number === GRAPH.node) return replaced.get(nodes[nodeIndex++] as Node) ?? [field.raw];
    if (field.number === GRAPH.initializer) return isDroppable(field, replaced, stillRead) ? [] : [field.raw];
    return [field.raw];
  });
  return { graph: concatBytes([...parts, ...added]), convolutions: replaced.size };
}

/** A replaced Conv's float weight and bias are dropped unless a node left as it was still reads them. */
function isDroppable(field: ProtoField, replaced: ReadonlyMap<Node, unknown>, stillRead: ReadonlySet<string>): boolean {
  const name = readString(field.body, TENSOR.name) ?? '';
  if (stillRead.has(name)) return false;
  for (const node of replaced.keys()) if (node.inputs.slice(1).includes(name)) return true;
  return false;
}

interface QuantizableConv {
  readonly weight: Initializer & { readonly data: Float32Array };
  readonly bias: Float32Array | undefined;
}

/** The Conv's float weight (and bias) when both are initializers; undefined for any other node. */
function quantizableConv(node: Node, initializers: ReadonlyMap<string, Initializer>): QuantizableConv | undefined {
  if (node.opType !== 'Conv' || (node.domain !== '' && node.domain !== 'ai.onnx')) return undefined;
  const [, weightName, biasName] = node.inputs;
  const weight = weightName === undefined ? undefined : initializers.get(weightName);
  if (weight?.data === undefined || weight.dims.length < 3) return undefined;
  if (biasName === undefined || biasName === '') return { weight: { dims: weight.dims, data: weight.data }, bias: undefined };
  const bias = initializers.get(biasName)?.data;
  return bias === undefined ? undefined : { weight: { dims: weight.dims, data: weight.data }, bias };
}

/** The nodes and initializers (encoded) that replace one Conv. */
function integerConv(node: Node, conv: QuantizableConv, quantizedInputs: Set<string>): { nodes: Uint8Array[]; initializers: Uint8Array[] } {
  const [input] = node.inputs as [string];
  const [output] = node.outputs as [string];
  const channels = conv.weight.dims[0] as number;
  const perChannel = [channels, ...conv.weight.dims.slice(2).map(() => 1)];
  const { values, scales } = quantizeChannels(conv.weight.data, channels);
  const name = (what: string): string => `${PREFIX}${output}/${what}`;
  const quantized = { x: `${PREFIX}${input}/u8`, scale: `${PREFIX}${input}/scale`, zero: `${PREFIX}${input}/zero_point` };
  const nodes = [];
  if (!quantizedInputs.has(input)) {
    quantizedInputs.add(input);
    nodes.push(nodeProto('DynamicQuantizeLinear', [input], [quantized.x, quantized.scale, quantized.zero]));
  }
  const scaled = conv.bias === undefined ? output : name('scaled');
  nodes.push(
    nodeProto('ConvInteger', [quantized.x, name('weight'), quantized.zero], [name('int32')], node.attributes),
    nodeProto('Cast', [name('int32')], [name('float')], [encodeAttribute('to', attr.int(DATA_TYPE.float)).toBytes()]),
    nodeProto('Mul', [quantized.scale, name('weight_scale')], [name('scale')]),
    nodeProto('Mul', [name('float'), name('scale')], [scaled]),
  );
  if (conv.bias !== undefined) nodes.push(nodeProto('Add', [scaled, name('bias')], [output]));
  const initializers = [tensorProto(name('weight'), values, conv.weight.dims), tensorProto(name('weight_scale'), scales, perChannel)];
  if (conv.bias !== undefined) initializers.push(tensorProto(name('bias'), conv.bias, perChannel));
  return {
    nodes: nodes.map((message) => lengthField(GRAPH.node, message.toBytes())),
    initializers: initializers.map((message) => lengthField(GRAPH.initializer, message.toBytes())),
  };
}
