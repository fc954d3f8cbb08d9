/**
 * Demucs v3 (HDemucs, demucs/hdemucs.py) and Demucs v2's time-domain Demucs (demucs/demucs.py)
 * as chains of ONNX graphs (onnx/stages.ts), one chain per input length: neither pads a chunk to a
 * fixed training length, so the engine builds a chain for each window length it meets
 * (segment-model-v3.ts).
 *
 * Each encoder and decoder layer (of each branch) is a stage of its own, as HTDemucs' are: in one
 * graph ONNX Runtime's planner gives a later tensor the dead buffer of an earlier one of the same
 * size, which in a U-Net keeps the encoder's intermediates allocated until the mirrored decoder
 * layer; separate sessions free a layer's working memory when it returns. Skip connections travel
 * between stages as named tensors.
 *
 * HDemucs: inputs `spec` [1, Cz, F, T] (the normalized CaC spectrogram, or magnitudes without
 * CaC) and `wave` [1, 2, L] (the normalized waveform); outputs `spec_out` [1, S·Cz, F, T] and
 * `wave_out` [1, S·2, L], still normalized. STFT, iSTFT and the (de)normalizations run outside.
 * Demucs: input `wave` [1, 2, W] (normalized by the mono mix), output `wave_out` [1, S·2, W].
 */
import { StemsplitError } from '../errors.js';
import type { CheckpointTensor } from '../torch/checkpoint.js';
import { StateReader } from '../torch/state-reader.js';
import { OnnxGraph, attr, type Value } from '../onnx/graph.js';
import { inverseStd, preciseMoments } from '../onnx/moments.js';
import { Ops, onnxLstmWeights, type OpsOptions } from '../onnx/ops.js';
import type { GraphStage } from '../onnx/stages.js';
import type { DConvConfig, DemucsConfig, HDemucsConfig } from './v3-config.js';

export const V3_INPUTS = { spec: 'spec', wave: 'wave' } as const;
export const V3_OUTPUTS = { spec: 'spec_out', wave: 'wave_out' } as const;

const GROUP_NORM_EPS = 1e-5;
/** BLSTM(max_steps=200): longer inputs run in frames of 200 steps with stride 100. */
const LSTM_MAX_STEPS = 200;
/** LocalState's heads and decay controls (DConv's defaults). */
const ATTENTION_HEADS = 4;
const ATTENTION_DECAYS = 4;
/** Queries per block of LocalState's scores, for inputs longer than two blocks. */
const ATTENTION_QUERY_BLOCK = 1024;
/** Steps per band of a long DConv layer's widest tensors (see V3Builder.bandedTail). */
const DCONV_STEPS = 32768;
/** Frequency rows per run of an HDemucs frequency layer's DConv branch (see HDemucsBuilder.dconv). */
const DCONV_ROWS = 64;
/** julius.resample_frac's defaults, as Demucs calls it. */
const RESAMPLE_ZEROS = 24;
const RESAMPLE_ROLLOFF = 0.945;

