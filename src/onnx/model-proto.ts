/**
 * Reading an encoded ONNX ModelProto without decoding it all: its graph, the graph's nodes and
 * initializers, the opset it imports. Payloads are views into the model's bytes. The in-memory
 * rewrites (quantize-graph.ts for int8, gpu-graph.ts for the GPU) read graphs through it.
 */
import { StemsplitError } from '../errors.js';
import { DATA_TYPE } from './graph.js';
import { packedVarints, protoFields } from './protobuf.js';

// Field numbers of onnx.proto.
export const MODEL = { graph: 7, opsetImport: 8 } as const;
const OPSET = { domain: 1, version: 2 } as const;
export const GRAPH = { node: 1, initializer: 5, output: 12 } as const;
const NODE = { input: 1, output: 2, opType: 4, attribute: 5, domain: 7 } as const;
export const TENSOR = { dims: 1, dataType: 2, floatData: 4, int64Data: 7, name: 8, rawData: 9 } as const;
const VALUE_INFO_NAME = 1;

export interface Initializer {
  readonly dims: readonly number[];
  /** Float32 values stored in the file (a copy); undefined for other types or external data. */
  readonly data: Float32Array | undefined;
  /** Int64 values stored in the file; undefined for other types or external data. */
  readonly ints?: readonly number[];
}

export interface Node {
  readonly opType: string;
  readonly domain: string;
  readonly inputs: readonly string[];
  readonly outputs: readonly string[];
  /** Encoded AttributeProto payloads. */
  readonly attributes: readonly Uint8Array[];
}

export interface Graph {
  readonly initializers: ReadonlyMap<string, Initializer>;
  readonly nodes: readonly Node[];
  readonly outputs: ReadonlySet<string>;
}

export function graphOf(model: Uint8Array): Uint8Array {
  const graphField = [...protoFields(model)].find((field) => field.number === MODEL.graph);
  if (graphField === undefined) throw new StemsplitError('MODEL_INVALID', 'the ONNX file has no graph');
  return graphField.body;
}

export function readGraph(graph: Uint8Array): Graph {
  const initializers = new Map<string, Initializer>();
  const nodes: Node[] = [];
  const outputs = new Set<string>();
  for (const field of protoFields(graph)) {
    if (field.number === GRAPH.initializer) {
      const [name, initializer] = readInitializer(field.body);
      initializers.set(name, initializer);
    } else if (field.number === GRAPH.node) nodes.push(readNode(field.body));
    else if (field.number === GRAPH.output) outputs.add(readString(field.body, VALUE_INFO_NAME) ?? '');
  }
  return { initializers, nodes, outputs };
}

export function readNode(body: Uint8Array): Node {
  const inputs: string[] = [];
  const outputs: string[] = [];
  const attributes: Uint8Array[] = [];
  let opType = '';
  let domain = '';
  for (const field of protoFields(body)) {
    if (field.number === NODE.input) inputs.push(decode(field.body));
    else if (field.number === NODE.output) outputs.push(decode(field.body));
    else if (field.number === NODE.opType) opType = decode(field.body);
    else if (field.number === NODE.domain) domain = decode(field.body);
    else if (field.number === NODE.attribute) attributes.push(field.body);
  }
  return { opType, domain, inputs, outputs, attributes };
}

/** An initializer's name, dims and, for float32 or int64 data stored in the file, its values (a copy). */
function readInitializer(body: Uint8Array): [string, Initializer] {
  let name = '';
  const dims: number[] = [];
  let dataType = 0;
  let bytes: Uint8Array | undefined;
  let packedInts: number[] | undefined;
  for (const field of protoFields(body)) {
    if (field.number === TENSOR.name) name = decode(field.body);
    else if (field.number === TENSOR.dataType) dataType = field.value;
    else if (field.number === TENSOR.dims) dims.push(...(field.wire === 0 ? [field.value] : packedVarints(field.body)));
    else if (field.number === TENSOR.rawData || (field.number === TENSOR.floatData && field.wire === 2)) bytes = field.body;
    else if (field.number === TENSOR.int64Data && field.wire === 2) packedInts = packedVarints(field.body);
  }
  const count = dims.reduce((a, b) => a * b, 1);
  const usable = dataType === DATA_TYPE.float && bytes !== undefined && bytes.byteLength === 4 * count;
  const ints =
    dataType !== DATA_TYPE.int64
      ? undefined
      : bytes !== undefined && bytes.byteLength === 8 * count
        ? Array.from(new BigInt64Array(Uint8Array.from(bytes).buffer), Number)
        : packedInts;
  return [name, { dims, data: usable ? new Float32Array(Uint8Array.from(bytes as Uint8Array).buffer) : undefined, ...(ints === undefined ? {} : { ints }) }];
}

/** The version of the default ONNX domain the model imports (0 when it names none). */
export function defaultOpset(model: Uint8Array): number {
  for (const field of protoFields(model)) {
    if (field.number !== MODEL.opsetImport) continue;
    const domain = readString(field.body, OPSET.domain) ?? '';
    if (domain !== '' && domain !== 'ai.onnx') continue;
    for (const entry of protoFields(field.body)) if (entry.number === OPSET.version) return entry.value;
  }
  return 0;
}

export function readString(message: Uint8Array, number: number): string | undefined {
  for (const field of protoFields(message)) if (field.number === number) return decode(field.body);
  return undefined;
}

const decoder = new TextDecoder();
export function decode(bytes: Uint8Array): string {
  return decoder.decode(bytes);
}
