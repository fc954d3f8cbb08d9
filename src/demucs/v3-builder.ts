/**
 * What Demucs v3's and v2's graphs (v3-graph.ts, v2-graph.ts) are made of: layers, DConv
 * branches, norms, LSTMs and local attention, built as a chain of ONNX stages. Split from
 * v3-graph.ts.
 */
import type { CheckpointTensor } from '../torch/checkpoint.js';
import { StateReader } from '../torch/state-reader.js';
import { OnnxGraph, type Value } from '../onnx/graph.js';
import { inverseStd, preciseMoments } from '../onnx/moments.js';
import { onnxLstmWeights } from '../onnx/lstm-weights.js';
import { Ops, type OpsOptions } from '../onnx/ops.js';
import type { GraphStage } from '../onnx/stages.js';
import type { DConvConfig } from './v3-config.js';

export const GROUP_NORM_EPS = 1e-5;
/** BLSTM(max_steps=200): longer inputs run in frames of 200 steps with stride 100. */
export const LSTM_MAX_STEPS = 200;
/** LocalState's heads and decay controls (DConv's defaults). */
export const ATTENTION_HEADS = 4;
export const ATTENTION_DECAYS = 4;
/** Queries per block of LocalState's scores, for inputs longer than two blocks. */
export const ATTENTION_QUERY_BLOCK = 1024;
/** Steps per band of a long DConv layer's widest tensors (see V3Builder.bandedTail). */
export const DCONV_STEPS = 32768;
/** Frequency rows per run of an HDemucs frequency layer's DConv branch (see HDemucsBuilder.dconv). */
export const DCONV_ROWS = 64;

/** Layers, DConv branches, norms: what both classes are made of, built as a chain of stages. */
export class V3Builder {
  readonly state: StateReader;
  readonly stages: GraphStage[] = [];
  private current: { readonly graph: OnnxGraph; readonly ops: Ops } | undefined;

  constructor(
    private readonly name: string,
    state: ReadonlyMap<string, CheckpointTensor>,
    file: string,
    private readonly options: OpsOptions,
  ) {
    this.state = new StateReader(state, file);
  }

  /** The graph of the stage being built. */
  get graph(): OnnxGraph {
    if (this.current === undefined) throw new Error('no stage is being built');
    return this.current.graph;
  }

  get ops(): Ops {
    if (this.current === undefined) throw new Error('no stage is being built');
    return this.current.ops;
  }

  /**
   * Builds one stage: `body` maps its inputs (the feeds or earlier stages' outputs, by name; one
   * named twice is read once) to its outputs, named `names` or after the stage.
   */
  stage(name: string, inputs: readonly Value[], body: (...values: Value[]) => Value[], names?: readonly string[]): Value[] {
    const graph = new OnnxGraph(`${this.name}_${name}`);
    this.current = { graph, ops: new Ops(graph, this.options) };
    const locals = new Map<string, Value>();
    for (const input of inputs) if (!locals.has(input.name)) locals.set(input.name, graph.input(input.name, input.shape));
    const results = graph.scope(name, () => body(...inputs.map((input) => locals.get(input.name) as Value)));
    const outputs = results.map((value, k) => graph.output(value, names?.[k] ?? (k === 0 ? name : `${name}.${k}`)));
    this.current = undefined;
    const [output, ...extra] = outputs.map((value) => value.name);
    this.stages.push({ name, graph, inputs: [...locals.keys()], output: output as string, ...(extra.length > 0 ? { extraOutputs: extra } : {}) });
    return outputs;
  }

  value(name: string): Value {
    const tensor = this.state.get(name);
    return this.graph.constant(tensor.data, tensor.shape, name);
  }

  has(name: string): boolean {
    return this.state.has(name);
  }

  /** A Conv1d/Conv2d with its bias; `pads` as ONNX orders them. */
  conv(prefix: string, x: Value, options: { strides?: number[]; pads?: number[]; dilations?: number[] } = {}): Value {
    return this.ops.conv(x, this.value(`${prefix}.weight`), this.value(`${prefix}.bias`), options);
  }

