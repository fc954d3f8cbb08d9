/**
 * Demucs v3 (HDemucs, demucs/hdemucs.py) and Demucs v2's time-domain Demucs (demucs/demucs.py)
 * as ONNX graphs, one per input length: neither pads a chunk to a fixed training length, so the
 * engine builds a graph for each window length it meets (segment-model-v3.ts).
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
import { Ops, onnxLstmWeights, type OpsOptions } from '../onnx/ops.js';
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
/** julius.resample_frac's defaults, as Demucs calls it. */
const RESAMPLE_ZEROS = 24;
const RESAMPLE_ROLLOFF = 0.945;

/** Layers, DConv branches, norms: what both classes are made of. */
class V3Builder {
  readonly graph: OnnxGraph;
  readonly ops: Ops;
  readonly state: StateReader;

  constructor(name: string, state: ReadonlyMap<string, CheckpointTensor>, file: string, options: OpsOptions) {
    this.graph = new OnnxGraph(name);
    this.ops = new Ops(this.graph, options);
    this.state = new StateReader(state, file);
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
      h = this.conv(`${p}.${next++}`, h);
      h = this.ops.glu(this.groupNorm(`${p}.${next++}`, h, 1), 1);
      next++; // the GLU
      const scale = this.state.get(`${p}.${next}.scale`);
      h = this.ops.mul(h, this.graph.constant(scale.data, [scale.data.length, 1], `${p}.scale`));
      out = this.ops.add(out, h);
    }
    return out;
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
    const keyTimes = ops.reshape(ramp, [steps, 1]);
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

