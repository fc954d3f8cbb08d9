/**
 * The RoFormer network between the spectrogram and the masks, as one ONNX graph built from a
 * state_dict: band split → `depth` blocks of [linear-attention] / time / frequency transformers
 * → per-stem, per-band mask MLPs. Both BS-RoFormer and Mel-Band RoFormer are this network;
 * they differ in which bins form a band (the caller lays the features out band by band), in
 * where RMSNorms sit, and in what `mask_estimator_depth` counts.
 *
 *   input  `features` [frames, D]   D = Σ din_b, band b's (bin, channel, re/im) values in a row
 *   output `masks`    [stems, frames, D]   the same layout: a complex mask value per entry
 *
 * Rotary positions are baked in as constants for the chunk's fixed frame and band counts.
 */
import type { CheckpointTensor } from '../../torch/checkpoint.js';
import { StateReader } from '../../torch/state-reader.js';
import { attr, MS_DOMAIN, OnnxGraph, type Value } from '../../onnx/graph.js';
import { Ops, type OpsOptions } from '../../onnx/ops.js';
import type { GraphStage } from '../../onnx/stages.js';
import type { RoformerConfig } from './config.js';

export const GRAPH_INPUT = 'features';
export const GRAPH_OUTPUT = 'masks';

type State = ReadonlyMap<string, CheckpointTensor>;

/** Attention scores of one group of sequences at most this big (ORT's CPU kernel materialises them). */
const ATTENTION_BYTES = 64 * 2 ** 20;
/** A transformer's feed-forward hidden buffer per group of sequences at most this big (glibc maps blocks over 32 MB afresh each time). */
const GROUP_BYTES = 32 * 2 ** 20;

export interface RoformerGraphShape {
  readonly frames: number;
  /** Values per band in the feature row: 2 · channels · bins of the band. */
  readonly bandWidths: readonly number[];
}

/** One ONNX graph of the network and the tensors it reads and writes (all [frames, …] float32). */
export type RoformerStage = GraphStage;

/**
 * The network as a chain of graphs: the band split, one graph per block, then the mask heads.
 * One graph per block keeps ONNX Runtime's memory to one block's activations: in a single
 * graph its buffer reuse kept every differently sized buffer alive from block to block (a
 * full-size BS-RoFormer peaked at 6.1 GB as one graph; see docs/roformer.md).
 * Each stage reads the previous stage's output first; with skip connections block i also reads
 * the outputs of blocks 0..i−1 (`block<j>`).
 */
export function buildRoformerStages(config: RoformerConfig, state: State, shape: RoformerGraphShape, file: string, options: OpsOptions = {}): RoformerStage[] {
  const weights = new StateReader(state, file);
  const stage = (
    name: string,
    inputs: readonly { name: string; shape: readonly number[] }[],
    output: string,
    body: (net: Network, values: Value[]) => Value,
  ): RoformerStage => {
    const graph = new OnnxGraph(`${config.type}-${name}`);
    const net = new Network(graph, new Ops(graph, options), weights, config, shape);
    const values = inputs.map((input) => graph.input(input.name, input.shape));
    graph.output(body(net, values), output);
    return { name, graph, inputs: inputs.map((input) => input.name), output };
  };
  const width = shape.bandWidths.reduce((a, b) => a + b, 0);
  const tokens = [shape.frames, shape.bandWidths.length, config.dim];
  const stages = [stage('band-split', [{ name: GRAPH_INPUT, shape: [shape.frames, width] }], 'x', (net, [features]) => net.bandSplit(features as Value))];
  for (let block = 0; block < config.depth; block++) {
    const skips = config.skipConnection ? Array.from({ length: block }, (_, j) => ({ name: `block${j}`, shape: tokens })) : [];
    stages.push(
      stage(`block${block}`, [{ name: 'x_in', shape: tokens }, ...skips], `block${block}`, (net, [x, ...earlier]) => net.block(block, x as Value, earlier)),
    );
  }
  stages.push(stage('masks', [{ name: 'x_in', shape: tokens }], GRAPH_OUTPUT, (net, [x]) => net.masks(x as Value)));
  // Rotary frequencies are recomputed from the config, so they count as read.
  weights.refuseUnused(config.type, (key) => key.endsWith('rotary_embed.freqs'));
  return stages;
}

class Network {
  private readonly constants = new Map<string, Value>();
  private readonly frames: number;
  private readonly bands: number;
  private readonly dim: number;

  constructor(
    private readonly graph: OnnxGraph,
    private readonly ops: Ops,
    private readonly weights: StateReader,
    private readonly config: RoformerConfig,
    private readonly shape: RoformerGraphShape,
  ) {
    this.frames = shape.frames;
    this.bands = shape.bandWidths.length;
    this.dim = config.dim;
  }

