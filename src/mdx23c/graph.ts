/**
 * MDX23C's TFC_TDF_net between the spectrum and the stems' spectra, as one ONNX graph built
 * from a state_dict: first 1×1 conv, `num_scales` encoder scales (TFC-TDF blocks, then a
 * strided-conv downscale), the bottleneck, the decoder (transposed-conv upscale, the skip
 * concatenated, TFC-TDF blocks), the product with the first conv's output, and the final 1×1
 * convs over the mixture and that product.
 *
 *   input  `spectrum` [1, C·2·k, frames, dim_f/k]   (see spectrum.ts for the layout)
 *   output `stems`    [1, S·C·2·k, frames, dim_f/k]
 *
 * A TFC-TDF block: shortcut = 1×1 conv; x = conv3×3(act(norm(x))); x += Linear(act(norm(
 * Linear(act(norm(x)))))) over the frequency axis; x = conv3×3(act(norm(x))) + shortcut.
 */
import { StemsplitError } from '../errors.js';
import { OnnxGraph, type Value } from '../onnx/graph.js';
import { Ops } from '../onnx/ops.js';
import type { GraphStage } from '../onnx/stages.js';
import { winogradConv3x3 } from '../onnx/winograd.js';
import type { CheckpointTensor } from '../torch/checkpoint.js';
import type { Mdx23cConfig } from './config.js';

export const GRAPH_INPUT = 'spectrum';
export const GRAPH_OUTPUT = 'stems';

type State = ReadonlyMap<string, CheckpointTensor>;

/**
 * 3×3 convolutions with at least this many input and output channels run as Winograd F(4×4, 3×3)
 * (onnx/winograd.ts): 1.2× to 1.8× less CPU on the published networks' scales; below 128 channels
 * the transforms cost about what they save (docs/mdx23c.md, "Speed and memory").
 */
export const WINOGRAD_MIN_CHANNELS = 128;

export interface Mdx23cGraphOptions {
  /** Default WINOGRAD_MIN_CHANNELS; 1 takes every 3×3 convolution (tests). */
  readonly winogradMinChannels?: number;
}

/** The graph's fixed input size: frames and bins per sub-band of one chunk. */
export interface Mdx23cGraphShape {
  readonly frames: number;
  readonly subbandBins: number;
}

class Network {
  readonly ops: Ops;
  private readonly used = new Set<string>();

  constructor(
    readonly graph: OnnxGraph,
    private readonly config: Mdx23cConfig,
    private readonly state: State,
    private readonly file: string,
    private readonly winogradMinChannels: number,
  ) {
    this.ops = new Ops(graph);
  }

  /** A checkpoint tensor of the expected shape, as a graph constant. */
  weight(name: string, shape: readonly number[]): Value {
    return this.graph.constant(this.tensor(name, shape).data, shape, name);
  }

  tensor(name: string, shape: readonly number[]): CheckpointTensor {
    const tensor = this.state.get(name);
    if (tensor === undefined) throw new StemsplitError('MODEL_INVALID', `${this.file}: the checkpoint lacks ${name} (does the config match it?)`);
    if (tensor.shape.length !== shape.length || tensor.shape.some((d, i) => d !== shape[i])) {
      throw new StemsplitError('MODEL_INVALID', `${this.file}: ${name} is [${tensor.shape.join(', ')}], the config implies [${shape.join(', ')}]`);
    }
    this.used.add(name);
    return tensor;
  }

  /** Checkpoint tensors the network did not read (BatchNorm's step counter is bookkeeping). */
  unused(): string[] {
    return [...this.state.keys()].filter((key) => !this.used.has(key) && !key.endsWith('.num_batches_tracked'));
  }

  norm(x: Value, name: string): Value {
    const channels = x.shape[1] as number;
    const { norm } = this.config;
    switch (norm.kind) {
      case 'identity':
        return x;
      case 'instance':
        return this.ops.instanceNorm(x, this.weight(`${name}.weight`, [channels]), this.weight(`${name}.bias`, [channels]));
      case 'batch':
        return this.ops.batchNorm(
          x,
          this.weight(`${name}.weight`, [channels]),
          this.weight(`${name}.bias`, [channels]),
          this.weight(`${name}.running_mean`, [channels]),
          this.weight(`${name}.running_var`, [channels]),
        );
      case 'group':
        return this.ops.groupNorm(x, norm.groups, this.tensor(`${name}.weight`, [channels]).data, this.tensor(`${name}.bias`, [channels]).data);
    }
  }

  act(x: Value): Value {
    const { act } = this.config;
    if (act.kind === 'gelu') return this.ops.gelu(x);
    if (act.kind === 'relu') return this.ops.relu(x);
    return this.ops.elu(x, act.alpha);
  }

  /** norm → act, the head of every Sequential in the network. */
  normAct(x: Value, name: string): Value {
    return this.act(this.norm(x, name));
  }

  conv1x1(x: Value, name: string, out: number): Value {
    return this.ops.conv(x, this.weight(name, [out, x.shape[1] as number, 1, 1]), undefined);
  }

