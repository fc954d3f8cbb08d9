/**
 * `stemsplit devices --check`: a small graph of the operators separation models lean on (a
 * convolution, a matrix product, a normalisation, a softmax) run on a GPU provider and on the
 * CPU, so a user sees that the GPU works and agrees with the CPU before a long split.
 */
import { attr, OnnxGraph } from './graph.js';
import { createOrtSession, runTensors, type GpuProviderName } from './session.js';

export interface GpuCheck {
  /** SNR of the GPU's output against the CPU's, in dB. */
  readonly agreementDb: number;
  /** Opening and running on the GPU, first run included. */
  readonly milliseconds: number;
}

const CHANNELS = 16;
const LENGTH = 4096;

function checkGraph(): Uint8Array {
  const graph = new OnnxGraph('gpu-check');
  const x = graph.input('x', [1, CHANNELS, LENGTH]);
  const weights = seeded(CHANNELS * CHANNELS * 3, 1);
  const conv = graph.op('Conv', [x, graph.constant(weights, [CHANNELS, CHANNELS, 3]), graph.constant(seeded(CHANNELS, 2), [CHANNELS])], [1, CHANNELS, LENGTH], {
    pads: attr.ints([1, 1]),
  });
  const rows = graph.op('Transpose', [conv], [1, LENGTH, CHANNELS], { perm: attr.ints([0, 2, 1]) });
  const normed = graph.op(
    'LayerNormalization',
    [rows, graph.constant(seeded(CHANNELS, 3), [CHANNELS]), graph.constant(seeded(CHANNELS, 4), [CHANNELS])],
    [1, LENGTH, CHANNELS],
    { axis: attr.int(-1) },
  );
  const product = graph.op('MatMul', [normed, graph.constant(seeded(CHANNELS * CHANNELS, 5), [CHANNELS, CHANNELS])], [1, LENGTH, CHANNELS]);
  graph.output(graph.op('Softmax', [product], [1, LENGTH, CHANNELS], { axis: attr.int(-1) }), 'y');
  return graph.encode().toBytes();
}

/** Deterministic values in [-0.5, 0.5): the check needs no randomness, only numbers. */
function seeded(length: number, seed: number): Float32Array {
  const values = new Float32Array(length);
  let state = seed * 2654435761;
  for (let i = 0; i < length; i++) {
    state = (state * 1103515245 + 12345) >>> 0;
    values[i] = state / 2 ** 32 - 0.5;
  }
  return values;
}

async function runOn(provider: 'cpu' | GpuProviderName, model: Uint8Array, input: Float32Array): Promise<Float32Array> {
  const session = await createOrtSession(model, { provider });
  try {
    const { y } = await runTensors(session, { x: { data: input, dims: [1, CHANNELS, LENGTH] } }, ['y']);
    return (y as { data: Float32Array }).data;
  } finally {
    await session.release();
  }
}

export async function checkGpu(provider: GpuProviderName): Promise<GpuCheck> {
  const model = checkGraph();
  const input = seeded(CHANNELS * LENGTH, 6);
  const started = performance.now();
  const gpu = await runOn(provider, model, input);
  const milliseconds = performance.now() - started;
  const cpu = await runOn('cpu', model, input);
  let signal = 0;
  let noise = 0;
  for (let i = 0; i < cpu.length; i++) {
    signal += (cpu[i] as number) ** 2;
    noise += ((cpu[i] as number) - (gpu[i] as number)) ** 2;
  }
  return { agreementDb: noise === 0 ? Infinity : 10 * Math.log10(signal / noise), milliseconds };
}
