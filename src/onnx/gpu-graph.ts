/**
 * A graph reshaped where ONNX Runtime's WebGPU provider mishandles it, rewritten in memory as a
 * session opens on the GPU (session.ts). The CPU opens every graph as it is, so its results do
 * not change, and a cached graph serves both devices.
 *
 * - com.microsoft.MultiHeadAttention: the WebGPU kernel (onnxruntime-node 1.30, Dawn on Vulkan)
 *   is wrong once a sequence is 32 or longer: 18-34 dB SNR against the CPU's on lavapipe, whatever
 *   the batch, heads, head size or bias, exact below 32. It becomes the attention written out per
 *   head, q·kᵀ · scale → Softmax → · v (two MatMuls and a Softmax, all on the GPU: 129-132 dB
 *   against the CPU's MultiHeadAttention on the same shapes). The scores are materialised; the
 *   graphs that use it already run long batches in groups whose scores fit (roformer/graph.ts),
 *   and they are made one head at a time: a tensor larger than WebGPU's default storage binding
 *   (maxStorageBufferBindingSize, 128 MiB) comes out wrong without an error (a Softmax over
 *   [1, 8, 2688, 2688], 221 MiB, HTDemucs' cross-attention scores: 3.8 dB; [1, 4, 2688, 2688],
 *   110 MiB: 133 dB), so whole-graph HTDemucs would be 30 dB off in its transformer.
 * - A Split into more than SPLIT_OUTPUTS parts: the WebGPU Split binds its input and every
 *   output as storage buffers of one shader, and a shader stage has few (WebGPU guarantees 8,
 *   lavapipe offers 16), so RoFormer's Split into its bands failed as it ran ("Too many storage
 *   buffers in shader. Current: 17, Max is 16"). It becomes a tree of Splits (the same values).
 *
 * - A Conv with 6, 9, 18, … input channels (a multiple of 3 above 3 that is not one of 4) and a
 *   multiple of 4 output channels, kernel larger than 1: the WebGPU kernel's path for inputs in
 *   threes gives garbage (1-4 dB SNR against the CPU on lavapipe, 1-D and 2-D alike; 3, 5, 7, 10,
 *   12, 24 input channels measured 131-147 dB), which made VR 5.1's 6-channel encoder 16 dB off.
 *   Its input is padded with zero channels to a multiple of 4 and its weight with zero filters
 *   (the same sums), which takes the four-at-a-time path.
 *
 * A node whose form is not the one handled (attention with a mask, past state or packed inputs,
 * no head size to be found; a Split whose sizes are not a constant) is left as it is.
 */
import { attr, encodeAttribute, nodeProto, tensorProto } from './graph.js';
import { defaultOpset, GRAPH, graphOf, MODEL, readGraph, type Graph, type Node } from './model-proto.js';
import { concatBytes, lengthField, protoFields, rewriteMessage } from './protobuf.js';

/** One input and seven outputs: WebGPU's guaranteed eight storage buffers per shader stage. */
export const SPLIT_OUTPUTS = 7;
/** Names of the tensors the rewrite adds start with this, which no exporter writes. */
const PREFIX = 'stemsplit_gpu/';
const MS_DOMAIN = 'com.microsoft';

export interface GpuGraph {
  readonly model: Uint8Array;
  /** MultiHeadAttention nodes written out as MatMul, Softmax, MatMul. */
  readonly attention: number;
  /** Split nodes made trees of Splits. */
  readonly splits: number;
  /** Conv nodes given zero input channels up to a multiple of 4. */
  readonly convolutions: number;
}