  /** A convolution padded "same" on every spatial axis (odd kernels: context convs). */
  sameConv(prefix: string, x: Value): Value {
    const kernel = this.state.get(`${prefix}.weight`).shape.slice(2);
    const pads = kernel.map((k) => (k - 1) / 2);
    return this.conv(prefix, x, { pads: [...pads, ...pads] });
  }

  convTranspose(prefix: string, x: Value, strides: number[]): Value {
    return this.ops.convTranspose(x, this.value(`${prefix}.weight`), this.value(`${prefix}.bias`), strides);
  }

  groupNorm(prefix: string, x: Value, groups: number): Value {
    return this.ops.groupNorm(x, groups, this.state.get(`${prefix}.weight`).data, this.state.get(`${prefix}.bias`).data, GROUP_NORM_EPS);
  }

  /** DConv (demucs/demucs.py) over x [N, C, T]: residual layers of dilated conv, norm, GELU, [BiLSTM], [LocalState], 1×1 conv, norm, GLU, LayerScale. */
  dconv(prefix: string, x: Value, config: DConvConfig, layer: number): Value {
    const lstm = layer >= config.lstmFrom;
    const attn = layer >= config.attnFrom;
    const dilate = config.depth > 0;
    let out = x;
    for (let d = 0; d < Math.abs(config.depth); d++) {
      const p = `${prefix}.layers.${d}`;
      const dilation = dilate ? 2 ** d : 1;
      let h = this.conv(`${p}.0`, out, { dilations: [dilation], pads: [dilation, dilation] });
      h = this.ops.gelu(this.groupNorm(`${p}.1`, h, 1));
      let next = 3;
      if (lstm) h = this.blstm(`${p}.${next++}`, h);
      if (attn) h = this.localState(`${p}.${next++}`, h);
      const [convPrefix, normPrefix, scalePrefix] = [`${p}.${next}`, `${p}.${next + 1}`, `${p}.${next + 3}`];
      const scale = this.state.get(`${scalePrefix}.scale`);
      const layerScale = this.graph.constant(scale.data, [scale.data.length, 1], `${p}.scale`);
      const steps = h.shape[2] as number;
      if (h.shape[0] === 1 && steps > DCONV_STEPS && this.state.get(`${convPrefix}.weight`).shape[2] === 1) {
        out = this.bandedTail(convPrefix, normPrefix, layerScale, out, h);
        continue;
      }
      h = this.ops.glu(this.groupNorm(normPrefix, this.conv(convPrefix, h), 1), 1);
      out = this.ops.add(out, this.ops.mul(h, layerScale));
    }
    return out;
  }

  /**
   * x + scale·GLU(GroupNorm(1)(conv1×1(h))), the end of a DConv layer, over bands of at most
   * DCONV_STEPS steps: the convolution's output (twice the layer's channels) never exists whole.
   * A first pass over the bands takes each band's mean and variance (precisely: onnx/moments.ts),
   * combined exactly into the whole tensor's (Chan et al.'s pairwise update);
   * a second convolves each band again and normalizes it. Each band waits for the one before
   * (`Ops.after`), so ONNX Runtime cannot run them side by side.
   */
  private bandedTail(convPrefix: string, normPrefix: string, layerScale: Value, x: Value, h: Value): Value {
    const { ops, graph } = this;
    const [, , steps] = h.shape as [number, number, number];
    const weight = this.value(`${convPrefix}.weight`);
    const bias = this.value(`${convPrefix}.bias`);
    const channels = weight.shape[0] as number;
    const count = Math.ceil(steps / DCONV_STEPS);
    const size = Math.ceil(steps / count);
    const bands = Array.from({ length: count }, (_, k) => [k * size, Math.min(steps, (k + 1) * size)] as const);
    const means: Value[] = [];
    const variances: Value[] = [];
    let previous: Value | undefined;
    for (const [from, to] of bands) {
      const band = ops.slice(h, 2, from, to);
      const moments = preciseMoments(ops, ops.conv(previous === undefined ? band : ops.after(band, previous), weight, bias), 0);
      means.push(ops.add(moments.mean, moments.residual));
      variances.push(moments.variance);
      previous = moments.variance;
    }
    // Weighted by each band's share of the steps: E over bands of the band means, then of v + (m − μ)².
    const shares = graph.constant(
      Float32Array.from(bands, ([from, to]) => ((to - from) * count) / steps),
      [1, count],
      'band_shares',
    );
    const bandMeans = ops.concat(means, 1);
    const bandMean = ops.reduceMean(ops.mul(bandMeans, shares), 1);
    const deviation = ops.sub(bandMeans, bandMean);
    const variance = ops.reduceMean(ops.mul(ops.add(ops.concat(variances, 1), ops.mul(deviation, deviation)), shares), 1);
    const invStd = ops.reshape(inverseStd(ops, variance, GROUP_NORM_EPS), [1, 1, 1]);
    const gamma = this.state.get(`${normPrefix}.weight`).data;
    const beta = this.state.get(`${normPrefix}.bias`).data;
    const scale = ops.mul(graph.constant(gamma, [1, channels, 1], 'gn_gamma'), invStd);
    const shift = ops.sub(graph.constant(beta, [1, channels, 1], 'gn_beta'), ops.mul(ops.reshape(bandMean, [1, 1, 1]), scale));
    const outs: Value[] = [];
    previous = scale;
    for (const [from, to] of bands) {
      const y = ops.conv(ops.after(ops.slice(h, 2, from, to), previous), weight, bias);
      const normalized = ops.glu(ops.add(ops.mul(y, scale), shift), 1);
      previous = ops.add(ops.slice(x, 2, from, to), ops.mul(normalized, layerScale));
      outs.push(previous);
    }
    return ops.concat(outs, 2);
  }

