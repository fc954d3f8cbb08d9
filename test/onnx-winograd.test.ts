/**
 * Winograd F(4×4, 3×3) and F(6×6, 3×3) (src/onnx/winograd.ts) against ONNX Runtime's own 3×3
 * convolution, both run in real sessions on the same random input: odd plane sizes (cropped tiles),
 * a plane wide enough to run in several bands, and channel counts that differ in and out.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { OnnxGraph, writeModel, type Value } from '../src/onnx/graph.js';
import { Ops } from '../src/onnx/ops.js';
import { createOrtSession, runTensors } from '../src/onnx/session.js';
import { WINOGRAD_BAND_BYTES, WINOGRAD_F4, WINOGRAD_F6, winogradConv3x3 } from '../src/onnx/winograd.js';
import { snrDb } from './support/reference-audio.js';

const work = mkdtempSync(path.join(tmpdir(), 'stemsplit-winograd-'));
after(() => rmSync(work, { recursive: true, force: true }));

function random(length: number, seed: number, scale = 1): Float32Array {
  let state = seed;
  return Float32Array.from({ length }, () => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return (state / 2 ** 31 - 0.5) * scale;
  });
}

async function convolve(
  shape: readonly [number, number, number, number],
  weight: Float32Array,
  outChannels: number,
  input: Float32Array,
  build: (ops: Ops, x: Value) => Value,
): Promise<Float32Array> {
  const graph = new OnnxGraph('conv');
  const ops = new Ops(graph);
  graph.output(build(ops, graph.input('x', shape)), 'y');
  const file = path.join(work, `${Math.random().toString(36).slice(2)}.onnx`);
  writeModel(graph.encode(), file);
  const session = await createOrtSession(file, { intraOpThreads: 2 });
  try {
    const { y } = await runTensors(session, { x: { data: input, dims: shape } });
    assert.deepEqual(y?.dims, [1, outChannels, shape[2], shape[3]]);
    return (y as { data: Float32Array }).data;
  } finally {
    await session.release();
  }
}

for (const [variant, floor] of [
  [WINOGRAD_F4, 100],
  [WINOGRAD_F6, 90],
] as const) {
  const { out: m } = variant;
  describe(`Winograd F(${m}×${m}, 3×3)`, () => {
    const tileBytes = (m + 2) ** 2 * 64 * 4;
    const cases: Array<{ name: string; channels: number; out: number; height: number; width: number }> = [
      { name: `a plane not a multiple of ${m} (cropped tiles)`, channels: 5, out: 7, height: 13, width: 31 },
      { name: 'a plane in several bands, odd height', channels: 64, out: 48, height: 127, width: m * Math.ceil(WINOGRAD_BAND_BYTES / (tileBytes * 10)) },
      { name: 'a one-row plane', channels: 8, out: 8, height: 1, width: 9 },
    ];
    for (const { name, channels, out, height, width } of cases) {
      it(`matches ONNX Runtime's convolution: ${name}`, async () => {
        const shape = [1, channels, height, width] as const;
        const weight = random(out * channels * 9, 7, 2 / Math.sqrt(channels * 9));
        const input = random(channels * height * width, 11);
        const direct = await convolve(shape, weight, out, input, (ops, x) =>
          ops.conv(x, ops.graph.constant(weight, [out, channels, 3, 3], 'w'), undefined, { pads: [1, 1, 1, 1] }),
        );
        const winograd = await convolve(shape, weight, out, input, (ops, x) => winogradConv3x3(ops, x, weight, out, 'w', variant));
        const snr = snrDb(direct, winograd);
        assert.ok(snr >= floor, `F(${m}×${m}) vs direct: ${snr.toFixed(1)} dB < ${floor}`);
      });
    }
  });
}
