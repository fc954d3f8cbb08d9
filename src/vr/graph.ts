/**
 * UVR's VR networks as ONNX graphs built from a `.pth` state dict (python-audio-separator's
 * uvr_lib_v5/vr_network): one window of |X| [1, 2, bins + 1, window] → the mask [1, 2, bins + 1,
 * window] (the network's `forward` in eval mode; predict_mask's offset crop is the caller's).
 *
 * - VR 5.0 (`nets.CascadedASPPNet`): three stages of `BaseASPPNet` U-Nets (4 or 5 encoders,
 *   an ASPP of 5, 6 or 7 branches whose extra ones are dilation-16 separable convs) over the
 *   low and high halves of the bins, then the full band twice, with 1×1 bridges.
 * - VR 5.1 (`nets_new.CascadedNet`): `BaseNet` U-Nets (5 encoders, a 5-branch ASPP with
 *   (freq, time) dilations, a BiLSTM over the frames after the second decoder) over the halves
 *   twice, then the full band.
 *
 * Widths, depths and branch counts are read from the tensors' shapes and keys, so every layout
 * UVR ships (and the small fixture nets) builds without a capacity table. BatchNorm is folded
 * into the convolution (or Linear) before it.
 */
import { StemsplitError } from '../errors.js';
import { attr, OnnxGraph, type Value } from '../onnx/graph.js';
import { onnxLstmWeights } from '../onnx/lstm-weights.js';
import { Ops } from '../onnx/ops.js';
import type { CheckpointTensor } from '../torch/checkpoint.js';
import { StateReader } from '../torch/state-reader.js';

export const GRAPH_INPUT = 'magnitude';
export const GRAPH_OUTPUT = 'mask';

export type VrVersion = '5.0' | '5.1';

const BN_EPSILON = 1e-5;
const LEAKY_SLOPE = 0.01;
/** nets.py's ASPP dilations; the 6th and 7th branches reuse the third. */
const V50_DILATIONS = [4, 8, 16] as const;
/** nets_new.py's BaseNet ASPP dilations, (freq, time). */
const V51_DILATIONS = [
  [4, 2],
  [8, 4],
  [12, 6],
] as const;

type Activation = 'relu' | 'leaky';

/** Which network a state dict holds, read from its keys. */
export function vrVersion(state: ReadonlyMap<string, CheckpointTensor>, file: string): VrVersion {
  if (state.has('stg1_low_band_net.0.enc1.conv.0.weight')) return '5.1';
  if (state.has('stg1_low_band_net.enc1.conv1.conv.0.weight')) return '5.0';
  throw new StemsplitError('MODEL_INVALID', `${file}: not a UVR VR network (no stg1_low_band_net encoder in its state dict)`);
}

/** The one-window graph for `bins` (the params' bins) and `window` frames. */
export function buildVrGraph(
  state: ReadonlyMap<string, CheckpointTensor>,
  file: string,
  bins: number,
  window: number,
): { graph: OnnxGraph; version: VrVersion } {
  const version = vrVersion(state, file);
  const graph = new OnnxGraph(`vr-${version}`);
  const builder = new VrBuilder(graph, new StateReader(state, file), file);
  const input = graph.input(GRAPH_INPUT, [1, 2, bins + 1, window]);
  const mask = version === '5.0' ? builder.cascadedAspp(input, bins) : builder.cascaded(input, bins);
  graph.output(mask, GRAPH_OUTPUT);
  builder.weights.refuseUnused(`VR ${version}`, (key) => key.endsWith('num_batches_tracked') || key.startsWith('aux'));
  return { graph, version };
}

class VrBuilder {
  readonly ops: Ops;

  constructor(
    readonly graph: OnnxGraph,
    readonly weights: StateReader,
    private readonly file: string,
  ) {
    this.ops = new Ops(graph);
  }

  // ---- VR 5.0 -------------------------------------------------------------------------------

  cascadedAspp(input: Value, bins: number): Value {
    const { ops } = this;
    const x = ops.slice(input, 2, 0, bins);
    const bandwidth = Math.floor(bins / 2);
    const aux1 = ops.concat(
      [this.asppNet('stg1_low_band_net', ops.slice(x, 2, 0, bandwidth)), this.asppNet('stg1_high_band_net', ops.slice(x, 2, bandwidth, bins))],
      2,
    );
    const aux2 = this.asppNet('stg2_full_band_net', this.conv('stg2_bridge.conv', ops.concat([x, aux1], 1), 1, 'relu'));
    const h = this.asppNet('stg3_full_band_net', this.conv('stg3_bridge.conv', ops.concat([x, aux1, aux2], 1), 1, 'relu'));
    return this.maskOut(h, bins);
  }