/** Layers, DConv branches, norms: what both classes are made of, built as a chain of stages. */
class V3Builder {
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
    const shares = graph.constant(Float32Array.from(bands, ([from, to]) => ((to - from) * count) / steps), [1, count], 'band_shares');
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
      input = ops.concat(Array.from({ length: frames }, (_, k) => ops.slice(full, 2, k * stride, k * stride + width)), 0);
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
    const projected = ops.linear(ops.reshape(sequence, [width * rows, 2 * channels]), this.value(`${prefix}.linear.weight`), this.value(`${prefix}.linear.bias`));
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
    const ramp = graph.constant(Float32Array.from({ length: steps }, (_, t) => t), [steps], 'ramp');
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
      let dots = ops.mul(ops.matmul(keysT, width === steps ? queries : ops.slice(queries, 2, from, to), { fixed: true }), graph.scalar(1 / Math.sqrt(per), 'inv_sqrt'));
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

// ---- HDemucs ------------------------------------------------------------------------------

interface HLayer {
  readonly index: number;
  readonly freq: boolean;
  readonly kernel: number;
  readonly stride: number;
  readonly pad: number;
  readonly norm: boolean;
  /** Only the first convolution (the time layer that feeds the merged layer). */
  readonly empty: boolean;
  readonly dconv: boolean;
  /** MultiWrap's band ratios, for the outer frequency layers (empty: one band). */
  readonly bands: readonly number[];
}

/** The structure HDemucs.__init__ builds, layer by layer. */
function hdemucsLayers(config: HDemucsConfig): { encoder: HLayer[]; tencoder: HLayer[] } {
  const encoder: HLayer[] = [];
  const tencoder: HLayer[] = [];
  let freqs = config.nfft / 2;
  for (let index = 0; index < config.depth; index++) {
    const freq = freqs > 1;
    let kernel = freq ? config.kernelSize : config.timeStride * 2;
    const stride = freq ? config.stride : config.timeStride;
    let pad = Math.floor(kernel / 4);
    const lastFreq = freq && freqs <= config.kernelSize;
    if (lastFreq) {
      kernel = freqs;
      pad = 0;
    }
    const norm = index >= config.normStarts;
    const bands = config.multiFreqs.length > 0 && index < config.multiFreqsDepth ? config.multiFreqs : [];
    if (bands.length > 0 && norm) throw new StemsplitError('MODEL_INVALID', 'unsupported HDemucs option multi_freqs on a normalized layer');
    encoder.push({ index, freq, kernel, stride, pad, norm, empty: false, dconv: true, bands });
    if (freq) {
      const tpad = Math.floor(config.kernelSize / 4);
      tencoder.push({ index, freq: false, kernel: config.kernelSize, stride: config.stride, pad: tpad, norm, empty: lastFreq, dconv: true, bands: [] });
    }
    if (freq) freqs = freqs <= config.kernelSize ? 1 : Math.floor(freqs / config.stride);
  }
  return { encoder, tencoder };
}

class HDemucsBuilder {
  private readonly b: V3Builder;

  constructor(
    private readonly config: HDemucsConfig,
    state: ReadonlyMap<string, CheckpointTensor>,
    file: string,
    options: OpsOptions,
  ) {
    this.b = new V3Builder('hdemucs', state, file, options);
  }

  build(frames: number, length: number): GraphStage[] {
    const { config, b } = this;
    const freqs = config.nfft / 2;
    const channels = config.cac ? 2 * config.audioChannels : config.audioChannels;
    let x: Value = { name: V3_INPUTS.spec, shape: [1, channels, freqs, frames] };
    let xt: Value = { name: V3_INPUTS.wave, shape: [1, config.audioChannels, length] };
    const { encoder, tencoder } = hdemucsLayers(config);
    const saved: Value[] = [];
    const savedT: Value[] = [];
    const lengths: number[] = [];
    const lengthsT: number[] = [];
    for (const [index, layer] of encoder.entries()) {
      lengths.push(x.shape[x.shape.length - 1] as number);
      let inject: Value | undefined;
      const tlayer = tencoder[index];
      if (tlayer !== undefined) {
        lengthsT.push(xt.shape[2] as number);
        const p = `tencoder.${index}`;
        [xt] = b.stage(p, [xt], (input) => [this.encode(p, tlayer, input as Value, undefined)]) as [Value];
        if (!tlayer.empty) savedT.push(xt);
        else inject = xt;
      }
      const p = `encoder.${index}`;
      [x] = b.stage(p, inject === undefined ? [x] : [x, inject], (input, injected) => {
        const y = layer.bands.length > 0 ? this.encodeBands(p, layer, input as Value) : this.encode(p, layer, input as Value, injected);
        return [index === 0 && config.freqEmb > 0 ? this.addFrequencyEmbedding(y) : y];
      }) as [Value];
      saved.push(x);
    }

    let y: Value | undefined;
    let yt: Value | undefined;
    const offset = config.depth - tencoder.length;
    for (let step = 0; step < config.depth; step++) {
      const index = config.depth - 1 - step;
      const layer = encoder[index] as HLayer;
      const skip = saved.pop() as Value;
      const frameCount = lengths.pop() as number;
      const last = index === 0;
      const tlayer = step >= offset ? (tencoder[index] as HLayer) : undefined;
      // The merged time layer's decoder reads the input of this layer's transposed convolution.
      const givesPre = tlayer?.empty === true;
      const p = `decoder.${step}`;
      const below = y;
      const outs = b.stage(p, below === undefined ? [skip] : [below, skip], (...values) => {
        const skipValue = values[values.length - 1] as Value;
        const input = below === undefined ? b.ops.mul(skipValue, b.graph.scalar(0, 'zero')) : (values[0] as Value);
        if (layer.bands.length > 0) {
          const out = this.decodeBands(p, layer, input, skipValue, last);
          return givesPre ? [out, out] : [out];
        }
        if (!givesPre && this.rowBanded(p, layer, input)) return [this.decodeRows(p, layer, input, skipValue, last)];
        const [out, pre] = this.decode(p, layer, input, skipValue, frameCount, last);
        return givesPre ? [out, pre] : [out];
      }, last ? [V3_OUTPUTS.spec] : undefined);
      y = outs[0] as Value;
      if (tlayer !== undefined) {
        const lengthT = lengthsT.pop() as number;
        const tp = `tdecoder.${step - offset}`;
        const names = last ? [V3_OUTPUTS.wave] : undefined;
        if (tlayer.empty) {
          [yt] = b.stage(tp, [outs[1] as Value], (pre) => {
            const flat = b.ops.reshape(pre as Value, [1, (pre as Value).shape[1] as number, (pre as Value).shape[3] as number]);
            return [this.decode(tp, tlayer, flat, undefined, lengthT, last)[0]];
          }, names) as [Value];
        } else {
          [yt] = b.stage(tp, [yt as Value, savedT.pop() as Value], (input, skipT) => [this.decode(tp, tlayer, input as Value, skipT, lengthT, last)[0]], names) as [Value];
        }
      }
    }
    b.state.refuseUnused('HDemucs');
    return b.stages;
  }