  /** Block `block`: [linear-attention transformer] → skip sums → time transformer → frequency transformer. */
  block(block: number, x: Value, earlier: readonly Value[]): Value {
    const { config } = this;
    let k = 0;
    let y = x;
    if (config.linearDepth > 0) {
      const flat = this.ops.reshape(y, [1, this.frames * this.bands, this.dim]);
      y = this.ops.reshape(this.transformer(`layers.${block}.${k++}`, flat, config.linearDepth, 'linear'), y.shape);
    }
    for (const skip of earlier) y = this.ops.add(y, skip);
    const byBand = this.ops.transpose(y, [1, 0, 2]); // [nb, T, dim]: one sequence per band over time
    y = this.ops.transpose(this.transformer(`layers.${block}.${k++}`, byBand, config.timeDepth, 'rotary'), [1, 0, 2]);
    return this.transformer(`layers.${block}.${k++}`, y, config.freqDepth, 'rotary'); // [T, nb, dim]: over bands
  }

  /** BS-RoFormer's final norm, then every stem's mask: [stems, T, D]. */
  masks(x: Value): Value {
    const normed = this.config.type === 'bs_roformer' ? this.rmsNorm(x, 'final_norm.gamma') : x;
    const masks = Array.from({ length: this.config.numStems }, (_, stem) => this.maskEstimator(normed, stem));
    return this.ops.concat(masks, 0);
  }

  /** Each band's slice of the row → RMSNorm → Linear(din_b → dim); stacked as [T, nb, dim]. */
  bandSplit(features: Value): Value {
    const parts = this.ops.split(features, 1, this.shape.bandWidths);
    const embedded = parts.map((part, band) => {
      const width = this.shape.bandWidths[band] as number;
      const prefix = `band_split.to_features.${band}`;
      const normed = this.rmsNorm(part, `${prefix}.0.gamma`, width);
      const projected = this.linear(normed, `${prefix}.1`, this.dim, width, true);
      return this.ops.reshape(projected, [this.frames, 1, this.dim]);
    });
    return this.ops.concat(embedded, 1);
  }

  /** `depth` layers of attention + feed-forward on x [batch, n, dim]; Mel-Band ends each stack with an RMSNorm. */
  /**
   * A transformer over x [batch, n, dim]. Its sequences are independent (bands over time, or
   * frames over bands), so a large batch runs in groups of sequences, one after another: each
   * group's biggest buffer (the feed-forward's 4·dim hidden) stays under GROUP_BYTES, which
   * bounds memory and lets the allocator reuse blocks instead of mapping fresh pages each time.
   */
  private transformer(prefix: string, x: Value, depth: number, kind: 'rotary' | 'linear'): Value {
    const [batch, n, dim] = x.shape as [number, number, number];
    const groups = kind === 'rotary' ? Math.min(batch, Math.ceil((batch * n * 4 * dim * 4) / GROUP_BYTES)) : 1;
    const size = Math.ceil(batch / groups);
    const parts: Value[] = [];
    for (let start = 0; start < batch; start += size) {
      let y = groups === 1 ? x : this.ops.slice(x, 0, start, Math.min(batch, start + size));
      for (let layer = 0; layer < depth; layer++) {
        const at = `${prefix}.layers.${layer}`;
        y = this.ops.add(y, kind === 'rotary' ? this.attention(`${at}.0`, y) : this.linearAttention(`${at}.0`, y));
        y = this.ops.add(y, this.feedForward(`${at}.1.net`, y));
      }
      parts.push(this.weights.has(`${prefix}.norm.gamma`) ? this.rmsNorm(y, `${prefix}.norm.gamma`) : y);
    }
    return parts.length === 1 ? (parts[0] as Value) : this.ops.concat(parts, 0);
  }

  /** A weight as a graph constant, stored once however many groups read it. */
  private constant(name: string, data: Float32Array, shape: readonly number[]): Value {
    let value = this.constants.get(name);
    if (value === undefined) {
      value = this.graph.constant(data, shape, name.split('.').slice(-2).join('_'));
      this.constants.set(name, value);
    }
    return value;
  }