  build(frames: number, length: number): OnnxGraph {
    const { config, b } = this;
    const { graph, ops } = b;
    const freqs = config.nfft / 2;
    const channels = config.cac ? 2 * config.audioChannels : config.audioChannels;
    let x = graph.input(V3_INPUTS.spec, [1, channels, freqs, frames]);
    let xt = graph.input(V3_INPUTS.wave, [1, config.audioChannels, length]);
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
        xt = graph.scope(`tencoder.${index}`, () => this.encode(`tencoder.${index}`, tlayer, xt, undefined));
        if (!tlayer.empty) savedT.push(xt);
        else inject = xt;
      }
      const input = x;
      x = graph.scope(`encoder.${index}`, () =>
        layer.bands.length > 0 ? this.encodeBands(`encoder.${index}`, layer, input) : this.encode(`encoder.${index}`, layer, input, inject),
      );
      if (index === 0 && config.freqEmb > 0) x = this.addFrequencyEmbedding(x);
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
      const input = y ?? ops.mul(skip, graph.scalar(0, 'zero'));
      let pre: Value;
      if (layer.bands.length > 0) {
        y = graph.scope(`decoder.${step}`, () => this.decodeBands(`decoder.${step}`, layer, input, skip, last));
        pre = y;
      } else {
        [y, pre] = graph.scope(`decoder.${step}`, () => this.decode(`decoder.${step}`, layer, input, skip, frameCount, last));
      }
      if (step >= offset) {
        const tlayer = tencoder[index] as HLayer;
        const lengthT = lengthsT.pop() as number;
        const p = `tdecoder.${step - offset}`;
        if (tlayer.empty) {
          const flat = ops.reshape(pre, [1, pre.shape[1] as number, pre.shape[3] as number]);
          yt = graph.scope(p, () => this.decode(p, tlayer, flat, undefined, lengthT, last)[0]);
        } else {
          const input2 = yt as Value;
          yt = graph.scope(p, () => this.decode(p, tlayer, input2, savedT.pop() as Value, lengthT, last)[0]);
        }
      }
    }
    graph.output(y as Value, V3_OUTPUTS.spec);
    graph.output(yt as Value, V3_OUTPUTS.wave);
    b.state.refuseUnused('HDemucs');
    return graph;
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
    if (config.dconv.mode & 1) y = this.dconv(`${p}.dconv`, y, layer);
    if (!config.rewrite) return y;
    return ops.glu(this.norm(`${p}.norm2`, layer, b.sameConv(`${p}.rewrite`, y)), 1);
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

  /** The DConv branch; on the frequency branch it runs along time for every frequency row: [1, C, F, T] → [F, C, T] and back. */
  private dconv(prefix: string, x: Value, layer: HLayer): Value {
    const { b, config } = this;
    const { ops } = b;
    if (x.shape.length === 3) return b.dconv(prefix, x, config.dconv, layer.index);
    const [, channels, rows, frames] = x.shape as [number, number, number, number];
    const flat = ops.reshape(ops.transpose(x, [0, 2, 1, 3]), [rows, channels, frames]);
    const out = b.dconv(prefix, flat, config.dconv, layer.index);
    return ops.transpose(ops.reshape(out, [1, rows, channels, frames]), [0, 2, 1, 3]);
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

export function buildHDemucsGraph(config: HDemucsConfig, state: ReadonlyMap<string, CheckpointTensor>, file: string, length: number, options: OpsOptions = {}): OnnxGraph {
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

export function buildDemucsGraph(config: DemucsConfig, state: ReadonlyMap<string, CheckpointTensor>, file: string, length: number, options: OpsOptions = {}): OnnxGraph {
  if (demucsValidLength(config, length) !== length) throw new Error(`Demucs graph for ${length} samples, not a valid length`);
  const b = new V3Builder('demucs', state, file, options);
  const { graph, ops } = b;
  const input = graph.input(V3_INPUTS.wave, [1, config.audioChannels, length]);
  let x = config.resample ? resample(b, input, 1, 2) : input;
  const activation = (value: Value): Value => (config.glu ? ops.glu(value, 1) : ops.relu(value));
  const act2 = (value: Value): Value => (config.gelu ? ops.gelu(value) : ops.relu(value));
  const norm = (prefix: string, index: number, value: Value): Value => (index >= config.normStarts ? b.groupNorm(prefix, value, config.normGroups) : value);
  const saved: Value[] = [];
  for (let index = 0; index < config.depth; index++) {
    const p = `encoder.${index}`;
    const layerInput = x;
    x = graph.scope(p, () => {
      let y = act2(norm(`${p}.1`, index, b.conv(`${p}.0`, layerInput, { strides: [config.stride] })));
      let next = 3;
      if (config.dconv.mode & 1) y = b.dconv(`${p}.${next++}`, y, config.dconv, index);
      if (config.rewrite) y = activation(norm(`${p}.${next + 1}`, index, b.conv(`${p}.${next}`, y)));
      return y;
    });
    saved.push(x);
  }
  for (let step = 0; step < config.depth; step++) {
    const index = config.depth - 1 - step;
    const p = `decoder.${step}`;
    const skip = saved.pop() as Value;
    const trim = ((skip.shape[2] as number) - (x.shape[2] as number)) >> 1;
    const layerInput = ops.add(x, ops.slice(skip, 2, trim, trim + (x.shape[2] as number)));
    x = graph.scope(p, () => {
      let y = layerInput;
      let next = 0;
      if (config.rewrite) {
        y = activation(norm(`${p}.1`, index, b.sameConv(`${p}.0`, y)));
        next = 3;
      }
      if (config.dconv.mode & 2) y = b.dconv(`${p}.${next++}`, y, config.dconv, index);
      y = b.convTranspose(`${p}.${next}`, y, [config.stride]);
      return index > 0 ? act2(norm(`${p}.${next + 1}`, index, y)) : y;
    });
  }
  if (config.resample) x = resample(b, x, 2, 1);
  const trim = ((x.shape[2] as number) - length) >> 1;
  graph.output(ops.slice(x, 2, trim, trim + length), V3_OUTPUTS.wave);
  b.state.refuseUnused('Demucs');
  return graph;
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