  /** HEncLayer.forward. */
  private encode(p: string, layer: HLayer, input: Value, inject: Value | undefined): Value {
    const { b, config } = this;
    const { ops } = b;
    let x = input;
    if (!layer.freq && x.shape.length === 4) x = ops.reshape(x, [1, (x.shape[1] as number) * (x.shape[2] as number), x.shape[3] as number]);
    let y: Value;
    if (layer.freq) {
      y = b.conv(`${p}.conv`, x, { strides: [layer.stride, 1], pads: [layer.pad, 0, layer.pad, 0] });
    } else {
      const length = x.shape[2] as number;
      const extra = length % layer.stride === 0 ? 0 : layer.stride - (length % layer.stride);
      y = b.conv(`${p}.conv`, x, { strides: [layer.stride], pads: [layer.pad, layer.pad + extra] });
    }
    if (layer.empty) return y;
    if (inject !== undefined) y = ops.add(y, y.shape.length === 4 ? ops.reshape(inject, [1, inject.shape[1] as number, 1, inject.shape[2] as number]) : inject);
    y = ops.gelu(this.norm(`${p}.norm1`, layer, y));
    const rewrite = (value: Value): Value => ops.glu(this.norm(`${p}.norm2`, layer, b.sameConv(`${p}.rewrite`, value)), 1);
    // Without a norm the rewrite (a 1×1 convolution to twice the channels, then GLU) treats every row apart: it runs in the DConv's row bands.
    const rowwise = config.rewrite && y.shape.length === 4 && !layer.norm && b.state.get(`${p}.rewrite.weight`).shape.slice(2).every((k) => k === 1);
    if (config.dconv.mode & 1) {
      y = this.dconv(`${p}.dconv`, y, layer, rowwise ? rewrite : undefined);
      if (rowwise) return y;
    }
    return config.rewrite ? rewrite(y) : y;
  }

  /** HDecLayer.forward: returns the output and the input of its transposed convolution. */
  private decode(p: string, layer: HLayer, input: Value, skip: Value | undefined, length: number, last: boolean): [Value, Value] {
    const { b, config } = this;
    const { ops } = b;
    let x = input;
    // The merged time layer's output enters the last frequency layer as its one frequency row.
    if (layer.freq && x.shape.length === 3) x = ops.reshape(x, [1, x.shape[1] as number, 1, x.shape[2] as number]);
    let y = x;
    if (!layer.empty) {
      y = ops.add(x, skip as Value);
      if (config.rewrite) y = ops.glu(this.norm(`${p}.norm1`, layer, b.sameConv(`${p}.rewrite`, y)), 1);
      if (config.dconv.mode & 2) y = this.dconv(`${p}.dconv`, y, layer);
    }
    let z = this.norm(`${p}.norm2`, layer, b.convTranspose(`${p}.conv_tr`, y, layer.freq ? [layer.stride, 1] : [layer.stride]));
    if (layer.freq) {
      if (layer.pad > 0) z = ops.slice(z, 2, layer.pad, (z.shape[2] as number) - layer.pad);
    } else {
      z = ops.slice(z, 2, layer.pad, layer.pad + length);
    }
    return [last ? z : ops.gelu(z), y];
  }

