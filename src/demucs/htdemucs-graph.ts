/**
 * HTDemucs (demucs/htdemucs.py) as an ONNX graph, for one fixed segment length.
 *
 * The network between the spectrogram and its inverse: it takes the normalized CaC
 * spectrogram and the normalized waveform and returns both branches' outputs, still
 * normalized. STFT, iSTFT and the (de)normalization run outside (segment-model.ts, stft.ts),
 * where they are cheap and exact.
 *
 *   inputs:  spec [1, 2·channels, freqs, frames], wave [1, channels, length]
 *   outputs: spec_out [1, P, sources·2·channels, freqs / P, frames], wave_out [1, P, sources·channels, rows]
 *
 * The outputs come in P phases (P = the last decoder's stride, or 1): frequency f is phase
 * f mod P, row ⌊f / P⌋, and sample j likewise (rows·P ≥ length; samples past it are unused).
 *
 * It is emitted as a chain of stages, one ONNX graph each: every encoder level (frequency
 * and time layer together), the transformer, every decoder level. ONNX Runtime's planner
 * reuses a dead buffer for a later tensor of the same byte size, which in a U-Net keeps
 * every encoder intermediate allocated until the mirrored decoder layer (about 1.5 GB
 * for htdemucs); separate sessions cannot share buffers, so each stage frees its working
 * memory when it returns. Skip connections travel between stages as named tensors. (Merging
 * the two inner levels into the transformer's stage, 5 sessions, ran at the same speed and
 * peaked 200 MiB higher: docs/demucs.md.)
 *
 * Weights are folded where that is exact up to rounding: LayerScale into the projection or
 * normalization before it, biases into the convolutions that replace ConvTranspose.
 */
import type { CheckpointTensor } from '../torch/checkpoint.js';
import type { HTDemucsConfig } from './config.js';
import { OnnxGraph, type Value } from '../onnx/graph.js';
import { Ops, type OpsOptions } from '../onnx/ops.js';
import { htdemucsParameters } from './htdemucs-parameters.js';
import { HTDemucsTransformer } from './htdemucs-transformer.js';
import { GROUP_NORM_EPS, HTDemucsWeights, type StageInProgress } from './htdemucs-weights.js';

export const GRAPH_INPUTS = { spec: 'spec', wave: 'wave' } as const;
export const GRAPH_OUTPUTS = { spec: 'spec_out', wave: 'wave_out' } as const;

/** One stage: its graph and the named tensors it reads and writes. */
export interface GraphStage {
  readonly name: string;
  readonly graph: OnnxGraph;
  readonly inputs: readonly TensorSpec[];
  readonly outputs: readonly TensorSpec[];
}

export interface TensorSpec {
  readonly name: string;
  readonly shape: readonly number[];
}

export interface BuiltGraph {
  readonly stages: readonly GraphStage[];
  readonly freqs: number;
  readonly frames: number;
}

/** One encoder or decoder layer's structure (HEncLayer / HDecLayer arguments). */
interface LayerSpec {
  readonly prefix: string;
  readonly freq: boolean;
  readonly kernel: number;
  readonly stride: number;
  readonly pad: number;
  readonly norm: boolean;
  readonly normGroups: number;
  readonly rewrite: boolean;
  readonly dconv: boolean;
  readonly dconvDepth: number;
  /** Decoder only: no GELU after the output (the outermost layer). */
  readonly last: boolean;
}

class HTDemucsBuilder {
  private readonly weights: HTDemucsWeights;
  private readonly transformer: HTDemucsTransformer;
  private readonly stages: GraphStage[] = [];
  private current: StageInProgress | undefined;

  constructor(
    private readonly config: HTDemucsConfig,
    state: ReadonlyMap<string, CheckpointTensor>,
    private readonly opsOptions: OpsOptions,
  ) {
    this.weights = new HTDemucsWeights(state, htdemucsParameters(config), () => this.graph);
    this.transformer = new HTDemucsTransformer(config, this.weights, () => this.stageInProgress);
  }

  private get stageInProgress(): StageInProgress {
    if (this.current === undefined) throw new Error('no stage is being built');
    return this.current;
  }

  private get graph(): OnnxGraph {
    if (this.current === undefined) throw new Error('no stage is being built');
    return this.current.graph;
  }

  private get ops(): Ops {
    if (this.current === undefined) throw new Error('no stage is being built');
    return this.current.ops;
  }