  /**
   * Gated softmax attention with rotary positions. The attention itself is ONNX Runtime's fused
   * MultiHeadAttention (com.microsoft), which never materialises the [batch, heads, n, n] scores
   * for long sequences: on a full-size BS-RoFormer those are 1.3 GB per matrix.
   */
  private attention(prefix: string, x: Value): Value {
    const { heads, dimHead } = this.config;
    const [batch, n] = x.shape as [number, number, number];
    const inner = heads * dimHead;
    const h = this.rmsNorm(x, `${prefix}.norm.gamma`);
    const qkv = this.linear(h, `${prefix}.to_qkv`, 3 * inner, this.dim, false);
    const [q, k, v] = this.ops
      .split(this.ops.reshape(qkv, [batch, n, 3, heads, dimHead]), 2, 3)
      .map((t) => this.ops.reshape(t, [batch, n, heads, dimHead])) as [Value, Value, Value];
    const freqs = this.weights.get(`${prefix}.rotary_embed.freqs`, [dimHead / 2]).data;
    const flat = (t: Value) => this.ops.reshape(t, [batch, n, inner]);
    const [qf, kf, vf] = [flat(this.rotary(q, freqs, n)), flat(this.rotary(k, freqs, n)), flat(v)];
    // Sequences in groups whose score matrices stay under ATTENTION_BYTES, run one after another.
    const groups = Math.min(batch, Math.ceil((batch * heads * n * n * 4) / ATTENTION_BYTES));
    const size = Math.ceil(batch / groups);
    const parts: Value[] = [];
    for (let start = 0; start < batch; start += size) {
      const end = Math.min(batch, start + size);
      const pick = (t: Value) => (groups === 1 ? t : this.ops.slice(t, 0, start, end));
      parts.push(
        this.graph.op(
          'MultiHeadAttention',
          [pick(qf), pick(kf), pick(vf)],
          [end - start, n, inner],
          {
            num_heads: attr.int(heads),
            scale: attr.float(dimHead ** -0.5),
          },
          MS_DOMAIN,
        ),
      );
    }
    const attended = parts.length === 1 ? (parts[0] as Value) : this.ops.concat(parts, 0);
    const gates = this.ops.sigmoid(this.linear(h, `${prefix}.to_gates`, heads, this.dim, true)); // [batch, n, heads]
    const gated = this.ops.mul(this.ops.reshape(attended, [batch, n, heads, dimHead]), this.ops.reshape(gates, [batch, n, heads, 1]));
    return this.linear(this.ops.reshape(gated, [batch, n, inner]), `${prefix}.to_out.0`, this.dim, inner, false);
  }

  /**
   * rotary-embedding-torch with its defaults on x [batch, n, heads, d]: angle = position · freq,
   * repeated per adjacent pair; x·cos + rotate_half(x)·sin with
   * rotate_half(x)[2i, 2i+1] = (−x[2i+1], x[2i]).
   */
  private rotary(x: Value, freqs: Float32Array, n: number): Value {
    const d = x.shape[3] as number;
    const cos = new Float32Array(n * d);
    const sin = new Float32Array(n * d);
    for (let pos = 0; pos < n; pos++) {
      for (let i = 0; i < d; i++) {
        const angle = Math.fround(pos * (freqs[i >> 1] as number));
        cos[pos * d + i] = Math.fround(Math.cos(angle));
        sin[pos * d + i] = Math.fround(Math.sin(angle));
      }
    }
    const pairs = this.ops.reshape(x, [...x.shape.slice(0, 3), d / 2, 2]);
    const [even, odd] = this.ops.split(pairs, 4, 2) as [Value, Value];
    const negOdd = this.graph.op('Neg', [odd], odd.shape);
    const rotated = this.ops.reshape(this.ops.concat([negOdd, even], 4), x.shape);
    const cosValue = this.constant(`rope_cos_${n}_${d}`, cos, [n, 1, d]);
    const sinValue = this.constant(`rope_sin_${n}_${d}`, sin, [n, 1, d]);
    return this.ops.add(this.ops.mul(x, cosValue), this.ops.mul(rotated, sinValue));
  }

  /**
   * Linear attention (El-Nouby et al., as in the RoFormer code): q and k L2-normalised along
   * the sequence, q scaled by exp(temperature), then softmax attention with scale 8 between
   * the dim_head feature channels of each head.
   */
  private linearAttention(prefix: string, x: Value): Value {
    const { heads, dimHead } = this.config;
    const [batch, n] = x.shape as [number, number, number];
    const inner = heads * dimHead;
    const h = this.rmsNorm(x, `${prefix}.norm.gamma`);
    const qkv = this.linear(h, `${prefix}.to_qkv.0`, 3 * inner, this.dim, false);
    const split = this.ops.transpose(this.ops.reshape(qkv, [batch, n, 3, heads, dimHead]), [2, 0, 3, 4, 1]);
    const [q, k, v] = this.ops.split(split, 0, 3).map((t) => this.ops.reshape(t, [batch, heads, dimHead, n])) as [Value, Value, Value];
    const temperature = this.weights.get(`${prefix}.temperature`, [heads, 1, 1]).data;
    const qScaled = this.ops.mul(this.l2Normalize(q), this.constant(`${prefix}.temperature`, temperature.map(Math.exp), [heads, 1, 1]));
    const scores = this.ops.mul(this.ops.matmul(qScaled, this.ops.transpose(this.l2Normalize(k), [0, 1, 3, 2])), this.graph.scalar(8, 'scale'));
    const out = this.ops.matmul(this.ops.softmax(scores, -1), v); // [batch, heads, dimHead, n]
    const rows = this.ops.reshape(this.ops.transpose(out, [0, 3, 1, 2]), [batch, n, inner]);
    return this.linear(rows, `${prefix}.to_out.1`, this.dim, inner, false);
  }

