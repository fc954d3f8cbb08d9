/**
 * How a model's learned convolution weights would fare in int8, beside Gaussian weights of the same
 * shapes (what the random-weight fixtures have): per layer, how far the output channels' ranges
 * spread (largest channel peak / smallest; per-channel scales absorb this) and how far a channel's
 * peak stands above its typical weight (peak / RMS; a few large weights set the scale, so the rest
 * get fewer of the 127 levels).
 *
 *   node --import tsx scripts/eval/weight-ranges.ts [models/stemsplit-small-4s/model.onnx]
 */
import { readFileSync } from 'node:fs';
import { learnedConvolutions } from '../../src/onnx/quantize-graph.js';
import { randomTensor } from '../bench/synthetic.js';

interface Ranges {
  /** Largest channel peak over the smallest. */
  readonly spread: number;
  /** Per-channel peak over RMS: median and largest channel. */
  readonly crestMedian: number;
  readonly crestMax: number;
}

function ranges(data: Float32Array, channels: number): Ranges {
  const size = data.length / channels;
  const peaks: number[] = [];
  const crests: number[] = [];
  for (let c = 0; c < channels; c++) {
    let peak = 0;
    let squares = 0;
    for (let i = c * size; i < (c + 1) * size; i++) {
      const w = Math.abs(data[i] as number);
      peak = Math.max(peak, w);
      squares += w * w;
    }
    peaks.push(peak);
    crests.push(peak / Math.sqrt(squares / size));
  }
  crests.sort((a, b) => a - b);
  return { spread: Math.max(...peaks) / Math.min(...peaks), crestMedian: crests[Math.floor(channels / 2)] as number, crestMax: crests[channels - 1] as number };
}

const file = process.argv[2] ?? 'models/stemsplit-small-4s/model.onnx';
const state = { seed: 1234 };
console.log(`${file}: learned convolutions (int8 keeps the first and last in fp32)`);
console.log('| weight | shape | channel peak spread | peak / RMS (median, max) | Gaussian: spread | Gaussian: peak / RMS |');
console.log('|---|---|---:|---:|---:|---:|');
for (const conv of learnedConvolutions(readFileSync(file))) {
  const channels = conv.dims[0] as number;
  const trained = ranges(conv.data, channels);
  const gaussian = ranges(randomTensor(conv.dims, 1, state).data, channels);
  console.log(
    `| ${conv.weight} | ${conv.dims.join('×')} | ${trained.spread.toFixed(1)} | ${trained.crestMedian.toFixed(1)}, ${trained.crestMax.toFixed(1)} | ${gaussian.spread.toFixed(1)} | ${gaussian.crestMedian.toFixed(1)}, ${gaussian.crestMax.toFixed(1)} |`,
  );
}
