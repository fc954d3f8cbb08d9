/**
 * MDX-Net engine speed and memory on a UVR-shaped network with random weights: n_fft 7680,
 * dim_f 3072, dim_t 256 (the shape of Kim_Vocal_2, UVR-MDX-NET-Voc_FT, Inst 1–3), run through
 * the whole streamed pipeline (STFT, network, iSTFT, overlap-add, stems) on synthetic music.
 *
 * The network is not kuielab's exact ConvTDFNet but a U-Net of its shape and size built here with
 * src/onnx: a 1×1 conv 4 → g, then per scale (5 down, 1 bottleneck, 5 up) three 3×3 conv + ReLU
 * layers and a TDF block (two Linear layers over frequency with bottleneck factor 8, ReLU, added
 * back), 2×2 stride-2 conv down (+g channels), 2×2 stride-2 transposed conv up, skip by product
 * (as ConvTDFNet), a 1×1 conv g → 4. Batch norm is left out (ONNX exports fold it into the conv).
 *
 *   node --import tsx scripts/bench/mdx.ts [--seconds 60] [--threads 2] [--growth 32] [--denoise] [--overlap 0.25]
 *        [--in-process]   (run here, not in a worker process as serve/split do)
 *
 * Prints the network's size, the load time, seconds per minute of audio and the peak RSS while
 * separating.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadMdx } from '../../src/mdx/engine.js';
import { OnnxGraph, writeModel, type Value } from '../../src/onnx/graph.js';
import { Ops } from '../../src/onnx/ops.js';
import { separateStream } from '../../src/separation/index.js';
import { rssSampler } from './rss.js';
import { benchTrack, interleavedBlocks, randomTensor, rerunAsSplitWorker } from './synthetic.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '60' },
    threads: { type: 'string', default: '2' },
    growth: { type: 'string', default: '32' },
    overlap: { type: 'string', default: '0.25' },
    denoise: { type: 'boolean', default: false },
    'in-process': { type: 'boolean', default: false },
  },
});

rerunAsSplitWorker(import.meta.url, values['in-process']);

const DIM_F = 3072;
const DIM_T = 256;
const N_FFT = 7680;
const SCALES = 5;
const TFC_LAYERS = 3;
const BOTTLENECK = 8;

function buildNetwork(file: string, growth: number): { parameters: number } {
  const graph = new OnnxGraph('mdx-bench');
  const ops = new Ops(graph);
  const seed = { seed: 20_260_401 };
  let parameters = 0;
  const weight = (shape: number[], fanIn: number): Value => {
    const tensor = randomTensor(shape, 1 / Math.sqrt(fanIn), seed);
    parameters += tensor.data.length;
    return graph.constant(tensor.data, shape, 'w');
  };
  const bias = (n: number): Value => weight([n], 1e4);
  const conv = (x: Value, out: number, kernel: number, stride = 1): Value => {
    const inC = x.shape[1] as number;
    const pad = stride === 1 ? Math.floor(kernel / 2) : 0;
    return ops.conv(x, weight([out, inC, kernel, kernel], inC * kernel * kernel), bias(out), { strides: [stride, stride], pads: [pad, pad, pad, pad] });
  };
  /** Three 3×3 conv + ReLU layers, then the TDF: Linear over frequency (F → F/8 → F), ReLU, added back. */
  const tfcTdf = (x: Value): Value => {
    let y = x;
    for (let l = 0; l < TFC_LAYERS; l++) y = ops.relu(conv(y, y.shape[1] as number, 3));
    const f = y.shape[2] as number;
    const hidden = Math.max(1, Math.floor(f / BOTTLENECK));
    const freqLast = ops.transpose(y, [0, 1, 3, 2]);
    const down = ops.relu(ops.matmul(freqLast, weight([f, hidden], f)));
    const up = ops.relu(ops.matmul(down, weight([hidden, f], hidden)));
    const tdf = ops.transpose(up, [0, 1, 3, 2]);
    return ops.add(y, tdf);
  };

  const input = graph.input('input', [1, 4, DIM_F, DIM_T]);
  let x = ops.relu(conv(input, growth, 1));
  const skips: Value[] = [];
  for (let scale = 0; scale < SCALES; scale++) {
    x = tfcTdf(x);
    skips.push(x);
    x = ops.relu(conv(x, (x.shape[1] as number) + growth, 2, 2));
  }
  x = tfcTdf(x);
  for (let scale = SCALES - 1; scale >= 0; scale--) {
    const inC = x.shape[1] as number;
    const outC = inC - growth;
    x = ops.relu(ops.convTranspose(x, weight([inC, outC, 2, 2], inC * 4), bias(outC), [2, 2]));
    x = tfcTdf(ops.mul(x, skips[scale] as Value));
  }
  graph.output(conv(x, 4, 1), 'output');
  writeModel(graph.encode(), file);
  return { parameters };
}

const dir = mkdtempSync(path.join(tmpdir(), 'stemsplit-mdx-bench-'));
try {
  const growth = Number(values.growth);
  const modelPath = path.join(dir, 'bench.onnx');
  let started = performance.now();
  const { parameters } = buildNetwork(modelPath, growth);
  writeFileSync(
    path.join(dir, 'bench.json'),
    JSON.stringify({ compensate: 1.021, mdx_dim_f_set: DIM_F, mdx_dim_t_set: Math.log2(DIM_T), mdx_n_fft_scale_set: N_FFT, primary_stem: 'Vocals' }),
  );
  console.log(
    `network: TFC-TDF-shaped U-Net, growth ${growth}, ${(parameters / 1e6).toFixed(1)} M parameters, built in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
  started = performance.now();
  const model = await loadMdx(
    { path: modelPath, options: { mdx: { overlap: Number(values.overlap), denoise: values.denoise } } },
    { intraOpThreads: Number(values.threads) },
  );
  console.log(`load: ${((performance.now() - started) / 1000).toFixed(1)} s`);
  const seconds = Number(values.seconds);
  const track = benchTrack(seconds, 44_100, 2);
  const frames = track.length / 2;
  const peak = track.reduce((max, v) => Math.max(max, Math.abs(v)), 0);
  const rss = rssSampler();
  rss.reset();
  started = performance.now();
  let chunks = 0;
  await separateStream(model, { length: frames, statistics: { frames, mean: 0, squares: 0, peak }, frames: interleavedBlocks(track, 2) }, () => undefined, {
    onProgress: ({ total }) => void (chunks = total),
  });
  const elapsed = (performance.now() - started) / 1000;
  const peakRss = await rss.stop();
  await model.dispose();
  console.log(
    `separate: ${seconds} s of audio in ${elapsed.toFixed(1)} s (${chunks} chunks, ${(elapsed / chunks).toFixed(2)} s a chunk, threads ${values.threads}, overlap ${values.overlap}${values.denoise ? ', denoise' : ''})`,
  );
  console.log(`speed: ${((elapsed / seconds) * 60).toFixed(1)} s per minute of audio`);
  console.log(`peak RSS while separating: ${(peakRss / 2 ** 20).toFixed(0)} MiB`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