  private feedForward(prefix: string, x: Value): Value {
    const h = this.rmsNorm(x, `${prefix}.0.gamma`);
    const hiddenSize = this.weights.get(`${prefix}.1.weight`).shape[0] as number;
    const hidden = this.ops.gelu(this.linear(h, `${prefix}.1`, hiddenSize, this.dim, true));
    return this.linear(hidden, `${prefix}.4`, this.dim, hiddenSize, true);
  }

  /**
   * Stem `stem`'s mask: per band an MLP (Linear, Tanh, …, Linear) then GLU, giving din_b
   * values; concatenated over bands. The number of Linears is read from the checkpoint and
   * checked against the config (BS-RoFormer: depth Linears; Mel-Band: depth + 1).
   */
  private maskEstimator(x: Value, stem: number): Value {
    const expectedLinears = this.config.type === 'bs_roformer' ? this.config.maskEstimatorDepth : this.config.maskEstimatorDepth + 1;
    const hidden = this.dim * this.config.mlpExpansionFactor;
    const perBand = this.ops.split(x, 1, this.bands).map((band, b) => {
      const prefix = `mask_estimators.${stem}.to_freqs.${b}.0`;
      const width = this.shape.bandWidths[b] as number;
      let y = this.ops.reshape(band, [this.frames, this.dim]);
      for (let layer = 0; layer < expectedLinears; layer++) {
        const last = layer === expectedLinears - 1;
        y = this.linear(y, `${prefix}.${2 * layer}`, last ? 2 * width : hidden, layer === 0 ? this.dim : hidden, true);
        if (!last) y = this.graph.op('Tanh', [y], y.shape);
      }
      return this.ops.glu(y, 1);
    });
    const mask = this.ops.concat(perBand, 1); // [T, D]
    return this.ops.reshape(mask, [1, ...mask.shape]);
  }

  /**
   * F.normalize(x, dim=-1) · √d · gamma, the RoFormer RMSNorm, as ORT's fused
   * SimplifiedLayerNormalization: x / √(mean(x²) + ε) · gamma is the same thing, since
   * ‖x‖/√d = √mean(x²); ε = 1e-24/d stands in for F.normalize's max(‖x‖, 1e-12) (0 stays 0).
   */
  private rmsNorm(x: Value, gammaName: string, width?: number): Value {
    const d = width ?? (x.shape[x.shape.length - 1] as number);
    const gamma = this.weights.get(gammaName, [d]).data;
    return this.graph.op('SimplifiedLayerNormalization', [x, this.constant(gammaName, gamma, [d])], x.shape, {
      axis: attr.int(-1),
      epsilon: attr.float(1e-24 / d),
    });
  }

  /** x / max(‖x‖₂, 1e-12) over the last axis. */
  private l2Normalize(x: Value): Value {
    const axis = x.shape.length - 1;
    const keep = x.shape.map((d, i) => (i === axis ? 1 : d));
    const sumSquares = this.graph.op('ReduceSumSquare', [x], keep, { axes: attr.ints([axis]), keepdims: attr.int(1) });
    const norm = this.graph.op('Max', [this.graph.op('Sqrt', [sumSquares], keep), this.graph.scalar(1e-12, 'eps')], keep);
    return this.graph.op('Div', [x, norm], x.shape);
  }

  /**
   * PyTorch Linear on the last axis of x (any rank): x·Wᵀ (+ b), as one Gemm over the rows
   * (the bias fused in, no second full-size buffer).
   */
  private linear(x: Value, prefix: string, out: number, inputs: number, bias: boolean): Value {
    const weight = this.weights.get(`${prefix}.weight`, [out, inputs]);
    const rows = x.shape.slice(0, -1).reduce((a, b) => a * b, 1);
    const flat = x.shape.length === 2 ? x : this.ops.reshape(x, [rows, inputs]);
    const y = this.ops.linear(
      flat,
      this.constant(`${prefix}.weight`, weight.data, [out, inputs]),
      bias ? this.constant(`${prefix}.bias`, this.weights.get(`${prefix}.bias`, [out]).data, [out]) : undefined,
    );
    return x.shape.length === 2 ? y : this.ops.reshape(y, [...x.shape.slice(0, -1), out]);
  }
}