  /** nets.BaseASPPNet. */
  private asppNet(prefix: string, x: Value): Value {
    const levels = this.weights.has(`${prefix}.enc5.conv1.conv.0.weight`) ? 5 : 4;
    const skips: Value[] = [];
    let h = x;
    for (let level = 1; level <= levels; level++) {
      const skip = this.conv(`${prefix}.enc${level}.conv1.conv`, h, 1, 'leaky');
      skips.push(skip);
      h = this.conv(`${prefix}.enc${level}.conv2.conv`, skip, 2, 'leaky');
    }
    h = this.asppV50(`${prefix}.aspp`, h);
    for (let level = levels; level >= 1; level--) h = this.decoder(`${prefix}.dec${level}.conv.conv`, h, skips[level - 1] as Value);
    return h;
  }

  /** layers.ASPPModule: pooled, 1×1 and separable dilated branches (5, 6 or 7), then the bottleneck. */
  private asppV50(prefix: string, x: Value): Value {
    const channels = x.shape[1] as number;
    const branches = this.bottleneckInputs(`${prefix}.bottleneck.0.conv.0.weight`, channels);
    const features = [this.pooled(`${prefix}.conv1.1.conv`, x), this.conv(`${prefix}.conv2.conv`, x, 1, 'relu')];
    for (let branch = 3; branch <= branches; branch++) {
      const dilation = V50_DILATIONS[Math.min(branch - 3, 2)] as number;
      features.push(this.separable(`${prefix}.conv${branch}.conv`, x, dilation));
    }
    return this.conv(`${prefix}.bottleneck.0.conv`, this.ops.concat(features, 1), 1, 'relu');
  }

  /** SeperableConv2DBNActiv: depthwise 3×3 (dilated), pointwise 1×1, BatchNorm, ReLU. */
  private separable(prefix: string, x: Value, dilation: number): Value {
    const channels = x.shape[1] as number;
    const depthwise = this.weights.get(`${prefix}.0.weight`, [channels, 1, 3, 3]);
    const h = this.ops.conv(x, this.graph.constant(depthwise.data, depthwise.shape, `${prefix}.0.weight`), undefined, {
      pads: [dilation, dilation, dilation, dilation],
      dilations: [dilation, dilation],
      group: channels,
    });
    return this.convBn(`${prefix}.1.weight`, `${prefix}.2`, h, {}, 'relu');
  }

  // ---- VR 5.1 -------------------------------------------------------------------------------

  cascaded(input: Value, bins: number): Value {
    const { ops } = this;
    const x = ops.slice(input, 2, 0, bins);
    const bandwidth = Math.floor(bins / 2);
    const l1In = ops.slice(x, 2, 0, bandwidth);
    const h1In = ops.slice(x, 2, bandwidth, bins);
    const l1 = this.conv('stg1_low_band_net.1.conv', this.baseNet('stg1_low_band_net.0', l1In), 1, 'relu');
    const h1 = this.baseNet('stg1_high_band_net', h1In);
    const aux1 = ops.concat([l1, h1], 2);
    const l2 = this.conv('stg2_low_band_net.1.conv', this.baseNet('stg2_low_band_net.0', ops.concat([l1In, l1], 1)), 1, 'relu');
    const h2 = this.baseNet('stg2_high_band_net', ops.concat([h1In, h1], 1));
    const aux2 = ops.concat([l2, h2], 2);
    const f3 = this.baseNet('stg3_full_band_net', ops.concat([x, aux1, aux2], 1));
    return this.maskOut(f3, bins);
  }

  /** nets_new.BaseNet. */
  private baseNet(prefix: string, x: Value): Value {
    const e1 = this.conv(`${prefix}.enc1.conv`, x, 1, 'relu');
    const encoders = [e1];
    let h = e1;
    for (let level = 2; level <= 5; level++) {
      h = this.conv(`${prefix}.enc${level}.conv1.conv`, h, 2, 'leaky');
      h = this.conv(`${prefix}.enc${level}.conv2.conv`, h, 1, 'leaky');
      encoders.push(h);
    }
    h = this.asppV51(`${prefix}.aspp`, h);
    h = this.decoder(`${prefix}.dec4.conv1.conv`, h, encoders[3] as Value);
    h = this.decoder(`${prefix}.dec3.conv1.conv`, h, encoders[2] as Value);
    h = this.decoder(`${prefix}.dec2.conv1.conv`, h, encoders[1] as Value);
    h = this.ops.concat([h, this.lstmModule(`${prefix}.lstm_dec2`, h)], 1);
    return this.decoder(`${prefix}.dec1.conv1.conv`, h, e1);
  }