  /**
   * BLSTM(dim, layers=2, max_steps=200, skip=True) over x [N, C, T]. Longer than 200 steps, it
   * runs on frames of 200 with stride 100 (zero padded at the end) and keeps each frame's middle.
   */
  private blstm(prefix: string, x: Value): Value {
    const { ops } = this;
    const [batch, channels, steps] = x.shape as [number, number, number];
    const framed = steps > LSTM_MAX_STEPS;
    const width = framed ? LSTM_MAX_STEPS : steps;
    const stride = LSTM_MAX_STEPS / 2;
    const frames = framed ? Math.ceil(steps / stride) : 1;
    let input = x;
    if (framed) {
      const padded = (frames - 1) * stride + width;
      const zeros = this.graph.constant(new Float32Array(batch * channels * (padded - steps)), [batch, channels, padded - steps], 'lstm_pad');
      const full = ops.concat([x, zeros], 2);
      input = ops.concat(
        Array.from({ length: frames }, (_, k) => ops.slice(full, 2, k * stride, k * stride + width)),
        0,
      );
    }
    const rows = batch * frames;
    let sequence = ops.transpose(input, [2, 0, 1]); // [width, rows, C]
    for (let layer = 0; layer < 2; layer++) {
      const direction = (suffix: string) => ({
        weightIh: this.state.get(`${prefix}.lstm.weight_ih_l${layer}${suffix}`).data,
        weightHh: this.state.get(`${prefix}.lstm.weight_hh_l${layer}${suffix}`).data,
        biasIh: this.state.get(`${prefix}.lstm.bias_ih_l${layer}${suffix}`).data,
        biasHh: this.state.get(`${prefix}.lstm.bias_hh_l${layer}${suffix}`).data,
      });
      const out = ops.lstm(sequence, onnxLstmWeights([direction(''), direction('_reverse')], channels)); // [width, 2, rows, C]
      sequence = ops.reshape(ops.transpose(out, [0, 2, 1, 3]), [width, rows, 2 * channels]);
    }
    const projected = ops.linear(
      ops.reshape(sequence, [width * rows, 2 * channels]),
      this.value(`${prefix}.linear.weight`),
      this.value(`${prefix}.linear.bias`),
    );
    let y = ops.transpose(ops.reshape(projected, [width, rows, channels]), [1, 2, 0]); // [rows, C, width]
    if (framed) {
      const limit = stride / 2;
      const parts = Array.from({ length: frames }, (_, k) => {
        const frame = ops.slice(y, 0, k * batch, (k + 1) * batch);
        const from = k === 0 ? 0 : limit;
        const to = k === frames - 1 ? width : width - limit;
        return ops.slice(frame, 2, from, to);
      });
      y = ops.slice(ops.concat(parts, 2), 2, 0, steps);
    }
    return ops.add(y, x);
  }

