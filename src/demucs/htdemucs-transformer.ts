/**
 * HTDemucs' cross-domain transformer as ONNX: the spectral and temporal branches' tokens, their
 * positional embeddings and norms, self- and cross-attention layers alternating, in the graph of
 * the stage the builder is making (htdemucs-graph.ts).
 */
import { attr, MS_DOMAIN, type OnnxGraph, type Value } from '../onnx/graph.js';
import type { Ops } from '../onnx/ops.js';
import type { HTDemucsConfig } from './config.js';
import { GROUP_NORM_EPS, LAYER_NORM_EPS, type HTDemucsWeights, type StageInProgress } from './htdemucs-weights.js';
import { sin2dEmbedding, sinEmbedding } from './positional.js';

export class HTDemucsTransformer {
  constructor(
    private readonly config: HTDemucsConfig,
    private readonly weights: HTDemucsWeights,
    private readonly stage: () => StageInProgress,
  ) {}

  private get graph(): OnnxGraph {
    return this.stage().graph;
  }

  private get ops(): Ops {
    return this.stage().ops;
  }

  crossTransformer(x: Value, xt: Value): [Value, Value] {
    const { config, ops } = this;
    const [, channels, freqs, frames] = x.shape as [number, number, number, number];
    const timeSteps = xt.shape[2] as number;
    // Tokens: [frames·freqs, C] with token = frame·freqs + freq (einops "b c fr t1 -> b (t1 fr) c").
    let tokens = ops.reshape(ops.transpose(x, [0, 3, 2, 1]), [frames * freqs, channels]);
    let tokensT = ops.reshape(ops.transpose(xt, [0, 2, 1]), [timeSteps, channels]);
    if (config.bottomChannels > 0) {
      tokens = this.pointwise('channel_upsampler', tokens);
      tokensT = this.pointwise('channel_upsampler_t', tokensT);
    }
    const dim = tokens.shape[1] as number;

    tokens = this.inputNorm('crosstransformer.norm_in', tokens);
    tokens = ops.add(tokens, this.scaledPositions(sin2dEmbedding(dim, freqs, frames, config.tMaxPeriod), tokens.shape, 'pos_2d'));
    tokensT = this.inputNorm('crosstransformer.norm_in_t', tokensT);
    tokensT = ops.add(tokensT, this.scaledPositions(sinEmbedding(timeSteps, dim, config.tMaxPeriod), tokensT.shape, 'pos_1d'));

    const classicParity = config.tCrossFirst ? 1 : 0;
    for (let index = 0; index < config.tLayers; index++) {
      const p = `crosstransformer.layers.${index}`;
      const pt = `crosstransformer.layers_t.${index}`;
      if (index % 2 === classicParity) {
        tokens = this.graph.scope(`layer${index}`, () => this.transformerLayer(p, tokens, undefined));
        tokensT = this.graph.scope(`layer_t${index}`, () => this.transformerLayer(pt, tokensT, undefined));
      } else {
        const before = tokens;
        tokens = this.graph.scope(`layer${index}`, () => this.transformerLayer(p, tokens, tokensT));
        tokensT = this.graph.scope(`layer_t${index}`, () => this.transformerLayer(pt, tokensT, before));
      }
    }

    if (config.bottomChannels > 0) {
      tokens = this.pointwise('channel_downsampler', tokens);
      tokensT = this.pointwise('channel_downsampler_t', tokensT);
    }
    const outChannels = tokens.shape[1] as number;
    const xOut = ops.transpose(ops.reshape(tokens, [1, frames, freqs, outChannels]), [0, 3, 2, 1]);
    const xtOut = ops.reshape(ops.transpose(tokensT, [1, 0]), [1, outChannels, timeSteps]);
    return [xOut, xtOut];
  }

  /** A 1×1 Conv1d applied to tokens [N, C] (weights [out, in, 1]). */
  private pointwise(prefix: string, tokens: Value): Value {
    const weight = this.weights.tensor(`${prefix}.weight`);
    const w = this.weights.constant(weight.data, [weight.shape[0] as number, weight.shape[1] as number], `${prefix}.weight`);
    return this.ops.linear(tokens, w, this.weights.value(`${prefix}.bias`));
  }

  private scaledPositions(embedding: Float32Array, shape: readonly number[], hint: string): Value {
    const weight = this.config.tWeightPosEmbed;
    if (weight !== 1) for (let i = 0; i < embedding.length; i++) embedding[i] = Math.fround(weight * (embedding[i] as number));
    return this.weights.constant(embedding, shape, hint);
  }

  private inputNorm(prefix: string, tokens: Value): Value {
    const { config } = this;
    if (config.tNormIn) return this.layerNorm(prefix, tokens);
    if (config.tNormInGroup) return this.tokenGroupNorm(prefix, tokens);
    return tokens;
  }

  private layerNorm(prefix: string, tokens: Value): Value {
    return this.ops.layerNorm(tokens, this.weights.value(`${prefix}.weight`), this.weights.value(`${prefix}.bias`), LAYER_NORM_EPS);
  }

  /** demucs' MyGroupNorm with one group on tokens [N, C]: statistics over all tokens and channels. */
  private tokenGroupNorm(prefix: string, tokens: Value): Value {
    const { weights } = this;
    return this.ops.channelsLastGroupNorm(tokens, weights.data(`${prefix}.weight`), weights.data(`${prefix}.bias`), GROUP_NORM_EPS);
  }