  /** Builds one stage graph: `body` maps the named inputs to named outputs. */
  private stage(name: string, inputs: readonly TensorSpec[], body: (values: Record<string, Value>) => Record<string, Value>): TensorSpec[] {
    const graph = new OnnxGraph(`htdemucs_${name}`);
    this.current = { graph, ops: new Ops(graph, this.opsOptions) };
    const values: Record<string, Value> = {};
    for (const input of inputs) values[input.name] = graph.input(input.name, input.shape);
    const outputs = Object.entries(body(values)).map(([outputName, value]) => graph.output(value, outputName));
    this.current = undefined;
    const specs = outputs.map(({ name: outputName, shape }) => ({ name: outputName, shape }));
    this.stages.push({ name, graph, inputs, outputs: specs });
    return specs;
  }

  build(length: number, frames: number): GraphStage[] {
    const { config } = this;
    const sources = config.sources.length;
    const freqs = config.nfft / 2;
    let x: TensorSpec = { name: GRAPH_INPUTS.spec, shape: [1, 2 * config.audioChannels, freqs, frames] };
    let xt: TensorSpec = { name: GRAPH_INPUTS.wave, shape: [1, config.audioChannels, length] };

    const skips: [TensorSpec, TensorSpec][] = [];
    const timeLengths: number[] = [];
    for (let index = 0; index < config.depth; index++) {
      timeLengths.push(xt.shape[2] as number);
      const [encoded, encodedT] = this.stage(`encoder${index}`, [x, xt], (v) => {
        const xtOut = this.graph.scope(`tencoder.${index}`, () => this.encoderLayer(this.layerSpec('tencoder', index, false, 1), v[xt.name] as Value));
        let xOut = this.graph.scope(`encoder.${index}`, () => this.encoderLayer(this.layerSpec('encoder', index, true, 1), v[x.name] as Value));
        if (index === 0 && config.freqEmb > 0) xOut = this.addFrequencyEmbedding(xOut);
        return { [`enc${index}`]: xOut, [`enc${index}_t`]: xtOut };
      }) as [TensorSpec, TensorSpec];
      skips.push([encoded, encodedT]);
      [x, xt] = [encoded, encodedT];
    }

    // Without transformer layers PyTorch still builds the bottom projections but never applies them.
    if (config.tLayers === 0) this.weights.skip('channel_');
    if (config.tLayers > 0) {
      [x, xt] = this.stage('transformer', [x, xt], (v) => {
        const [y, yt] = this.graph.scope('crosstransformer', () => this.transformer.crossTransformer(v[x.name] as Value, v[xt.name] as Value));
        return { mid: y, mid_t: yt };
      }) as [TensorSpec, TensorSpec];
    }

    for (let step = 0; step < config.depth; step++) {
      const index = config.depth - 1 - step;
      const [skip, skipT] = skips.pop() as [TensorSpec, TensorSpec];
      const length = timeLengths.pop() as number;
      const last = index === 0;
      const names = last ? [GRAPH_OUTPUTS.spec, GRAPH_OUTPUTS.wave] : [`dec${step}`, `dec${step}_t`];
      [x, xt] = this.stage(`decoder${step}`, [x, xt, skip, skipT].filter(uniqueSpecs), (v) => {
        const y = this.graph.scope(`decoder.${step}`, () =>
          this.decoderLayer(this.layerSpec('decoder', step, true, 2, last), v[x.name] as Value, v[skip.name] as Value, 0),
        );
        const yt = this.graph.scope(`tdecoder.${step}`, () =>
          this.decoderLayer(this.layerSpec('tdecoder', step, false, 2, last), v[xt.name] as Value, v[skipT.name] as Value, length),
        );
        return { [names[0] as string]: y, [names[1] as string]: yt };
      }) as [TensorSpec, TensorSpec];
    }
    const [, phases, planes, rows, width] = x.shape as [number, number, number, number, number];
    if (planes !== sources * 2 * config.audioChannels || phases * rows !== freqs || width !== frames) {
      throw new Error(`spectrogram branch ends as [${x.shape.join(', ')}]`);
    }
    this.weights.assertAllUsed();
    return this.stages;
  }

  /** `index` counts layers in execution order; construction order decides norm (encoder index, decoder reversed). */
  private layerSpec(prefix: string, index: number, freq: boolean, dconvBit: number, last = false): LayerSpec {
    const { config } = this;
    const depthIndex = prefix.endsWith('decoder') ? config.depth - 1 - index : index;
    return {
      prefix: `${prefix}.${index}`,
      freq,
      kernel: config.kernelSize,
      stride: config.stride,
      pad: Math.floor(config.kernelSize / 4),
      norm: depthIndex >= config.normStarts,
      normGroups: config.normGroups,
      rewrite: config.rewrite,
      dconv: (config.dconvMode & dconvBit) !== 0,
      dconvDepth: config.dconvDepth,
      last,
    };
  }