  /**
   * LocalState (demucs/demucs.py): attention over time with a learned decay penalty, no self
   * reference, plus the input. The softmax runs over keys for each query on its own, so long
   * inputs take their queries in blocks: the [keys, queries] scores never exist for all queries
   * at once (at Demucs' layer 4 on a 112 s window they would be 4 × 9.6k² floats, 1.5 GB).
   */
  private localState(prefix: string, x: Value): Value {
    const { ops, graph } = this;
    const [batch, channels, steps] = x.shape as [number, number, number];
    const heads = ATTENTION_HEADS;
    const per = channels / heads;
    const rows = batch * heads;
    const split = (value: Value, size: number): Value => ops.reshape(value, [rows, size, steps]);
    const queries = split(this.conv(`${prefix}.query`, x), per);
    const keysT = ops.transpose(split(this.conv(`${prefix}.key`, x), per), [0, 2, 1]); // [rows, T, per]
    const content = split(this.conv(`${prefix}.content`, x), per);
    // Σ_f −(f+1)·|t − s|/√ndecay · sigmoid(q_f[s])/2 = |t − s| · g[s]; the mean over f of
    // ndecay·coefficient_f·decay_f is the sum over f of coefficient_f·decay_f.
    const decays = ops.mul(ops.sigmoid(split(this.conv(`${prefix}.query_decay`, x), ATTENTION_DECAYS)), graph.scalar(0.5, 'half'));
    const coefficients = Float32Array.from({ length: ATTENTION_DECAYS }, (_, f) => (-(f + 1) / Math.sqrt(ATTENTION_DECAYS)) * ATTENTION_DECAYS);
    const g = ops.reduceMean(ops.mul(decays, graph.constant(coefficients, [1, ATTENTION_DECAYS, 1], 'decay_coefficients')), 1); // [rows, 1, T]
    const ramp = graph.constant(
      Float32Array.from({ length: steps }, (_, t) => t),
      [steps],
      'ramp',
    );
    // After g, a value of the run: otherwise ONNX Runtime folds the |t − s| and self masks below, which
    // depend on constants only, into initializers of [keys, queries] per block (about 260 MB at a
    // v2 Demucs' layer 4 on a 60 s window), kept with the session.
    const keyTimes = ops.after(ops.reshape(ramp, [steps, 1]), g);
    const block = steps > 2 * ATTENTION_QUERY_BLOCK ? ATTENTION_QUERY_BLOCK : steps;
    const results: Value[] = [];
    for (let from = 0; from < steps; from += block) {
      const to = Math.min(steps, from + block);
      const width = to - from;
      // dots[t, s] = keys[:, t] · queries[:, s] / √per (t: keys, s: this block's queries).
      let dots = ops.mul(
        ops.matmul(keysT, width === steps ? queries : ops.slice(queries, 2, from, to), { fixed: true }),
        graph.scalar(1 / Math.sqrt(per), 'inv_sqrt'),
      );
      const queryTimes = ops.reshape(width === steps ? ramp : ops.slice(ramp, 0, from, to), [1, width]);
      const distance = graph.op('Abs', [ops.sub(keyTimes, queryTimes)], [steps, width]);
      dots = ops.add(dots, ops.mul(distance, width === steps ? g : ops.slice(g, 2, from, to)));
      // masked_fill(eye, -100): no query attends to itself.
      const self = graph.op('Equal', [distance, graph.scalar(0, 'zero')], [steps, width]);
      dots = graph.op('Where', [self, graph.scalar(-100, 'self_penalty'), dots], dots.shape);
      results.push(ops.matmul(content, ops.softmax(dots, 1), { fixed: true })); // [rows, per, width]
    }
    const result = ops.reshape(results.length === 1 ? (results[0] as Value) : ops.concat(results, 2), [batch, channels, steps]);
    return ops.add(x, this.conv(`${prefix}.proj`, result));
  }
}