  private transformerNorm(prefix: string, tokens: Value): Value {
    return this.config.tGroupNorm ? this.tokenGroupNorm(prefix, tokens) : this.layerNorm(prefix, tokens);
  }

  /**
   * MyTransformerEncoderLayer (keys = undefined: self-attention) or
   * CrossTransformerEncoderLayer (keys = the other branch's tokens).
   */
  private transformerLayer(prefix: string, x: Value, keys: Value | undefined): Value {
    const { config, ops } = this;
    const cross = keys !== undefined;
    const attention = cross ? `${prefix}.cross_attn` : `${prefix}.self_attn`;
    const feedForwardNorm = cross ? `${prefix}.norm3` : `${prefix}.norm2`;
    if (config.tNormFirst) {
      const query = this.transformerNorm(`${prefix}.norm1`, x);
      const key = cross ? this.transformerNorm(`${prefix}.norm2`, keys) : query;
      let out = ops.add(x, this.attention(attention, query, key, `${prefix}.gamma_1`));
      out = ops.add(out, this.feedForward(prefix, this.transformerNorm(feedForwardNorm, out), `${prefix}.gamma_2`));
      return config.tNormOut ? this.tokenGroupNorm(`${prefix}.norm_out`, out) : out;
    }
    // Post-norm (t_norm_first=False): the cross layer's norm3 exists but PyTorch never applies it.
    if (cross) this.weights.skip(`${prefix}.norm3.`);
    const key = cross ? keys : x;
    const out = this.transformerNorm(`${prefix}.norm1`, ops.add(x, this.attention(attention, x, key, `${prefix}.gamma_1`)));
    return this.transformerNorm(`${prefix}.norm2`, ops.add(out, this.feedForward(prefix, out, `${prefix}.gamma_2`)));
  }

  /** Linear → GELU/ReLU → Linear, with the LayerScale folded into the second linear. */
  private feedForward(prefix: string, x: Value, layerScale: string): Value {
    const { config, ops, weights } = this;
    const hidden = ops.linear(x, weights.value(`${prefix}.linear1.weight`), weights.value(`${prefix}.linear1.bias`));
    const activated = config.tGelu ? ops.gelu(hidden) : ops.relu(hidden);
    const [w, b] = this.scaledLinear(`${prefix}.linear2`, layerScale);
    return ops.linear(activated, w, b);
  }

  /** A Linear's weight and bias with an optional LayerScale (per output channel) folded in. */
  private scaledLinear(prefix: string, layerScale: string): [Value, Value] {
    const { config, weights } = this;
    const weight = weights.tensor(`${prefix}.weight`);
    const bias = weights.data(`${prefix}.bias`);
    if (!config.tLayerScale) return [weights.value(`${prefix}.weight`), weights.value(`${prefix}.bias`)];
    const scale = weights.data(`${layerScale}.scale`);
    const [rows, cols] = weight.shape as [number, number];
    const w = new Float32Array(rows * cols);
    const b = new Float32Array(rows);
    for (let r = 0; r < rows; r++) {
      const s = scale[r] as number;
      b[r] = s * (bias[r] as number);
      for (let c = 0; c < cols; c++) w[r * cols + c] = s * (weight.data[r * cols + c] as number);
    }
    return [weights.constant(w, [rows, cols], `${prefix}.weight`), weights.constant(b, [rows], `${prefix}.bias`)];
  }

  /** nn.MultiheadAttention (in_proj + attention + out_proj), LayerScale folded into out_proj. */
  private attention(prefix: string, query: Value, key: Value, layerScale: string): Value {
    const { config, ops, weights } = this;
    const inWeight = weights.tensor(`${prefix}.in_proj_weight`);
    const inBias = weights.data(`${prefix}.in_proj_bias`);
    const dim = inWeight.shape[1] as number;
    const part = (i: number): Value =>
      weights.constant(inWeight.data.subarray(i * dim * dim, (i + 1) * dim * dim), [dim, dim], `${prefix}.in_proj_${'qkv'[i]}`);
    const q = ops.linear(query, part(0));
    const k = ops.linear(key, part(1));
    const v = ops.linear(key, part(2));
    const attended = this.fusedAttention(q, k, v, inBias, config.tHeads);
    const [w, b] = this.scaledLinear(`${prefix}.out_proj`, layerScale);
    return ops.linear(attended, w, b);
  }

  /** ORT's com.microsoft.MultiHeadAttention (flash attention on CPU), biases added inside. */
  private fusedAttention(q: Value, k: Value, v: Value, bias: Float32Array, heads: number): Value {
    const { ops, graph } = this;
    const [queries, dim] = q.shape as [number, number];
    const keys = k.shape[0] as number;
    const out = graph.op(
      'MultiHeadAttention',
      [ops.reshape(q, [1, queries, dim]), ops.reshape(k, [1, keys, dim]), ops.reshape(v, [1, keys, dim]), graph.constant(bias, [3 * dim], 'qkv_bias')],
      [1, queries, dim],
      { num_heads: attr.int(heads) },
      MS_DOMAIN,
    );
    return ops.reshape(out, [queries, dim]);
  }
}