  /** layers_new.ASPPModule: pooled, 1×1 and three dilated 3×3 branches, each to nout, then the bottleneck. */
  private asppV51(prefix: string, x: Value): Value {
    const features = [this.pooled(`${prefix}.conv1.1.conv`, x), this.conv(`${prefix}.conv2.conv`, x, 1, 'relu')];
    V51_DILATIONS.forEach(([df, dt], i) => {
      features.push(
        this.convBn(`${prefix}.conv${i + 3}.conv.0.weight`, `${prefix}.conv${i + 3}.conv.1`, x, { pads: [df, dt, df, dt], dilations: [df, dt] }, 'relu'),
      );
    });
    return this.conv(`${prefix}.bottleneck.conv`, this.ops.concat(features, 1), 1, 'relu');
  }

  /** layers_new.LSTMModule: a 1×1 conv to one channel, a BiLSTM over the frames, Linear + BatchNorm1d + ReLU per frame. */
  private lstmModule(prefix: string, x: Value): Value {
    const { ops, graph } = this;
    const [, , bins, frames] = x.shape as [number, number, number, number];
    const squeezed = ops.reshape(this.conv(`${prefix}.conv.conv`, x, 1, 'relu'), [bins, frames]);
    const sequence = ops.reshape(ops.transpose(squeezed, [1, 0]), [frames, 1, bins]);
    const weightIh = this.weights.get(`${prefix}.lstm.weight_ih_l0`);
    const hidden = (weightIh.shape[0] as number) / 4;
    if (weightIh.shape[1] !== bins)
      throw new StemsplitError('MODEL_INVALID', `${this.file}: ${prefix}.lstm takes ${weightIh.shape[1]} bins, the params give ${bins} there`);
    const direction = (suffix: string) => ({
      weightIh: this.weights.get(`${prefix}.lstm.weight_ih_l0${suffix}`, [4 * hidden, bins]).data,
      weightHh: this.weights.get(`${prefix}.lstm.weight_hh_l0${suffix}`, [4 * hidden, hidden]).data,
      biasIh: this.weights.get(`${prefix}.lstm.bias_ih_l0${suffix}`, [4 * hidden]).data,
      biasHh: this.weights.get(`${prefix}.lstm.bias_hh_l0${suffix}`, [4 * hidden]).data,
    });
    const lstm = ops.lstm(sequence, onnxLstmWeights([direction(''), direction('_reverse')], hidden));
    const features = ops.reshape(ops.transpose(lstm, [0, 2, 1, 3]), [frames, 2 * hidden]);
    const dense = this.weights.get(`${prefix}.dense.0.weight`, [bins, 2 * hidden]);
    const bias = this.weights.get(`${prefix}.dense.0.bias`, [bins]);
    const { scale, shift } = this.batchNorm(`${prefix}.dense.1`, bins);
    const weight = new Float32Array(dense.data.length);
    const folded = new Float32Array(bins);
    for (let o = 0; o < bins; o++) {
      for (let i = 0; i < 2 * hidden; i++) weight[o * 2 * hidden + i] = (dense.data[o * 2 * hidden + i] as number) * (scale[o] as number);
      folded[o] = (bias.data[o] as number) * (scale[o] as number) + (shift[o] as number);
    }
    const out = ops.relu(
      ops.linear(features, graph.constant(weight, [bins, 2 * hidden], `${prefix}.dense`), graph.constant(folded, [bins], `${prefix}.dense_bias`)),
    );
    return ops.reshape(ops.transpose(out, [1, 0]), [1, 1, bins, frames]);
  }

  // ---- shared -------------------------------------------------------------------------------

  /** sigmoid(out(h)), its bins padded to bins + 1 by repeating the last (F.pad 'replicate'). */
  private maskOut(h: Value, bins: number): Value {
    const { ops } = this;
    const channels = h.shape[1] as number;
    const weight = this.weights.get('out.weight', [2, channels, 1, 1]);
    const mask = ops.sigmoid(ops.conv(h, this.graph.constant(weight.data, weight.shape, 'out.weight'), undefined));
    if (mask.shape[2] !== bins) throw new StemsplitError('MODEL_INVALID', `${this.file}: the network gives ${mask.shape[2]} bins for ${bins}`);
    return ops.concat([mask, ops.slice(mask, 2, bins - 1, bins)], 2);
  }

