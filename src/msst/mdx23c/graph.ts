/**
 * MDX23C's TFC_TDF_net between the spectrum and the stems' spectra, as a chain of ONNX graphs
 * built from a state_dict: first 1×1 conv, `num_scales` encoder scales (TFC-TDF blocks, then a
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
import { OnnxGraph, type Value } from '../../onnx/graph.js';
import { Ops } from '../../onnx/ops.js';
import type { GraphStage } from '../../onnx/stages.js';
import { winogradConv3x3 } from '../../onnx/winograd.js';
import type { CheckpointTensor } from '../../torch/checkpoint.js';
import { StateReader } from '../../torch/state-reader.js';
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

  constructor(
    readonly graph: OnnxGraph,
    private readonly config: Mdx23cConfig,
    private readonly weights: StateReader,
    private readonly winogradMinChannels: number,
  ) {
    this.ops = new Ops(graph);
  }

  /** A checkpoint tensor of the expected shape, as a graph constant. */
  weight(name: string, shape: readonly number[]): Value {
    return this.graph.constant(this.tensor(name, shape).data, shape, name);
  }

  tensor(name: string, shape: readonly number[]): CheckpointTensor {
    return this.weights.get(name, shape);
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

/**
 * The network as a chain of graphs: the first conv and encoder scale 0, each further encoder
 * scale (its downscale, then its blocks), the bottleneck, and each decoder scale; the last also
 * takes the spectrum, recomputes the first conv (a 1×1 conv, cheaper than holding its output
 * through the network) and applies the final convs. Each scale's output is the next stage's
 * input and, for the encoder, the skip its decoder scale reads by name. As one graph, ONNX
 * Runtime's planner kept each scale's freed buffers for the same-shaped tensors of the matching
 * decoder scale, so every scale's buffers were held at once (docs/mdx23c.md, "Memory").
 */
export function buildMdx23cStages(config: Mdx23cConfig, state: State, shape: Mdx23cGraphShape, file: string, options: Mdx23cGraphOptions = {}): GraphStage[] {
  const weights = new StateReader(state, file);
  const winogradMinChannels = options.winogradMinChannels ?? WINOGRAD_MIN_CHANNELS;
  const { numChannels, growth, numScales, channels, numSubbands } = config;
  const inputChannels = channels * 2 * numSubbands;
  const spectrum = { name: GRAPH_INPUT, shape: [1, inputChannels, shape.frames, shape.subbandBins] as readonly number[] };
  const stages: GraphStage[] = [];
  let previous = spectrum;
  type Tensor = typeof spectrum;
  /** A stage reading the previous stage's output (`x`) and `others` by name, writing `output`. */
  const stage = (name: string, output: string, others: readonly Tensor[], body: (net: Network, x: Value, others: Value[]) => Value): Tensor => {
    const graph = new OnnxGraph(`mdx23c-${name}`);
    const net = new Network(graph, config, weights, winogradMinChannels);
    const x = graph.input(stages.length === 0 ? GRAPH_INPUT : 'x_in', previous.shape);
    const inputs = others.map((other) => graph.input(other.name, other.shape));
    const result = graph.output(body(net, x, inputs), output);
    stages.push({ name, graph, inputs: [x.name, ...others.map((other) => other.name)], output });
    previous = { name: output, shape: result.shape };
    return previous;
  };
  const firstConv = (net: Network, mix: Value) => net.graph.scope('first_conv', () => net.conv1x1(mix, 'first_conv.weight', numChannels));
  /** Channels at scale `i` (the bottleneck is scale `numScales`). */
  const widthAt = (i: number) => numChannels + i * growth;
  /** Encoder scale `i − 1`'s strided conv, which opens scale `i`. */
  const downscale = (net: Network, x: Value, i: number) => {
    const prefix = `encoder_blocks.${i - 1}.downscale`;
    return net.graph.scope(prefix, () => net.downscale(x, prefix, widthAt(i)));
  };

  const skips: Tensor[] = [];
  for (let i = 0; i < numScales; i++) {
    const opened = (net: Network, x: Value) => (i === 0 ? firstConv(net, x) : downscale(net, x, i));
    skips.push(stage(`encoder${i}`, `skip${i}`, [], (net, x) => net.tfcTdf(opened(net, x), `encoder_blocks.${i}.tfc_tdf`, widthAt(i))));
  }
  stage('bottleneck', 'bottleneck', [], (net, x) => net.tfcTdf(downscale(net, x, numScales), 'bottleneck_block', widthAt(numScales)));
  const stems = config.instruments.length;
  for (let i = 0; i < numScales; i++) {
    const prefix = `decoder_blocks.${i}`;
    const width = widthAt(numScales - 1 - i);
    const skip = skips.pop() as Tensor;
    const final = i === numScales - 1;
    stage(final ? 'decoder-final' : `decoder${i}`, final ? GRAPH_OUTPUT : `decoder${i}`, final ? [skip, spectrum] : [skip], (net, x, [s, mix]) => {
      const { ops } = net;
      const up = net.graph.scope(`${prefix}.upscale`, () => net.upscale(x, `${prefix}.upscale`, width));
      const y = net.tfcTdf(ops.concat([up, s as Value], 1), `${prefix}.tfc_tdf`, width);
      if (!final) return y;
      // The first conv again, made only once y exists (ONNX Runtime would otherwise run it first and hold it throughout).
      const product = ops.mul(y, firstConv(net, ops.after(mix as Value, y)));
      return net.graph.scope('final_conv', () => {
        const hidden = net.act(net.conv1x1(ops.concat([mix as Value, product], 1), 'final_conv.0.weight', width));
        return net.conv1x1(hidden, 'final_conv.2.weight', stems * inputChannels);
      });
    });
  }
  weights.refuseUnused('mdx23c', (key) => key.endsWith('.num_batches_tracked'));
  return stages;
}