  conv3x3(x: Value, name: string, out: number): Value {
    const channels = x.shape[1] as number;
    const shape = [out, channels, 3, 3];
    if (Math.min(out, channels) >= this.winogradMinChannels) return winogradConv3x3(this.ops, x, this.tensor(name, shape).data, out, name);
    return this.ops.conv(x, this.weight(name, shape), undefined, { pads: [1, 1, 1, 1] });
  }

  /** nn.Linear(in, out, bias=False) over the last axis: x · Wᵀ. */
  linear(x: Value, name: string, out: number): Value {
    const features = x.shape[x.shape.length - 1] as number;
    const weight = this.tensor(name, [out, features]).data;
    const transposed = new Float32Array(features * out);
    for (let o = 0; o < out; o++) for (let i = 0; i < features; i++) transposed[i * out + o] = weight[o * features + i] as number;
    return this.ops.matmul(x, this.graph.constant(transposed, [features, out], name));
  }

  /** TFC_TDF: `blocks` residual blocks from `x`'s channels to `channels`, `bins` wide. */
  tfcTdf(x: Value, prefix: string, channels: number): Value {
    const { blocksPerScale, bottleneckFactor } = this.config;
    const bins = x.shape[3] as number;
    const narrow = Math.floor(bins / bottleneckFactor);
    let out = x;
    for (let j = 0; j < blocksPerScale; j++) {
      const block = `${prefix}.blocks.${j}`;
      this.graph.scope(block, () => {
        const shortcut = this.conv1x1(out, `${block}.shortcut.weight`, channels);
        let y = this.conv3x3(this.normAct(out, `${block}.tfc1.0`), `${block}.tfc1.2.weight`, channels);
        let tdf = this.linear(this.normAct(y, `${block}.tdf.0`), `${block}.tdf.2.weight`, narrow);
        tdf = this.linear(this.normAct(tdf, `${block}.tdf.3`), `${block}.tdf.5.weight`, bins);
        y = this.ops.add(y, tdf);
        y = this.conv3x3(this.normAct(y, `${block}.tfc2.0`), `${block}.tfc2.2.weight`, channels);
        out = this.ops.add(y, shortcut);
      });
    }
    return out;
  }

  downscale(x: Value, prefix: string, out: number): Value {
    const { scale } = this.config;
    const weight = this.weight(`${prefix}.conv.2.weight`, [out, x.shape[1] as number, ...scale]);
    return this.ops.conv(this.normAct(x, `${prefix}.conv.0`), weight, undefined, { strides: scale });
  }

  upscale(x: Value, prefix: string, out: number): Value {
    const { scale } = this.config;
    const weight = this.weight(`${prefix}.conv.2.weight`, [x.shape[1] as number, out, ...scale]);
    return this.ops.convTranspose(this.normAct(x, `${prefix}.conv.0`), weight, undefined, scale);
  }
}

/** The network as one graph stage. */
export function buildMdx23cStages(config: Mdx23cConfig, state: State, shape: Mdx23cGraphShape, file: string, options: Mdx23cGraphOptions = {}): GraphStage[] {
  const graph = new OnnxGraph('mdx23c');
  const net = new Network(graph, config, state, file, options.winogradMinChannels ?? WINOGRAD_MIN_CHANNELS);
  const { ops } = net;
  const { numChannels, growth, numScales, channels, numSubbands } = config;
  const inputChannels = channels * 2 * numSubbands;
  const stems = config.instruments.length;
  const mix = graph.input(GRAPH_INPUT, [1, inputChannels, shape.frames, shape.subbandBins]);

  let width = numChannels;
  const firstConv = graph.scope('first_conv', () => net.conv1x1(mix, 'first_conv.weight', width));
  let x = firstConv;
  const skips: Value[] = [];
  for (let i = 0; i < numScales; i++) {
    const prefix = `encoder_blocks.${i}`;
    x = net.tfcTdf(x, `${prefix}.tfc_tdf`, width);
    skips.push(x);
    x = graph.scope(`${prefix}.downscale`, () => net.downscale(x, `${prefix}.downscale`, width + growth));
    width += growth;
  }
  x = net.tfcTdf(x, 'bottleneck_block', width);
  for (let i = 0; i < numScales; i++) {
    const prefix = `decoder_blocks.${i}`;
    x = graph.scope(`${prefix}.upscale`, () => net.upscale(x, `${prefix}.upscale`, width - growth));
    width -= growth;
    x = ops.concat([x, skips.pop() as Value], 1);
    x = net.tfcTdf(x, `${prefix}.tfc_tdf`, width);
  }
  x = ops.mul(x, firstConv);
  x = graph.scope('final_conv', () => {
    const hidden = net.act(net.conv1x1(ops.concat([mix, x], 1), 'final_conv.0.weight', width));
    return net.conv1x1(hidden, 'final_conv.2.weight', stems * inputChannels);
  });
  graph.output(x, GRAPH_OUTPUT);

  const unused = net.unused();
  if (unused.length > 0) {
    const shown = unused.slice(0, 5).join(', ') + (unused.length > 5 ? ` and ${unused.length - 5} more` : '');
    throw new StemsplitError('MODEL_INVALID', `${file}: layers the mdx23c config does not describe: ${shown}`);
  }
  return [{ name: 'mdx23c', graph, inputs: [GRAPH_INPUT], output: GRAPH_OUTPUT }];
}