  /** Whether a decoder layer can run a band of rows at a time (decodeRows): a wide frequency layer without norms or DConv. */
  private rowBanded(p: string, layer: HLayer, x: Value): boolean {
    const { config, b } = this;
    if (!layer.freq || x.shape.length !== 4 || (x.shape[2] as number) <= DCONV_ROWS || layer.norm || !config.rewrite || config.dconv.mode & 2) return false;
    const kernel = b.state.get(`${p}.rewrite.weight`).shape.slice(2);
    return layer.kernel >= layer.stride && layer.kernel - layer.stride <= layer.stride && kernel.length === 2 && kernel.every((k) => k % 2 === 1);
  }

  /**
   * HDecLayer.forward on a wide frequency layer, a band of at most DCONV_ROWS rows at a time: the
   * rewrite's convolution reads its rows of context above and below (zeros at the edges, as its
   * padding), GLU treats rows apart, and the transposed convolution's outputs overlap by
   * kernel − stride rows, added across bands with its bias once, as decodeBands does for MultiWrap.
   * Each band waits for the one before (`Ops.after`). The layer's widest tensors (the rewrite's
   * twice-the-channels output, the transposed convolution's) then never exist whole.
   */
  private decodeRows(p: string, layer: HLayer, x: Value, skip: Value, last: boolean): Value {
    const { ops, graph } = this.b;
    const rows = x.shape[2] as number;
    const size = Math.ceil(rows / Math.ceil(rows / DCONV_ROWS));
    const [kernelRows, kernelFrames] = this.b.state.get(`${p}.rewrite.weight`).shape.slice(2) as [number, number];
    const halo = (kernelRows - 1) / 2;
    const framePad = (kernelFrames - 1) / 2;
    const rewriteWeight = this.b.value(`${p}.rewrite.weight`);
    const rewriteBias = this.b.value(`${p}.rewrite.bias`);
    const weight = this.b.value(`${p}.conv_tr.weight`);
    const bias = this.b.state.get(`${p}.conv_tr.bias`).data;
    const overlap = layer.kernel - layer.stride;
    const pieces: Value[] = [];
    let carry: Value | undefined;
    for (let from = 0; from < rows; from += size) {
      const to = Math.min(rows, from + size);
      const [low, high] = [Math.max(0, from - halo), Math.min(rows, to + halo)];
      const sum = ops.add(ops.slice(x, 2, low, high), ops.slice(skip, 2, low, high));
      const previous = pieces[pieces.length - 1];
      const pads = [halo - (from - low), framePad, halo - (high - to), framePad];
      const y = ops.glu(ops.conv(previous === undefined ? sum : ops.after(sum, previous), rewriteWeight, rewriteBias, { pads }), 1);
      const z = ops.convTranspose(y, weight, undefined, [layer.stride, 1]);
      const own = layer.stride * (to - from);
      const head = ops.slice(z, 2, 0, own);
      pieces.push(carry === undefined ? head : ops.concat([ops.add(ops.slice(head, 2, 0, overlap), carry), ops.slice(head, 2, overlap, own)], 2));
      carry = overlap > 0 ? ops.slice(z, 2, own, own + overlap) : undefined;
    }
    if (carry !== undefined) pieces.push(carry);
    let z = ops.add(ops.concat(pieces, 2), graph.constant(bias, [1, bias.length, 1, 1], 'conv_tr_bias'));
    if (layer.pad > 0) z = ops.slice(z, 2, layer.pad, (z.shape[2] as number) - layer.pad);
    return last ? z : ops.gelu(z);
  }

