/**
 * What a graph's activations peak at if each tensor is freed right after its last reader: runs the
 * model once in ONNX Runtime (random inputs of the given shapes, the split workers' session options:
 * no arena, no memory pattern, no spinning), with its profile and the graph as ORT optimised it,
 * then replays the executed nodes in ORT's own order with each node's output size from the profile.
 * Set beside the live heap bytes `scripts/bench/malloc-live.c` counts for the same run, the gap is
 * what ORT's plan holds beyond that (docs/mdx23c.md, "Memory").
 *
 *   node --import tsx scripts/bench/ort-liveness.ts model.onnx --input spectrum=1,16,256,1024 [--input …] [--top 12]
 *
 * Prints the replayed peak, the node it falls at and the largest tensors live there.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { concatBytes, lengthField, protoFields, rewriteMessage } from '../../src/onnx/protobuf.js';
import { createOrtSession, ORT_PROFILE_ENV, runTensors, type Float32Tensor } from '../../src/onnx/session.js';
import { readKernelEvents } from './ort-profile-events.js';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { input: { type: 'string', multiple: true }, top: { type: 'string', default: '12' }, threads: { type: 'string', default: '2' } },
});
const model = positionals[0];
if (model === undefined || !values.input?.length) throw new Error('usage: ort-liveness.ts model.onnx --input name=d1,d2,… [--input …]');

interface GraphNode {
  readonly name: string;
  readonly op: string;
  readonly inputs: readonly string[];
  readonly outputs: readonly string[];
}

const MiB = 2 ** 20;
const decoder = new TextDecoder();

/** One NodeProto (input 1, output 2, name 3, op_type 4). */
function readNode(body: Uint8Array): GraphNode {
  const node = { name: '', op: '', inputs: [] as string[], outputs: [] as string[] };
  for (const part of protoFields(body)) {
    const text = decoder.decode(part.body);
    if (part.number === 1) node.inputs.push(text);
    else if (part.number === 2) node.outputs.push(text);
    else if (part.number === 3) node.name = text;
    else if (part.number === 4) node.op = text;
  }
  return node;
}

/** The nodes of an ONNX model (ModelProto.graph = 7; GraphProto.node = 1). */
function graphNodes(bytes: Uint8Array): Map<string, GraphNode> {
  const nodes = new Map<string, GraphNode>();
  for (const field of protoFields(bytes)) {
    if (field.number !== 7) continue;
    for (const item of protoFields(field.body)) {
      if (item.number !== 1) continue;
      const node = readNode(item.body);
      nodes.set(node.name, node);
    }
  }
  return nodes;
}

/**
 * The model with a name on every node. A graph exported without node names (torch.onnx's, e.g. the
 * bundled model's) leaves ORT to make up the names its profile reports, and those are not the names
 * it writes into the optimised graph, so the two could not be matched.
 */
function withNodeNames(bytes: Uint8Array): Uint8Array {
  const encoder = new TextEncoder();
  let unnamed = 0;
  const nameNode = (node: Uint8Array): Uint8Array => {
    const { name, op } = readNode(node);
    if (name) return node;
    // A repeated singular field is read as its last occurrence, so appending the name is enough.
    return concatBytes([node, lengthField(3, encoder.encode(`${op}_unnamed_${unnamed++}`))]);
  };
  const graph = (body: Uint8Array) => rewriteMessage(body, (item) => (item.number === 1 ? lengthField(1, nameNode(item.body)) : item.raw));
  return rewriteMessage(bytes, (field) => (field.number === 7 ? lengthField(7, graph(field.body)) : field.raw));
}

/** The executed nodes in order, with the bytes each wrote, from ORT's profile. */
function executed(profileDir: string): { name: string; bytes: number }[] {
  const file = readdirSync(profileDir).find((name) => name.endsWith('.json'));
  if (file === undefined) throw new Error('ONNX Runtime wrote no profile');
  return readKernelEvents(path.join(profileDir, file)).map((event) => ({ name: event.node, bytes: event.outputBytes }));
}

const work = mkdtempSync(path.join(tmpdir(), 'stemsplit-liveness-'));
try {
  process.env[ORT_PROFILE_ENV] = path.join(work, 'profile');
  const optimized = path.join(work, 'optimized.onnx');
  const named = path.join(work, 'named.onnx');
  writeFileSync(named, withNodeNames(readFileSync(model)));
  const session = await createOrtSession(named, {
    intraOpThreads: Number(values.threads),
    cpuMemArena: false,
    memPattern: false,
    allowSpinning: false,
    optimizedModelPath: optimized,
    logSeverity: 3,
  });
  const feeds: Record<string, Float32Tensor> = {};
  for (const spec of values.input) {
    const [name, dims] = spec.split('=') as [string, string | undefined];
    const shape = (dims ?? '').split(',').map(Number);
    feeds[name] = { data: new Float32Array(shape.reduce((a, b) => a * b, 1)).map(() => Math.random() - 0.5), dims: shape };
  }
  await runTensors(session, feeds);
  await session.release();

  const nodes = graphNodes(readFileSync(optimized));
  const order = executed(work);
  const position = new Map(order.map(({ name }, index) => [name, index]));
  const lastRead = new Map<string, number>();
  const producer = new Map<string, string>();
  for (const [index, { name }] of order.entries()) {
    const node = nodes.get(name);
    if (node === undefined) throw new Error(`the profile names ${name}, which the optimised graph lacks`);
    for (const output of node.outputs) producer.set(output, name);
    for (const input of node.inputs) if (input) lastRead.set(input, index);
  }
  const live = new Map<string, number>();
  let current = 0;
  let peak = { bytes: 0, at: -1, live: new Map<string, number>() };
  for (const [index, { name, bytes }] of order.entries()) {
    const node = nodes.get(name) as GraphNode;
    const outputs = node.outputs.filter(Boolean);
    for (const output of outputs) {
      const size = bytes / outputs.length;
      live.set(output, size);
      current += size;
    }
    if (current > peak.bytes) peak = { bytes: current, at: index, live: new Map(live) };
    for (const tensor of [...node.inputs, ...outputs]) {
      const size = live.get(tensor);
      if (size !== undefined && (lastRead.get(tensor) ?? -1) <= index && !session.outputNames.includes(tensor)) {
        live.delete(tensor);
        current -= size;
      }
    }
  }
  const at = order[peak.at]?.name ?? '';
  console.log(`${order.length} nodes run; activations peak at ${(peak.bytes / MiB).toFixed(0)} MiB at node ${peak.at} (${nodes.get(at)?.op} ${at})`);
  console.log('largest tensors live there:');
  const largest = [...peak.live.entries()].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top));
  for (const [tensor, bytes] of largest) {
    const from = producer.get(tensor) ?? '';
    console.log(
      `  ${(bytes / MiB).toFixed(0).padStart(6)} MiB  ${(nodes.get(from)?.op ?? '').padEnd(22)} ${from.slice(0, 70)} (node ${position.get(from)}, last read at ${lastRead.get(tensor)})`,
    );
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
