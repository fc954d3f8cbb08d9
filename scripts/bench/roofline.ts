/**
 * The fp32 roofline of this box for ONNX Runtime's kernels (issue 40, item 2): the best rate ORT's
 * matrix-product and convolution kernels reach here, each a one-node graph in its own session with
 * the split worker's thread count, and what that rate means for HTDemucs (the full-size fixture's
 * 343 GFLOP per 7.8-s segment, counted from ORT's profile by scripts/bench/ort-profile.ts;
 * docs/demucs.md) if every operation ran at it and nothing else took time.
 *
 *   node --import tsx scripts/bench/roofline.ts [--runs 5] [--threads 2] [--gflop-per-segment 343]
 *
 * Shapes: the largest products and convolutions of HTDemucs' graph (transformer projections and
 * feed-forward, attention's score product, the encoders' and decoders' convolutions) and a square
 * 2048³ product. Each is timed `--runs` times after one warm-up run; the fastest run counts (the
 * one least disturbed by anything else on the box). Prints a table and the roofline.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { OnnxGraph, writeModel, type Value } from '../../src/onnx/graph.js';
import { Ops } from '../../src/onnx/ops.js';
import { createOrtSession, runTensors } from '../../src/onnx/session.js';
import { randomTensor } from './synthetic.js';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '5' },
    threads: { type: 'string', default: '2' },
    'gflop-per-segment': { type: 'string', default: '343' },
  },
});
const runs = Number(values.runs);
const work = mkdtempSync(path.join(tmpdir(), 'stemsplit-roofline-'));

/** One kernel to time: its graph, its input shape and the floating-point operations of one run (2 per multiply-add). */
interface Kernel {
  readonly label: string;
  readonly input: readonly number[];
  readonly flop: number;
  readonly build: (ops: Ops, x: Value, seed: { seed: number }) => Value;
}

function product(rows: number, inner: number, columns: number): Kernel {
  return {
    label: `MatMul ${rows} × ${inner} × ${columns}`,
    input: [rows, inner],
    flop: 2 * rows * inner * columns,
    build: (ops, x, seed) => ops.matmul(x, ops.graph.constant(randomTensor([inner, columns], 0.05, seed).data, [inner, columns], 'w')),
  };
}

function convolution(channels: number, out: number, kernel: readonly [number, number], height: number, width: number): Kernel {
  const pads = [Math.floor(kernel[0] / 2), Math.floor(kernel[1] / 2), Math.floor(kernel[0] / 2), Math.floor(kernel[1] / 2)];
  return {
    label: `Conv ${channels} → ${out}, ${kernel[0]}×${kernel[1]}, ${height} × ${width}`,
    input: [1, channels, height, width],
    flop: 2 * channels * out * kernel[0] * kernel[1] * height * width,
    build: (ops, x, seed) =>
      ops.conv(x, ops.graph.constant(randomTensor([out, channels, ...kernel], 0.05, seed).data, [out, channels, ...kernel], 'w'), undefined, { pads }),
  };
}

const KERNELS: readonly Kernel[] = [
  product(2048, 2048, 2048),
  product(2688, 512, 2048), // the transformer's feed-forward (tokens × dim × 4·dim)
  product(2688, 2048, 512),
  product(2688, 512, 512), // attention projections
  convolution(48, 96, [8, 1], 512, 336), // the frequency branch's second encoder (kernel 8, stride 1 here)
  convolution(192, 384, [1, 1], 64, 336),
  convolution(384, 768, [3, 3], 16, 84),
  convolution(96, 192, [3, 3], 128, 336),
];

interface Timing {
  readonly best: number;
  readonly cpu: number;
}

async function time(kernel: Kernel, index: number): Promise<Timing> {
  const graph = new OnnxGraph(`kernel${index}`);
  const ops = new Ops(graph);
  const seed = { seed: 1234 + index };
  graph.output(kernel.build(ops, graph.input('x', kernel.input), seed), 'y');
  const file = path.join(work, `kernel${index}.onnx`);
  writeModel(graph.encode(), file);
  const session = await createOrtSession(file, { intraOpThreads: Number(values.threads), cpuMemArena: false, allowSpinning: false });
  const feeds = { x: { data: randomTensor(kernel.input, 1, seed).data, dims: kernel.input } };
  await runTensors(session, feeds);
  let best = Number.POSITIVE_INFINITY;
  let cpu = 0;
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    const before = process.cpuUsage();
    await runTensors(session, feeds);
    const used = process.cpuUsage(before);
    const wall = (performance.now() - started) / 1000;
    if (wall < best) {
      best = wall;
      cpu = (used.user + used.system) / 1e6;
    }
  }
  await session.release();
  return { best, cpu };
}

async function main(): Promise<void> {
  console.log(
    `# ${cpus()[0]?.model ?? 'unknown CPU'}, ${cpus().length} CPUs, ${values.threads} intra-op threads, load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}, ${new Date().toISOString()}`,
  );
  console.log('| kernel | GFLOP | fastest of %d (s) | CPU (s) | GFLOP/s |'.replace('%d', String(runs)));
  console.log('|---|---:|---:|---:|---:|');
  let peak = 0;
  for (const [index, kernel] of KERNELS.entries()) {
    const { best, cpu } = await time(kernel, index);
    const rate = kernel.flop / 1e9 / best;
    peak = Math.max(peak, rate);
    console.log(`| ${kernel.label} | ${(kernel.flop / 1e9).toFixed(1)} | ${best.toFixed(3)} | ${cpu.toFixed(3)} | ${rate.toFixed(1)} |`);
  }
  // demucs.apply's overlap 0.25 on 7.8-s segments: a minute of audio is 60 / (0.75 · 7.8) segments.
  const segmentsPerMinute = 60 / (0.75 * 7.8);
  const perMinute = (Number(values['gflop-per-segment']) * segmentsPerMinute) / peak;
  console.log(
    `\nbest rate ${peak.toFixed(1)} GFLOP/s; HTDemucs at ${values['gflop-per-segment']} GFLOP a segment, ${segmentsPerMinute.toFixed(2)} segments a minute:`,
  );
  console.log(
    `roofline ${perMinute.toFixed(1)} s per minute of audio (every operation at the best rate, nothing else taking time); within 10 %: ${(perMinute * 1.1).toFixed(1)} s`,
  );
  console.log(
    `load after: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
}

try {
  await main();
} finally {
  rmSync(work, { recursive: true, force: true });
}