  /** MultiWrap around an HEncLayer: each band of frequencies through its own copy of the layer, with edges padded as the whole layer would. */
  private encodeBands(p: string, layer: HLayer, x: Value): Value {
    const { ops } = this.b;
    const rows = x.shape[2] as number;
    const ratios = [...layer.bands, 1];
    const outs: Value[] = [];
    let start = 0;
    for (const [k, ratio] of ratios.entries()) {
      let limit: number;
      if (ratio === 1) {
        limit = rows;
      } else {
        limit = Math.trunc(pyRound(rows * ratio));
        let le = limit - start;
        if (start === 0) le += layer.pad;
        const frames = pyRound((le - layer.kernel) / layer.stride + 1);
        limit = start + (frames - 1) * layer.stride + layer.kernel;
        if (start === 0) limit -= layer.pad;
      }
      const band = ops.slice(x, 2, start, limit);
      const bandLayer = { ...layer, pad: 0, bands: [] };
      const padded = this.padRows(band, start === 0 ? layer.pad : 0, ratio === 1 ? layer.pad : 0);
      outs.push(this.encode(`${p}.layers.${k}`, bandLayer, padded, undefined));
      start = limit - layer.kernel + layer.stride;
    }
    return ops.concat(outs, 2);
  }

  /** MultiWrap around an HDecLayer: bands decoded apart, their overlapping rows added (one bias counted once). */
  private decodeBands(p: string, layer: HLayer, x: Value, skip: Value, last: boolean): Value {
    const { b } = this;
    const { ops, graph } = b;
    const rows = x.shape[2] as number;
    const ratios = [...layer.bands, 1];
    const outs: Value[] = [];
    let start = 0;
    for (const [k, ratio] of ratios.entries()) {
      const limit = ratio === 1 ? rows : Math.trunc(pyRound(rows * ratio));
      const prefix = `${p}.layers.${k}`;
      const bias = b.state.get(`${prefix}.conv_tr.bias`).data;
      let [out] = this.decode(prefix, { ...layer, pad: 0 }, ops.slice(x, 2, start, limit), ops.slice(skip, 2, start, limit), 0, true);
      const height = out.shape[2] as number;
      if (outs.length > 0) {
        const previous = outs.pop() as Value;
        const kept = (previous.shape[2] as number) - layer.stride;
        const overlap = ops.sub(ops.slice(out, 2, 0, layer.stride), graph.constant(bias, [1, bias.length, 1, 1], 'band_bias'));
        outs.push(ops.concat([ops.slice(previous, 2, 0, kept), ops.add(ops.slice(previous, 2, kept, kept + layer.stride), overlap)], 2));
        out = ops.slice(out, 2, layer.stride, height);
      }
      if (ratio === 1) out = ops.slice(out, 2, 0, (out.shape[2] as number) - layer.stride / 2);
      if (start === 0) out = ops.slice(out, 2, layer.stride / 2, out.shape[2] as number);
      outs.push(out);
      start = limit;
    }
    const out = ops.concat(outs, 2);
    return last ? out : ops.gelu(out);
  }

  private padRows(x: Value, top: number, bottom: number): Value {
    const { ops, graph } = this.b;
    const parts: Value[] = [];
    const zeros = (rows: number): Value => {
      const shape = x.shape.map((d, i) => (i === 2 ? rows : d));
      return graph.constant(new Float32Array(shape.reduce((a, c) => a * c, 1)), shape, 'band_pad');
    };
    if (top > 0) parts.push(zeros(top));
    parts.push(x);
    if (bottom > 0) parts.push(zeros(bottom));
    return parts.length === 1 ? x : ops.concat(parts, 2);
  }

  private norm(prefix: string, layer: HLayer, x: Value): Value {
    return layer.norm ? this.b.groupNorm(prefix, x, this.config.normGroups) : x;
  }

