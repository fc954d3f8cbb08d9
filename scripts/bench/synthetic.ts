/** Synthetic inputs for the model benchmarks: seeded random weights and a track of "music". */
import type { CheckpointTensor } from '../../src/torch/checkpoint.js';

/** Seeded N(0, scale²) values (Box-Muller over a 32-bit LCG): weights that keep activations in range. */
export function randomTensor(shape: readonly number[], scale: number, state: { seed: number }): CheckpointTensor {
  const count = shape.reduce((a, b) => a * b, 1);
  const data = new Float32Array(count);
  for (let i = 0; i < count; i += 2) {
    state.seed = (Math.imul(state.seed, 1664525) + 1013904223) >>> 0;
    const u = (state.seed + 1) / 4294967297;
    state.seed = (Math.imul(state.seed, 1664525) + 1013904223) >>> 0;
    const v = state.seed / 4294967296;
    const r = Math.sqrt(-2 * Math.log(u)) * scale;
    data[i] = r * Math.cos(2 * Math.PI * v);
    if (i + 1 < count) data[i + 1] = r * Math.sin(2 * Math.PI * v);
  }
  return { shape, data };
}

/** `seconds` of stereo "music": two detuned tones, a bass and noise bursts. */
export function benchTrack(seconds: number, rate: number, channels: number): Float32Array {
  const length = Math.round(seconds * rate);
  const data = new Float32Array(channels * length);
  let noise = 7;
  for (let c = 0; c < channels; c++) {
    for (let i = 0; i < length; i++) {
      const t = i / rate;
      noise = (Math.imul(noise, 1664525) + 1013904223) >>> 0;
      const burst = (t * 4) % 1 < 0.1 ? (noise / 4294967296 - 0.5) * 0.3 : 0;
      data[c * length + i] = 0.2 * Math.sin(2 * Math.PI * (220 + c) * t) + 0.2 * Math.sin(2 * Math.PI * 55 * t) + burst;
    }
  }
  return data;
}