  // ---- Convolutional layers -------------------------------------------------------------

  private encoderLayer(layer: LayerSpec, x: Value): Value {
    const { ops, weights } = this;
    const p = layer.prefix;
    let y: Value;
    if (layer.freq) {
      y = ops.conv(x, weights.value(`${p}.conv.weight`), weights.value(`${p}.conv.bias`), {
        strides: [layer.stride, 1],
        pads: [layer.pad, 0, layer.pad, 0],
      });
    } else {
      // The time branch first zero-pads on the right to a multiple of the stride.
      const length = x.shape[2] as number;
      const extra = length % layer.stride === 0 ? 0 : layer.stride - (length % layer.stride);
      y = ops.conv(x, weights.value(`${p}.conv.weight`), weights.value(`${p}.conv.bias`), {
        strides: [layer.stride],
        pads: [layer.pad, layer.pad + extra],
      });
    }
    y = ops.gelu(this.maybeGroupNorm(layer, `${p}.norm1`, y));
    if (layer.dconv) y = this.dconv(`${p}.dconv`, y, layer);
    if (!layer.rewrite) return y;
    return this.rewriteGlu(layer, `${p}.rewrite`, `${p}.norm2`, y);
  }

  private decoderLayer(layer: LayerSpec, x: Value, skip: Value, length: number): Value {
    const { ops, weights } = this;
    const p = layer.prefix;
    let y = ops.add(x, skip);
    if (layer.rewrite) y = this.rewriteGlu(layer, `${p}.rewrite`, `${p}.norm1`, y);
    if (layer.dconv) y = this.dconv(`${p}.dconv`, y, layer);
    const full = ((y.shape[2] as number) - 1) * layer.stride + layer.kernel;
    // Output crop: `pad` off both ends of the frequency axis; time keeps [pad, pad + length).
    const cropBegin = layer.pad;
    const cropEnd = layer.freq ? layer.pad : full - layer.pad - length;
    let z: Value;
    if (!layer.norm && layer.kernel === 2 * layer.stride && 2 * layer.pad === layer.stride) {
      // The outermost layer leaves its phases apart: the engine reads them in place.
      z = this.upsamplingConv(y, `${p}.conv_tr`, layer.stride, !layer.last);
      if (!layer.last && !layer.freq && (z.shape[2] as number) !== length) z = ops.slice(z, 2, 0, length);
    } else {
      const weight = weights.value(`${p}.conv_tr.weight`);
      const bias = weights.value(`${p}.conv_tr.bias`);
      const strides = layer.freq ? [layer.stride, 1] : [layer.stride];
      if (layer.norm) {
        // GroupNorm sees the uncropped output, so crop after it.
        z = this.maybeGroupNorm(layer, `${p}.norm2`, ops.convTranspose(y, weight, bias, strides));
        z = ops.slice(z, 2, cropBegin, full - cropEnd);
      } else {
        const pads = layer.freq ? [cropBegin, 0, cropEnd, 0] : [cropBegin, cropEnd];
        z = ops.convTranspose(y, weight, bias, strides, pads);
      }
    }
    if (layer.last) return z.shape.length === (layer.freq ? 5 : 4) ? z : this.asOnePhase(z);
    return ops.gelu(z);
  }

  /** A plain [1, C, ...] output as the phase layout [1, 1, C, ...] the engine reads. */
  private asOnePhase(z: Value): Value {
    return this.ops.reshape(z, [1, 1, ...z.shape.slice(1)]);
  }