/** `model` with what the WebGPU provider mishandles reshaped (see the file comment); the same bytes when nothing is. */
export function gpuGraph(model: Uint8Array): GpuGraph {
  const graph = graphOf(model);
  const parsed = readGraph(graph);
  const replaced = new Map<Node, Rewrite>();
  const counts = { attention: 0, splits: 0, convolutions: 0 };
  const padsAsInput = defaultOpset(model) >= 11;
  for (const node of parsed.nodes) {
    const [kind, rewrite] = isAttention(node)
      ? (['attention', writtenOutAttention(node, parsed)] as const)
      : isWideSplit(node)
        ? (['splits', splitTree(node, parsed)] as const)
        : isConv(node) && padsAsInput
          ? (['convolutions', paddedConv(node, parsed)] as const)
          : [undefined, undefined];
    if (kind === undefined || rewrite === undefined) continue;
    replaced.set(node, rewrite);
    counts[kind]++;
  }
  if (replaced.size === 0) return { model, ...counts };
  let nodeIndex = 0;
  const parts = [...protoFields(graph)].flatMap((field): Uint8Array[] => {
    if (field.number !== GRAPH.node) return [field.raw];
    const rewrite = replaced.get(parsed.nodes[nodeIndex++] as Node);
    return rewrite === undefined ? [field.raw] : rewrite.nodes;
  });
  const added = [...replaced.values()].flatMap((rewrite) => rewrite.initializers);
  const rewritten = concatBytes([...parts, ...added]);
  return {
    model: rewriteMessage(model, (field) => (field.number === MODEL.graph ? lengthField(MODEL.graph, rewritten) : field.raw)),
    ...counts,
  };
}

/** Encoded NodeProto and TensorProto fields (of the graph) that replace one node. */
interface Rewrite {
  readonly nodes: Uint8Array[];
  readonly initializers: Uint8Array[];
}

class RewriteBuilder {
  readonly nodes: Uint8Array[] = [];
  readonly initializers: Uint8Array[] = [];

  constructor(private readonly prefix: string) {}

  name(what: string): string {
    return `${this.prefix}${what}`;
  }

  node(opType: string, inputs: readonly string[], output: string, attributes: readonly Uint8Array[] = []): string {
    this.nodes.push(lengthField(GRAPH.node, nodeProto(opType, inputs, [output], attributes).toBytes()));
    return output;
  }

  nodeWithOutputs(opType: string, inputs: readonly string[], outputs: readonly string[], attributes: readonly Uint8Array[]): void {
    this.nodes.push(lengthField(GRAPH.node, nodeProto(opType, inputs, outputs, attributes).toBytes()));
  }

  constant(what: string, data: Float32Array | BigInt64Array, shape: readonly number[]): string {
    const name = this.name(what);
    this.initializers.push(lengthField(GRAPH.initializer, tensorProto(name, data, shape).toBytes()));
    return name;
  }

  done(): Rewrite {
    return { nodes: this.nodes, initializers: this.initializers };
  }
}

function isAttention(node: Node): boolean {
  return node.opType === 'MultiHeadAttention' && node.domain === MS_DOMAIN;
}

function isWideSplit(node: Node): boolean {
  return node.opType === 'Split' && (node.domain === '' || node.domain === 'ai.onnx') && node.outputs.length > SPLIT_OUTPUTS;
}

/** An AttributeProto's name and its int (i) or float (f) value. */
function readAttribute(body: Uint8Array): { name: string; int?: number; float?: number } {
  let name = '';
  let int: number | undefined;
  let float: number | undefined;
  for (const field of protoFields(body)) {
    if (field.number === 1) name = new TextDecoder().decode(field.body);
    else if (field.number === 2 && field.wire === 5)
      float = new DataView(field.raw.buffer, field.raw.byteOffset + field.raw.byteLength - 4, 4).getFloat32(0, true);
    else if (field.number === 3 && field.wire === 0) int = field.value;
  }
  return { name, ...(int === undefined ? {} : { int }), ...(float === undefined ? {} : { float }) };
}

/**
 * MultiHeadAttention on 3-D query, key and value [batch, sequence, heads·size] (an optional
 * constant bias [3·heads·size] added to each) as
 *
 *   q [B, S, H, D] → [B, H, S, D];  k → [B, H, D, L];  v → [B, H, L, D]
 *   per head h: Softmax(q_h·k_h · scale) · v_h → [B, 1, S, D]; concatenated → [B, H, S, D] → [B, S, H·D]
 *
 * with ORT's scale: the attribute, else 1/√D.
 */
