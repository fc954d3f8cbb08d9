/**
 * Demucs v2's time-domain Demucs (demucs/demucs.py) as a chain of ONNX stages, one per encoder
 * and decoder layer (see v3-graph.ts for why): input `wave` [1, 2, W] (normalized by the mono
 * mix), output `wave_out` [1, S·2, W]. Split from v3-graph.ts.
 */
import type { CheckpointTensor } from '../torch/checkpoint.js';
import { attr, type Value } from '../onnx/graph.js';
import { type OpsOptions } from '../onnx/ops.js';
import type { GraphStage } from '../onnx/stages.js';
import type { DemucsConfig } from './v3-config.js';
import { V3Builder } from './v3-builder.js';
import { V3_INPUTS, V3_OUTPUTS } from './v3-graph.js';

/** julius.resample_frac's defaults, as Demucs calls it. */
const RESAMPLE_ZEROS = 24;
const RESAMPLE_ROLLOFF = 0.945;

/** Demucs.valid_length: the nearest length at or above `length` every convolution divides exactly. */
export function demucsValidLength(config: DemucsConfig, chunk: number): number {
  let length = config.resample ? chunk * 2 : chunk;
  for (let i = 0; i < config.depth; i++) length = Math.max(1, Math.ceil((length - config.kernelSize) / config.stride) + 1);
  for (let i = 0; i < config.depth; i++) length = (length - 1) * config.stride + config.kernelSize;
  return config.resample ? Math.ceil(length / 2) : length;
}

export function buildDemucsStages(
  config: DemucsConfig,
  state: ReadonlyMap<string, CheckpointTensor>,
  file: string,
  length: number,
  options: OpsOptions = {},
): GraphStage[] {
  if (demucsValidLength(config, length) !== length) throw new Error(`Demucs graph for ${length} samples, not a valid length`);
  const b = new V3Builder('demucs', state, file, options);
  const activation = (value: Value): Value => (config.glu ? b.ops.glu(value, 1) : b.ops.relu(value));
  const act2 = (value: Value): Value => (config.gelu ? b.ops.gelu(value) : b.ops.relu(value));
  const norm = (prefix: string, index: number, value: Value): Value => (index >= config.normStarts ? b.groupNorm(prefix, value, config.normGroups) : value);
  let x: Value = { name: V3_INPUTS.wave, shape: [1, config.audioChannels, length] };
  const saved: Value[] = [];
  for (let index = 0; index < config.depth; index++) {
    const p = `encoder.${index}`;
    [x] = b.stage(p, [x], (input) => {
      const resampled = index === 0 && config.resample ? resample(b, input as Value, 1, 2) : (input as Value);
      let y = act2(norm(`${p}.1`, index, b.conv(`${p}.0`, resampled, { strides: [config.stride] })));
      let next = 3;
      if (config.dconv.mode & 1) y = b.dconv(`${p}.${next++}`, y, config.dconv, index);
      if (config.rewrite) y = activation(norm(`${p}.${next + 1}`, index, b.conv(`${p}.${next}`, y)));
      return [y];
    }) as [Value];
    saved.push(x);
  }
  for (let step = 0; step < config.depth; step++) {
    const index = config.depth - 1 - step;
    const p = `decoder.${step}`;
    [x] = b.stage(
      p,
      [x, saved.pop() as Value],
      (input, skip) => {
        const width = (input as Value).shape[2] as number;
        const trim = (((skip as Value).shape[2] as number) - width) >> 1;
        let y = b.ops.add(input as Value, b.ops.slice(skip as Value, 2, trim, trim + width));
        let next = 0;
        if (config.rewrite) {
          y = activation(norm(`${p}.1`, index, b.sameConv(`${p}.0`, y)));
          next = 3;
        }
        if (config.dconv.mode & 2) y = b.dconv(`${p}.${next++}`, y, config.dconv, index);
        y = b.convTranspose(`${p}.${next}`, y, [config.stride]);
        if (index > 0) return [act2(norm(`${p}.${next + 1}`, index, y))];
        if (config.resample) y = resample(b, y, 2, 1);
        const outer = ((y.shape[2] as number) - length) >> 1;
        return [b.ops.slice(y, 2, outer, outer + length)];
      },
      step === config.depth - 1 ? [V3_OUTPUTS.wave] : undefined,
    ) as [Value];
  }
  b.state.refuseUnused('Demucs');
  return b.stages;
}

/**
 * julius.resample_frac(x, from, to) for from/to ∈ {1/2, 2/1}: a windowed-sinc FIR bank, one
 * filter per output phase, over the input padded by repeating its edge samples.
 */
function resample(b: V3Builder, x: Value, from: number, to: number): Value {
  const { ops, graph } = b;
  const [, channels, length] = x.shape as [number, number, number];
  const cutoff = Math.min(from, to) * RESAMPLE_ROLLOFF;
  const width = Math.ceil((RESAMPLE_ZEROS * from) / cutoff);
  const taps = 2 * width + from;
  const kernels = new Float32Array(to * taps);
  for (let i = 0; i < to; i++) {
    let sum = 0;
    const kernel = new Float64Array(taps);
    for (let j = 0; j < taps; j++) {
      const idx = j - width;
      let t = Math.fround(Math.fround(-i / to + Math.fround(idx / from)) * cutoff);
      t = Math.max(-RESAMPLE_ZEROS, Math.min(RESAMPLE_ZEROS, t)) * Math.PI;
      const window = Math.cos(t / RESAMPLE_ZEROS / 2) ** 2;
      kernel[j] = (t === 0 ? 1 : Math.sin(t) / t) * window;
      sum += kernel[j] as number;
    }
    for (let j = 0; j < taps; j++) kernels[i * taps + j] = (kernel[j] as number) / sum;
  }
  const rows = ops.reshape(x, [channels, 1, length]);
  const padded = graph.op('Pad', [rows, graph.ints([0, 0, width, 0, 0, width + from], 'pads')], [channels, 1, length + 2 * width + from], {
    mode: attr.string('edge'),
  });
  const phases = ops.conv(padded, graph.constant(kernels, [to, 1, taps], 'resample_kernel'), undefined, { strides: [from] }); // [C, to, n]
  const n = phases.shape[2] as number;
  const interleaved = ops.reshape(ops.transpose(phases, [0, 2, 1]), [1, channels, n * to]);
  return ops.slice(interleaved, 2, 0, Math.floor((to * length) / from));
}