  /**
   * The decoder's transposed convolution (kernel 2·stride, output cropped by stride/2 at the
   * start) as an ordinary convolution and an interleave. Output row stride·g + i (after the
   * crop) depends on input rows g−1, g and g+1 only, through kernel taps that depend on i:
   *
   *   i < stride/2:  W[i + s/2]·x[g] + W[i + s/2 + s]·x[g − 1]
   *   i ≥ stride/2:  W[i − s/2]·x[g + 1] + W[i + s/2]·x[g]
   *
   * So a 3-tap convolution with stride·out filters computes all phases at once (bias
   * included), and a transpose interleaves them. This replaces ONNX Runtime's
   * ConvTranspose, whose col2im is single-threaded and about 7× slower than the GEMM.
   * Returns stride·rows output rows, or with `interleave` false the phases apart as
   * [1, stride, out, rows(, frames)] (output row stride·g + i is phase i, row g).
   */
  private upsamplingConv(y: Value, prefix: string, stride: number, interleave: boolean): Value {
    const { ops, weights } = this;
    const weight = weights.tensor(`${prefix}.weight`); // [in, out, 2·stride(, 1)]
    const bias = weights.data(`${prefix}.bias`);
    const [inChannels, outChannels, kernel] = weight.shape as [number, number, number];
    const half = stride / 2;
    // taps[i][d + 1]: the kernel tap phase i applies to input row g + d, or −1 for none.
    const taps = Array.from({ length: stride }, (_, i) => (i < half ? [i + half + stride, i + half, -1] : [-1, i + half, i - half]));
    const filters = new Float32Array(stride * outChannels * inChannels * 3);
    const biases = new Float32Array(stride * outChannels);
    for (let i = 0; i < stride; i++) {
      for (let o = 0; o < outChannels; o++) {
        const filter = i * outChannels + o;
        biases[filter] = bias[o] as number;
        for (let c = 0; c < inChannels; c++) {
          for (let d = 0; d < 3; d++) {
            const tap = taps[i]?.[d] as number;
            if (tap >= 0) filters[(filter * inChannels + c) * 3 + d] = weight.data[(c * outChannels + o) * kernel + tap] as number;
          }
        }
      }
    }
    const rows = y.shape[2] as number;
    if (y.shape.length === 4) {
      const frames = y.shape[3] as number;
      const w = weights.constant(filters, [stride * outChannels, inChannels, 3, 1], `${prefix}.weight`);
      const phases = ops.conv(y, w, weights.constant(biases, [stride * outChannels], `${prefix}.bias`), { pads: [1, 0, 1, 0] });
      const apart = ops.reshape(phases, [1, stride, outChannels, rows, frames]);
      if (!interleave) return apart;
      return ops.reshape(ops.transpose(apart, [0, 2, 3, 1, 4]), [1, outChannels, rows * stride, frames]);
    }
    const w = weights.constant(filters, [stride * outChannels, inChannels, 3], `${prefix}.weight`);
    const phases = ops.conv(y, w, weights.constant(biases, [stride * outChannels], `${prefix}.bias`), { pads: [1, 1] });
    const apart = ops.reshape(phases, [1, stride, outChannels, rows]);
    if (!interleave) return apart;
    return ops.reshape(ops.transpose(apart, [0, 2, 3, 1]), [1, outChannels, rows * stride]);
  }

  /**
   * GLU(norm(rewrite(x))), the rewrite being a 1×1 (or context-sized, "same"-padded)
   * convolution. Without a norm in between, the GLU's halves come from two convolutions
   * with half the filters each, so the double-width tensor and its split never exist.
   */
  private rewriteGlu(layer: LayerSpec, prefix: string, normPrefix: string, x: Value): Value {
    const { ops, weights } = this;
    const weight = weights.tensor(`${prefix}.weight`);
    const bias = weights.data(`${prefix}.bias`);
    const pads = weight.shape.slice(2).map((k) => (k - 1) / 2);
    const options = { pads: [...pads, ...pads] };
    if (layer.norm) {
      const z = ops.conv(x, weights.value(`${prefix}.weight`), weights.constant(bias, [bias.length], `${prefix}.bias`), options);
      return ops.glu(this.maybeGroupNorm(layer, normPrefix, z), 1);
    }
    const half = (weight.shape[0] as number) / 2;
    const perFilter = weight.data.length / (weight.shape[0] as number);
    const halfConv = (part: number): Value =>
      ops.conv(
        x,
        weights.constant(weight.data.subarray(part * half * perFilter, (part + 1) * half * perFilter), [half, ...weight.shape.slice(1)], `${prefix}.weight`),
        weights.constant(bias.subarray(part * half, (part + 1) * half), [half], `${prefix}.bias`),
        options,
      );
    return ops.mul(halfConv(0), ops.sigmoid(halfConv(1)));
  }

  private maybeGroupNorm(layer: LayerSpec, prefix: string, x: Value): Value {
    if (!layer.norm) return x;
    const { weights } = this;
    return this.ops.groupNorm(x, layer.normGroups, weights.data(`${prefix}.weight`), weights.data(`${prefix}.bias`), GROUP_NORM_EPS);
  }

