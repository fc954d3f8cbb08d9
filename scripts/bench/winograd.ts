/**
 * One 3×3 convolution (stride 1, padding 1) as ONNX Runtime's own Conv and as Winograd F(4×4, 3×3)
 * and/or F(6×6, 3×3) (`--variant 4,6`)
 * (src/onnx/winograd.ts), each a one-node-deep graph in its own session with 2 intra-op threads
 * (as the split worker runs), on the same random input: seconds per run (wall and CPU, the mean of
 * `--runs` after one warm-up run) and the SNR between the two outputs. The default shapes are the
 * 3×3 convolutions of MDX23C-8KFFT-InstVoc_HQ's scales (docs/mdx23c.md).
 *
 *   node --import tsx scripts/bench/winograd.ts [--shape in,out,height,width …] [--runs 3] [--threads 2] [--variant 4,6]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { OnnxGraph, writeModel, type Value } from '../../src/onnx/graph.js';
import { Ops } from '../../src/onnx/ops.js';
import { createOrtSession, runTensors } from '../../src/onnx/session.js';
import { WINOGRAD_F4, WINOGRAD_F6, winogradConv3x3 } from '../../src/onnx/winograd.js';
import { randomTensor, stemSnrs } from './synthetic.js';

const { values } = parseArgs({
  options: {
    shape: {
      type: 'string',
      multiple: true,
      default: ['128,128,256,1024', '256,128,256,1024', '256,256,128,512', '512,256,128,512', '384,384,64,256', '512,512,32,128'],
    },
    runs: { type: 'string', default: '3' },
    threads: { type: 'string', default: '2' },
    variant: { type: 'string', default: '4' },
  },
});
const runs = Number(values.runs);
const variants = values.variant.split(',').map((m) => (m === '6' ? WINOGRAD_F6 : WINOGRAD_F4));
const work = mkdtempSync(path.join(tmpdir(), 'stemsplit-winograd-bench-'));

interface Timing {
  readonly wall: number;
  readonly cpu: number;
  readonly output: Float32Array;
}

async function time(name: string, shape: readonly number[], input: Float32Array, build: (ops: Ops, x: Value) => Value): Promise<Timing> {
  const graph = new OnnxGraph(name);
  const ops = new Ops(graph);
  graph.output(build(ops, graph.input('x', shape)), 'y');
  const file = path.join(work, `${name}.onnx`);
  writeModel(graph.encode(), file);
  const session = await createOrtSession(file, { intraOpThreads: Number(values.threads), cpuMemArena: false, allowSpinning: false });
  const feeds = { x: { data: input, dims: shape } };
  const output = ((await runTensors(session, feeds))['y'] as { data: Float32Array }).data;
  const started = performance.now();
  const cpu = process.cpuUsage();
  for (let i = 0; i < runs; i++) await runTensors(session, feeds);
  const used = process.cpuUsage(cpu);
  await session.release();
  return { wall: (performance.now() - started) / 1000 / runs, cpu: (used.user + used.system) / 1e6 / runs, output };
}

console.log('| convolution (in → out, frames × bins) | GMAC | direct wall / CPU | Winograd | wall / CPU | CPU ratio | SNR |');
console.log('|---|---:|---:|---|---:|---:|---:|');
for (const spec of values.shape) {
  const [channels, out, height, width] = spec.split(',').map(Number) as [number, number, number, number];
  const shape = [1, channels, height, width];
  const seed = { seed: 7 };
  const weight = randomTensor([out, channels, 3, 3], 1 / Math.sqrt(channels * 9), seed).data;
  const input = randomTensor(shape, 0.5, seed).data;
  const direct = await time('direct', shape, input, (ops, x) =>
    ops.conv(x, ops.graph.constant(weight, [out, channels, 3, 3], 'w'), undefined, { pads: [1, 1, 1, 1] }),
  );
  const gmac = (channels * out * 9 * height * width) / 1e9;
  for (const variant of variants) {
    const winograd = await time('winograd', shape, input, (ops, x) => winogradConv3x3(ops, x, weight, out, 'w', variant));
    console.log(
      `| ${channels} → ${out}, ${height} × ${width} | ${gmac.toFixed(1)} | ${direct.wall.toFixed(3)} / ${direct.cpu.toFixed(3)} s | F(${variant.out}×${variant.out}) | ${winograd.wall.toFixed(3)} / ${winograd.cpu.toFixed(3)} s | ${(direct.cpu / winograd.cpu).toFixed(2)}× | ${(stemSnrs(direct.output, winograd.output, 1)[0] as number).toFixed(1)} dB |`,
    );
  }
}
rmSync(work, { recursive: true, force: true });