  /** The pooled branch: mean over the bins, a 1×1 Conv2DBNActiv, spread back over the bins (bilinear from one row). */
  private pooled(prefix: string, x: Value): Value {
    const pooled = this.conv(prefix, this.ops.reduceMean(x, 2), 1, 'relu');
    const shape = [x.shape[0] as number, pooled.shape[1] as number, x.shape[2] as number, x.shape[3] as number];
    return this.graph.op('Expand', [pooled, this.graph.ints(shape, 'shape')], shape);
  }

  /** Decoder: ×2 bilinear (align_corners), the skip cropped to the centre frames and concatenated, a 3×3 Conv2DBNActiv. */
  private decoder(prefix: string, x: Value, skip: Value): Value {
    const [n, c, f, t] = x.shape as [number, number, number, number];
    const size = [n, c, 2 * f, 2 * t];
    const up = this.graph.op('Resize', [x, '', '', this.graph.ints(size, 'size')], size, {
      mode: attr.string('linear'),
      coordinate_transformation_mode: attr.string('align_corners'),
    });
    const [, , skipF, skipT] = skip.shape as [number, number, number, number];
    if (skipF !== 2 * f || skipT < 2 * t) {
      throw new StemsplitError(
        'MODEL_INVALID',
        `${this.file}: ${prefix} joins [${size.join(', ')}] with a skip of [${skip.shape.join(', ')}]: the params' bins or the window do not halve evenly through this network's encoders (the official code fails here too)`,
      );
    }
    const start = Math.floor((skipT - 2 * t) / 2);
    const cropped = skipT === 2 * t ? skip : this.ops.slice(skip, 3, start, start + 2 * t);
    return this.conv(prefix, this.ops.concat([up, cropped], 1), 1, 'relu');
  }

  /** Conv2DBNActiv under `prefix` (`prefix.0` the conv, `prefix.1` the BatchNorm), kernel from the weight, padding (k − 1)/2. */
  private conv(prefix: string, x: Value, stride: number, activation: Activation): Value {
    const weight = this.weights.get(`${prefix}.0.weight`);
    const k = weight.shape[2] as number;
    const pad = (k - 1) / 2;
    return this.convBn(`${prefix}.0.weight`, `${prefix}.1`, x, { strides: [stride, stride], pads: [pad, pad, pad, pad] }, activation);
  }

  /** A bias-free conv with the BatchNorm after it folded in, then the activation. */
  private convBn(
    weightName: string,
    bnPrefix: string,
    x: Value,
    options: { strides?: number[]; pads?: number[]; dilations?: number[] },
    activation: Activation,
  ): Value {
    const weight = this.weights.get(weightName);
    const out = weight.shape[0] as number;
    const perOut = weight.data.length / out;
    const { scale, shift } = this.batchNorm(bnPrefix, out);
    const folded = new Float32Array(weight.data.length);
    for (let o = 0; o < out; o++) for (let i = 0; i < perOut; i++) folded[o * perOut + i] = (weight.data[o * perOut + i] as number) * (scale[o] as number);
    const y = this.ops.conv(
      x,
      this.graph.constant(folded, weight.shape, weightName),
      this.graph.constant(Float32Array.from(shift), [out], `${bnPrefix}.shift`),
      options,
    );
    return activation === 'relu' ? this.ops.relu(y) : this.graph.op('LeakyRelu', [y], y.shape, { alpha: attr.float(LEAKY_SLOPE) });
  }

  /** Eval-mode BatchNorm as y = x·scale + shift (float64). */
  private batchNorm(prefix: string, channels: number): { scale: Float64Array; shift: Float64Array } {
    const gamma = this.weights.get(`${prefix}.weight`, [channels]).data;
    const beta = this.weights.get(`${prefix}.bias`, [channels]).data;
    const mean = this.weights.get(`${prefix}.running_mean`, [channels]).data;
    const variance = this.weights.get(`${prefix}.running_var`, [channels]).data;
    const scale = new Float64Array(channels);
    const shift = new Float64Array(channels);
    for (let c = 0; c < channels; c++) {
      scale[c] = (gamma[c] as number) / Math.sqrt((variance[c] as number) + BN_EPSILON);
      shift[c] = (beta[c] as number) - (mean[c] as number) * (scale[c] as number);
    }
    return { scale, shift };
  }

  /** How many feature maps of `channels` the ASPP bottleneck takes (its branch count). */
  private bottleneckInputs(name: string, channels: number): number {
    const weight = this.weights.get(name);
    const inputs = weight.shape[1] as number;
    if (inputs % channels !== 0 || inputs / channels < 5 || inputs / channels > 7) {
      throw new StemsplitError('MODEL_INVALID', `${this.file}: ${name} takes ${inputs} channels, not 5, 6 or 7 branches of ${channels}`);
    }
    return inputs / channels;
  }
}