function writtenOutAttention(node: Node, graph: Graph): Rewrite | undefined {
  const inputs = node.inputs.slice();
  while (inputs.length > 0 && inputs[inputs.length - 1] === '') inputs.pop();
  const [query, key, value, biasName] = inputs as [string, string | undefined, string | undefined, string | undefined];
  if (inputs.length > 4 || !key || !value || node.outputs.length !== 1) return undefined;
  const attributes = node.attributes.map(readAttribute);
  const heads = attributes.find((a) => a.name === 'num_heads')?.int;
  if (heads === undefined || heads < 1) return undefined;
  if (attributes.some((a) => a.name === 'unidirectional' && a.int !== 0)) return undefined;
  const bias = biasName === undefined || biasName === '' ? undefined : graph.initializers.get(biasName)?.data;
  if (biasName && bias === undefined) return undefined;
  const hidden = bias === undefined ? undefined : bias.length / 3;
  const given = attributes.find((a) => a.name === 'scale')?.float;
  const scale = given !== undefined && given !== 0 ? given : hidden === undefined ? undefined : Math.fround(1 / Math.sqrt(hidden / heads));
  if (scale === undefined) return undefined;

  const out = new RewriteBuilder(`${PREFIX}${node.outputs[0]}/`);
  const withBias = (input: string, part: number, what: string): string =>
    bias === undefined
      ? input
      : out.node(
          'Add',
          [input, out.constant(`${what}_bias`, bias.slice(part * (hidden as number), (part + 1) * (hidden as number)), [hidden as number])],
          out.name(`${what}_biased`),
        );
  const headsShape = out.constant('heads_shape', BigInt64Array.from([0n, 0n, BigInt(heads), -1n]), [4]);
  const perHead = (input: string, what: string, perm: readonly number[]): string =>
    out.node('Transpose', [out.node('Reshape', [input, headsShape], out.name(`${what}_4d`))], out.name(`${what}_heads`), [
      encodeAttribute('perm', attr.ints(perm)).toBytes(),
    ]);
  const q = perHead(withBias(query, 0, 'q'), 'q', [0, 2, 1, 3]);
  const k = perHead(withBias(key, 1, 'k'), 'k', [0, 2, 3, 1]);
  const v = perHead(withBias(value, 2, 'v'), 'v', [0, 2, 1, 3]);
  // One head at a time: a tensor over WebGPU's 128 MiB storage binding comes out wrong (see the file comment).
  const scaleValue = out.constant('scale', Float32Array.of(scale), []);
  const axis = out.constant('head_axis', BigInt64Array.of(1n), [1]);
  const perHeadOutputs = Array.from({ length: heads }, (_, h) => {
    const bounds = [out.constant(`head${h}_start`, BigInt64Array.of(BigInt(h)), [1]), out.constant(`head${h}_end`, BigInt64Array.of(BigInt(h + 1)), [1]), axis];
    const pick = (t: string, what: string): string => (heads === 1 ? t : out.node('Slice', [t, ...bounds], out.name(`${what}${h}`)));
    const scores = out.node('Mul', [out.node('MatMul', [pick(q, 'q'), pick(k, 'k')], out.name(`scores${h}`)), scaleValue], out.name(`scaled${h}`));
    const weights = out.node('Softmax', [scores], out.name(`weights${h}`), [encodeAttribute('axis', attr.int(-1)).toBytes()]);
    return out.node('MatMul', [weights, pick(v, 'v')], out.name(`attended${h}`));
  });
  const attended =
    heads === 1 ? (perHeadOutputs[0] as string) : out.node('Concat', perHeadOutputs, out.name('attended'), [encodeAttribute('axis', attr.int(1)).toBytes()]);
  const rows = out.node('Transpose', [attended], out.name('rows'), [encodeAttribute('perm', attr.ints([0, 2, 1, 3])).toBytes()]);
  out.node('Reshape', [rows, out.constant('merged_shape', BigInt64Array.from([0n, 0n, -1n]), [3])], node.outputs[0] as string);
  return out.done();
}