  /**
   * DConv residual branch (demucs/demucs.py). On the frequency branch it runs along time
   * for every frequency row separately: [1, C, F, T] → [F, C, T] and back.
   */
  private dconv(prefix: string, x: Value, layer: LayerSpec): Value {
    const { ops } = this;
    if (!layer.freq) return this.dconvLayers(prefix, x, layer.dconvDepth);
    const [, channels, freqs, frames] = x.shape as [number, number, number, number];
    const rows = ops.reshape(ops.transpose(x, [0, 2, 1, 3]), [freqs, channels, frames]);
    // Rows are independent, so large layers run a few rows at a time: the branch's widest
    // tensor (2·channels per row) then never exists for all rows at once.
    const chunks = rowChunks(freqs, 2 * channels * frames);
    const parts = chunks.length > 1 ? ops.split(rows, 0, chunks) : [rows];
    const outs = parts.map((part) => this.dconvLayers(prefix, part, layer.dconvDepth));
    const out = outs.length > 1 ? ops.concat(outs, 0) : (outs[0] as Value);
    return ops.transpose(ops.reshape(out, [1, freqs, channels, frames]), [0, 2, 1, 3]);
  }

  private dconvLayers(prefix: string, input: Value, depth: number): Value {
    const { ops, weights } = this;
    let x = input;
    const dilate = depth > 0;
    for (let d = 0; d < Math.abs(depth); d++) {
      const p = `${prefix}.layers.${d}`;
      const dilation = dilate ? 2 ** d : 1;
      let h = ops.conv(x, weights.value(`${p}.0.weight`), weights.value(`${p}.0.bias`), {
        dilations: [dilation],
        pads: [dilation, dilation],
      });
      h = ops.gelu(ops.groupNorm(h, 1, weights.data(`${p}.1.weight`), weights.data(`${p}.1.bias`), GROUP_NORM_EPS));
      h = ops.conv(h, weights.value(`${p}.3.weight`), weights.value(`${p}.3.bias`));
      // LayerScale multiplies the GLU output; fold it into the affine of the GLU's first half.
      const scale = weights.data(`${p}.6.scale`);
      const gamma = scaleFirstHalf(weights.data(`${p}.4.weight`), scale);
      const beta = scaleFirstHalf(weights.data(`${p}.4.bias`), scale);
      h = ops.glu(ops.groupNorm(h, 1, gamma, beta, GROUP_NORM_EPS), 1);
      x = ops.add(x, h);
    }
    return x;
  }

  private addFrequencyEmbedding(x: Value): Value {
    const { config, weights } = this;
    const [, channels, freqs] = x.shape as [number, number, number, number];
    const table = weights.data('freq_emb.embedding.weight'); // [freqs, channels]
    const emb = new Float32Array(channels * freqs);
    for (let f = 0; f < freqs; f++) {
      for (let c = 0; c < channels; c++) {
        emb[c * freqs + f] = Math.fround(config.freqEmb * Math.fround((table[f * channels + c] as number) * config.embScale));
      }
    }
    return this.ops.add(x, weights.constant(emb, [1, channels, freqs, 1], 'freq_emb'));
  }
}

/** Bytes of one chunk's widest tensor that row chunking aims for. */
const CHUNK_TARGET_BYTES = 16 << 20;

/** Row counts that split `rows` into near-equal chunks of at most CHUNK_TARGET_BYTES (at `rowElements` floats a row). */
function rowChunks(rows: number, rowElements: number): number[] {
  const count = Math.min(rows, Math.max(1, Math.ceil((rows * rowElements * 4) / CHUNK_TARGET_BYTES)));
  const base = Math.floor(rows / count);
  return Array.from({ length: count }, (_, i) => base + (i < rows % count ? 1 : 0));
}

function scaleFirstHalf(values: Float32Array, scale: Float32Array): Float32Array {
  const out = Float32Array.from(values);
  for (let c = 0; c < scale.length; c++) out[c] = (out[c] as number) * (scale[c] as number);
  return out;
}

/** Without transformer layers, the bottleneck tensor is also the innermost skip: pass it once. */
function uniqueSpecs(spec: TensorSpec, index: number, all: readonly TensorSpec[]): boolean {
  return all.findIndex((other) => other.name === spec.name) === index;
}

export function buildHTDemucsGraph(config: HTDemucsConfig, state: ReadonlyMap<string, CheckpointTensor>, options: OpsOptions = {}): BuiltGraph {
  const frames = Math.ceil(config.segmentSamples / (config.nfft / 4));
  const stages = new HTDemucsBuilder(config, state, options).build(config.segmentSamples, frames);
  return { stages, freqs: config.nfft / 2, frames };
}