  /**
   * The DConv branch; on the frequency branch it runs along time for every frequency row: [1, C, F, T] → [F, C, T]
   * and back. The rows are independent samples, so they run a band of at most DCONV_ROWS at a time: the branch's
   * working tensors (its GLU input has twice the layer's channels) stay a fraction of the layer's output.
   * `rowwise`, what follows and treats rows apart too, runs on each band before the bands are joined.
   */
  private dconv(prefix: string, x: Value, layer: HLayer, rowwise?: (band: Value) => Value): Value {
    const { b, config } = this;
    const { ops } = b;
    if (x.shape.length === 3) return b.dconv(prefix, x, config.dconv, layer.index);
    const [, channels, rows, frames] = x.shape as [number, number, number, number];
    // Bands of equal size (the planner reuses one band's buffers for the next), none of a single row,
    // each waiting for the one before (`Ops.after`), so ONNX Runtime cannot run them side by side.
    const size = Math.ceil(rows / Math.ceil(rows / DCONV_ROWS));
    const bands: Value[] = [];
    for (let from = 0; from < rows; from += size) {
      const count = Math.min(size, rows - from);
      const previous = bands[bands.length - 1];
      const slice = count === rows ? x : ops.slice(x, 2, from, from + count);
      const band = previous === undefined ? slice : ops.after(slice, previous);
      const flat = ops.reshape(ops.transpose(band, [0, 2, 1, 3]), [count, channels, frames]);
      const out = ops.transpose(ops.reshape(b.dconv(prefix, flat, config.dconv, layer.index), [1, count, channels, frames]), [0, 2, 1, 3]);
      bands.push(rowwise === undefined ? out : rowwise(out));
    }
    return bands.length === 1 ? (bands[0] as Value) : ops.concat(bands, 2);
  }

  private addFrequencyEmbedding(x: Value): Value {
    const { config, b } = this;
    const [, channels, freqs] = x.shape as [number, number, number, number];
    const table = b.state.get('freq_emb.embedding.weight').data; // [freqs, channels]
    const emb = new Float32Array(channels * freqs);
    for (let f = 0; f < freqs; f++) {
      for (let c = 0; c < channels; c++) {
        emb[c * freqs + f] = Math.fround(config.freqEmb * Math.fround((table[f * channels + c] as number) * config.embScale));
      }
    }
    return b.ops.add(x, b.graph.constant(emb, [1, channels, freqs, 1], 'freq_emb'));
  }
}

/** Python's round(): halves go to the even neighbour. */
function pyRound(value: number): number {
  const floor = Math.floor(value);
  const diff = value - floor;
  if (diff > 0.5) return floor + 1;
  if (diff < 0.5) return floor;
  return floor % 2 === 0 ? floor : floor + 1;
}

export function buildHDemucsStages(config: HDemucsConfig, state: ReadonlyMap<string, CheckpointTensor>, file: string, length: number, options: OpsOptions = {}): GraphStage[] {
  const frames = Math.ceil(length / (config.nfft / 4));
  return new HDemucsBuilder(config, state, file, options).build(frames, length);
}

// ---- Demucs (v2, time domain) ---------------------------------------------------------------

/** Demucs.valid_length: the nearest length at or above `length` every convolution divides exactly. */
export function demucsValidLength(config: DemucsConfig, chunk: number): number {
  let length = config.resample ? chunk * 2 : chunk;
  for (let i = 0; i < config.depth; i++) length = Math.max(1, Math.ceil((length - config.kernelSize) / config.stride) + 1);
  for (let i = 0; i < config.depth; i++) length = (length - 1) * config.stride + config.kernelSize;
  return config.resample ? Math.ceil(length / 2) : length;
}

export function buildDemucsStages(config: DemucsConfig, state: ReadonlyMap<string, CheckpointTensor>, file: string, length: number, options: OpsOptions = {}): GraphStage[] {
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
    [x] = b.stage(p, [x, saved.pop() as Value], (input, skip) => {
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
    }, step === config.depth - 1 ? [V3_OUTPUTS.wave] : undefined) as [Value];
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
  const padded = graph.op(
    'Pad',
    [rows, graph.ints([0, 0, width, 0, 0, width + from], 'pads')],
    [channels, 1, length + 2 * width + from],
    { mode: attr.string('edge') },
  );
  const phases = ops.conv(padded, graph.constant(kernels, [to, 1, taps], 'resample_kernel'), undefined, { strides: [from] }); // [C, to, n]
  const n = phases.shape[2] as number;
  const interleaved = ops.reshape(ops.transpose(phases, [0, 2, 1]), [1, channels, n * to]);
  return ops.slice(interleaved, 2, 0, Math.floor((to * length) / from));
}