/** A Split whose sizes are a constant input, as Splits of at most SPLIT_OUTPUTS parts (its attributes, the axis, kept on each). */
function splitTree(node: Node, graph: Graph): Rewrite | undefined {
  const [input, sizesName] = node.inputs as [string, string | undefined];
  const sizes = sizesName === undefined ? undefined : graph.initializers.get(sizesName)?.ints;
  if (sizes === undefined || sizes.length !== node.outputs.length) return undefined;
  const out = new RewriteBuilder(`${PREFIX}${node.outputs[0]}/`);
  let made = 0;
  const split = (from: string, parts: readonly number[], names: readonly string[]): void => {
    const step = made++;
    if (parts.length <= SPLIT_OUTPUTS) {
      out.nodeWithOutputs('Split', [from, out.constant(`sizes${step}`, BigInt64Array.from(parts.map(BigInt)), [parts.length])], names, node.attributes);
      return;
    }
    const per = Math.ceil(parts.length / Math.ceil(parts.length / SPLIT_OUTPUTS));
    const groups: number[][] = [];
    for (let start = 0; start < parts.length; start += per) groups.push(parts.slice(start, start + per));
    const groupNames = groups.map((_, g) => out.name(`group${step}_${g}`));
    split(
      from,
      groups.map((group) => group.reduce((a, b) => a + b, 0)),
      groupNames,
    );
    let at = 0;
    groups.forEach((group, g) => {
      split(groupNames[g] as string, group, names.slice(at, at + group.length));
      at += group.length;
    });
  };
  split(input, sizes, node.outputs);
  return out.done();
}

function isConv(node: Node): boolean {
  return node.opType === 'Conv' && (node.domain === '' || node.domain === 'ai.onnx');
}

/** Whether the WebGPU Conv takes its inputs-in-threes path, the one that is wrong (see the file comment). */
export function takesThreesPath(inChannels: number, outChannels: number, kernel: readonly number[]): boolean {
  return inChannels > 3 && inChannels % 3 === 0 && inChannels % 4 !== 0 && outChannels % 4 === 0 && kernel.some((k) => k > 1);
}

/** The Conv on its input padded with zero channels to a multiple of 4, its constant weight with zero filters to match. */
function paddedConv(node: Node, graph: Graph): Rewrite | undefined {
  const [input, weightName, ...rest] = node.inputs as [string, string | undefined, ...string[]];
  const weight = weightName === undefined ? undefined : graph.initializers.get(weightName);
  if (weight?.data === undefined || weight.dims.length < 3) return undefined;
  if (node.attributes.map(readAttribute).some((a) => a.name === 'group' && a.int !== 1)) return undefined;
  const [outChannels, inChannels, ...kernel] = weight.dims as [number, number, ...number[]];
  if (!takesThreesPath(inChannels, outChannels, kernel)) return undefined;
  const padded = 4 * Math.ceil(inChannels / 4);
  const perFilter = kernel.reduce((a, b) => a * b, 1);
  const data = new Float32Array(outChannels * padded * perFilter);
  for (let o = 0; o < outChannels; o++) data.set(weight.data.subarray(o * inChannels * perFilter, (o + 1) * inChannels * perFilter), o * padded * perFilter);
  const out = new RewriteBuilder(`${PREFIX}${node.outputs[0]}/`);
  const rank = weight.dims.length;
  // ONNX Pad's pads: every axis' start, then every axis' end; only the channels' end grows.
  const pads = new BigInt64Array(2 * rank);
  pads[rank + 1] = BigInt(padded - inChannels);
  const paddedInput = out.node('Pad', [input, out.constant('pads', pads, [2 * rank])], out.name('input'));
  out.nodeWithOutputs('Conv', [paddedInput, out.constant('weight', data, [outChannels, padded, ...kernel]), ...rest], node.outputs, node.attributes);
  return out.done();
}
