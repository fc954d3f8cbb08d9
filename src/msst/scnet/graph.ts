/**
 * SCNet (models/scnet/scnet.py + separation.py) between the spectrum and the stems' spectra, as
 * ONNX stages built from a state_dict:
 *
 *   encoder   per level: SD layer (the bins split into low/mid/high bands by band_SR, each
 *             zero-padded and down-sampled by its own strided conv), a convolution module per
 *             band (residual GroupNorm → conv → GLU → depthwise conv → GroupNorm → Swish → conv,
 *             along time, per bin), GELU, the bands concatenated (the skip) and a 3×3 conv;
 *   separation num_dplayer dual-path layers (a bidirectional LSTM over the bins, then one over
 *             the frames, each GroupNorm'd, projected and residual); after even layers the frame
 *             axis goes through an orthonormal rfft (real and imaginary parts as channels), after
 *             odd ones back through irfft: both are constant DFT matrices here; these stages pass
 *             their activations channels-last, [frames, bins, channels];
 *   decoder   per level, deepest first: + skip, the fusion conv (its input `x.repeat(1, 2)` folded
 *             into the weights) and GLU, then an SU layer (a transposed conv per band, trimmed
 *             back to the band's bins).
 *
 *   input  `spectrum` [1, 2·C, bins, frames]       channel 2c + re/im, as SCNet reshapes torch.stft's output
 *   output `stems`    [1, 2·C·S, bins, frames]     channel 2(s·C + c) + re/im (SCNet's view(B, dims[0], S, …)
 *                                                  followed by pairs of channels as complex values)
 *
 * Shapes are static: the chunk's frame count is fixed, so each band's geometry is computed here.
 */
import { StemsplitError } from '../../errors.js';
import { OnnxGraph, type Value } from '../../onnx/graph.js';
import { onnxLstmWeights } from '../../onnx/lstm-weights.js';
import { Ops, type OpsOptions } from '../../onnx/ops.js';
import type { GraphStage } from '../../onnx/stages.js';
import type { CheckpointTensor } from '../../torch/checkpoint.js';
import { StateReader } from '../../torch/state-reader.js';
import type { ScnetConfig } from './config.js';

export const GRAPH_INPUT = 'spectrum';
export const GRAPH_OUTPUT = 'stems';

type State = ReadonlyMap<string, CheckpointTensor>;

/** The spectrum a chunk makes. */
export interface ScnetGraphShape {
  readonly bins: number;
  readonly frames: number;
}

/** Where one band sits in a level's bins and what its down-sampling conv makes of it. */
export interface BandGeometry {
  readonly start: number;
  readonly length: number;
  readonly padLeft: number;
  readonly padRight: number;
  /** Bins after the strided conv. */
  readonly outLength: number;
  /** Bins the transposed conv makes before the trim, and where the trim starts. */
  readonly upLength: number;
  readonly trim: number;
}

/** SDlayer.forward's split points and padding, and SUlayer's symmetric trim, for `bins` bins. */
export function bandGeometry(config: ScnetConfig, bins: number, where: string): BandGeometry[] {
  const [low, mid] = config.bands;
  const cuts = [0, Math.ceil(bins * low.share), Math.ceil(bins * (low.share + mid.share)), bins];
  return config.bands.map((band, i) => {
    const start = cuts[i] as number;
    const length = Math.min(cuts[i + 1] as number, bins) - start;
    const total = band.stride === 1 ? band.kernel - band.stride : (band.stride - (length % band.stride)) % band.stride;
    const padLeft = Math.floor(total / 2);
    const outLength = Math.floor((length + total - band.kernel) / band.stride) + 1;
    if (length < 1 || outLength < 1)
      throw new StemsplitError('MODEL_INVALID', `${where}: band ${i} of ${bins} bins is ${length} bins, too few for its kernel ${band.kernel}`);
    const upLength = (outLength - 1) * band.stride + band.kernel;
    // The transposed conv must give back at least the band's bins (else the official code fails to concatenate).
    if (upLength < length)
      throw new StemsplitError(
        'MODEL_INVALID',
        `${where}: band ${i} (${length} bins, stride ${band.stride}, kernel ${band.kernel}) does not up-sample back to its size`,
      );
    return { start, length, padLeft, padRight: total - padLeft, outLength, upLength, trim: Math.floor((upLength - length) / 2) };
  });
}

/**
 * The network as a chain of graphs: one per encoder level (writing its skip, the concatenated
 * bands; the level's 3×3 conv opens the next stage), one per dual-path layer, one per decoder
 * level. ONNX Runtime then holds one stage's activations at a time (the LSTMs' gate buffers are
 * the largest), and the skips pass between stages by name.
 */
export function buildScnetStages(config: ScnetConfig, state: State, shape: ScnetGraphShape, file: string, options: OpsOptions = {}): GraphStage[] {
  const weights = new StateReader(state, file);
  const levels = config.dims.length - 1;
  const geometries: BandGeometry[][] = [];
  const skipShapes: number[][] = [];
  let bins = shape.bins;
  for (let level = 0; level < levels; level++) {
    const geometry = bandGeometry(config, bins, file);
    geometries.push(geometry);
    bins = geometry.reduce((sum, g) => sum + g.outLength, 0);
    skipShapes.push([1, config.dims[level + 1] as number, bins, shape.frames]);
  }
  const stages: GraphStage[] = [];
  let previous = { name: GRAPH_INPUT, shape: [1, 2 * config.channels, shape.bins, shape.frames] as readonly number[] };
  const stage = (
    name: string,
    output: string,
    skips: readonly { name: string; shape: readonly number[] }[],
    body: (net: Network, x: Value, skips: Value[]) => Value,
  ) => {
    const graph = new OnnxGraph(`scnet-${name}`);
    const net = new Network(graph, new Ops(graph, options), weights, config, file);
    const x = graph.input(stages.length === 0 ? GRAPH_INPUT : 'x_in', previous.shape);
    const others = skips.map((skip) => graph.input(skip.name, skip.shape));
    const result = graph.output(body(net, x, others), output);
    stages.push({ name, graph, inputs: [x.name, ...skips.map((skip) => skip.name)], output });
    previous = { name: output, shape: result.shape };
  };
  for (let level = 0; level < levels; level++) {
    stage(`encoder${level}`, `skip${level}`, [], (net, x) =>
      net.encoder(level, level === 0 ? x : net.globalConv(level - 1, x), geometries[level] as BandGeometry[]),
    );
  }
  // The dual-path layers pass their activations on channels-last; the first opens with the last encoder level's 3×3 conv.
  for (let layer = 0; layer < config.numDualPathLayers; layer++) {
    const last = layer === config.numDualPathLayers - 1;
    stage(`dualpath${layer}`, `dualpath${layer}`, [], (net, x) => {
      const y = net.featureConversion(layer, net.dualPath(layer, layer === 0 ? net.toChannelsLast(net.globalConv(levels - 1, x)) : x));
      return last ? net.fromChannelsLast(y) : y;
    });
  }
  for (let j = 0; j < levels; j++) {
    const level = levels - 1 - j;
    const skip = { name: `skip${level}`, shape: skipShapes[level] as number[] };
    const input = config.numDualPathLayers === 0 && j === 0;
    stage(`decoder${level}`, level === 0 ? GRAPH_OUTPUT : `decoder${level}`, [skip], (net, x, [s]) =>
      net.decoder(j, level, input ? net.globalConv(levels - 1, x) : x, s as Value, geometries[level] as BandGeometry[]),
    );
  }
  weights.refuseUnused('scnet');
  return stages;
}

class Network {
  constructor(
    private readonly graph: OnnxGraph,
    private readonly ops: Ops,
    private readonly weights: StateReader,
    private readonly config: ScnetConfig,
    private readonly file: string,
  ) {}

  /** SDblock up to its skip: bands down-sampled, each through its convolution module and GELU, concatenated. */
  encoder(level: number, x: Value, geometry: readonly BandGeometry[]): Value {
    const { dims, bands, convDepths } = this.config;
    const channelsIn = x.shape[1] as number;
    const channels = dims[level + 1] as number;
    const prefix = `encoder.${level}`;
    const parts = geometry.map((g, b) => {
      const band = bands[b] as (typeof bands)[number];
      const slice = this.ops.slice(x, 2, g.start, g.start + g.length);
      const weight = this.constant(`${prefix}.SDlayer.convs.${b}.weight`, [channels, channelsIn, band.kernel, 1]);
      const bias = this.constant(`${prefix}.SDlayer.convs.${b}.bias`, [channels]);
      const down = this.ops.conv(slice, weight, bias, { strides: [band.stride, 1], pads: [g.padLeft, 0, g.padRight, 0] });
      return this.convolutionModule(`${prefix}.conv_modules.${b}`, down, convDepths[b] as number);
    });
    return this.ops.concat(parts, 2);
  }

  /** SDblock's closing 3×3 conv over the skip. */
  globalConv(level: number, skip: Value): Value {
    const channels = this.config.dims[level + 1] as number;
    const weight = this.constant(`encoder.${level}.globalconv.weight`, [channels, channels, 3, 3]);
    return this.ops.conv(skip, weight, this.constant(`encoder.${level}.globalconv.bias`, [channels]), { pads: [1, 1, 1, 1] });
  }

  /** ConvolutionModule along time for every bin of a band [1, C, f, T] (bins as the batch), then GELU. */
  private convolutionModule(prefix: string, band: Value, depth: number): Value {
    const [, channels, bins, frames] = band.shape as [number, number, number, number];
    const hidden = Math.floor(channels / this.config.compress);
    const kernel = this.config.convKernel;
    const pad = Math.floor(kernel / 2);
    if (depth > 0 && hidden < 1) throw new StemsplitError('MODEL_INVALID', `${this.file}: compress ${this.config.compress} leaves no channels of ${channels}`);
    let x = this.ops.reshape(this.ops.transpose(band, [2, 1, 0, 3]), [bins, channels, frames]);
    for (let d = 0; d < depth; d++) {
      const p = `${prefix}.layers.${d}`;
      let y = this.groupNorm(x, `${p}.0`, channels);
      y = this.ops.conv(y, this.constant(`${p}.1.weight`, [2 * hidden, channels, kernel]), this.constant(`${p}.1.bias`, [2 * hidden]), { pads: [pad, pad] });
      y = this.ops.glu(y, 1);
      y = this.ops.conv(y, this.constant(`${p}.3.weight`, [hidden, 1, kernel]), this.constant(`${p}.3.bias`, [hidden]), { pads: [pad, pad], group: hidden });
      y = this.groupNorm(y, `${p}.4`, hidden);
      y = this.ops.mul(y, this.ops.sigmoid(y));
      y = this.ops.conv(y, this.constant(`${p}.6.weight`, [channels, hidden, 1]), this.constant(`${p}.6.bias`, [channels]));
      x = this.ops.add(x, y);
    }
    const activated = this.ops.gelu(x);
    return this.ops.transpose(this.ops.reshape(activated, [bins, channels, 1, frames]), [2, 1, 0, 3]);
  }

  /**
   * [1, C, F, T] → [T, F, C]. The separation net runs channels-last: each LSTM then reads its
   * sequences where they lie (a frame's or a bin's channels are contiguous), going from one path
   * to the other moves whole channel vectors, and the DFT over the frames is one matrix product.
   */
  toChannelsLast(x: Value): Value {
    const [, channels, bins, frames] = x.shape as [number, number, number, number];
    return this.ops.transpose(this.ops.reshape(x, [channels, bins, frames]), [2, 1, 0]);
  }

  /** [T, F, C] → [1, C, F, T], for the decoder. */
  fromChannelsLast(x: Value): Value {
    const [frames, bins, channels] = x.shape as [number, number, number];
    return this.ops.reshape(this.ops.transpose(x, [2, 1, 0]), [1, channels, bins, frames]);
  }

  /**
   * DualPathRNN on x [T, F, C] (channels-last): over the bins (one sequence per frame), then over
   * the frames (one sequence per bin); each path GroupNorm → bidirectional LSTM → Linear(2H → C) + residual.
   */
  dualPath(layer: number, x: Value): Value {
    const channels = x.shape[2] as number;
    const prefix = `separation_net.dp_modules.${layer}`;
    const hidden = channels * this.config.expand;
    // sequences [seq, batch, C] → the same, after the path
    const path = (index: number, sequences: Value) => {
      const [seq, batch] = sequences.shape as [number, number, number];
      const norm = `${prefix}.norm_layers.${index}`;
      const normed = this.ops.channelsLastGroupNorm(
        sequences,
        this.weights.get(`${norm}.weight`, [channels]).data,
        this.weights.get(`${norm}.bias`, [channels]).data,
      );
      const lstm = this.ops.lstm(normed, this.lstmWeights(`${prefix}.lstm_layers.${index}`, channels, hidden));
      const both = this.ops.reshape(this.ops.transpose(lstm, [0, 2, 1, 3]), [seq * batch, 2 * hidden]); // forward ‖ backward
      const weight = this.constant(`${prefix}.linear_layers.${index}.weight`, [channels, 2 * hidden]);
      const projected = this.ops.linear(both, weight, this.constant(`${prefix}.linear_layers.${index}.bias`, [channels]));
      return this.ops.add(this.ops.reshape(projected, sequences.shape), sequences);
    };
    const overBins = path(0, this.ops.transpose(x, [1, 0, 2])); // [F, T, C]: one sequence per frame
    return path(1, this.ops.transpose(overBins, [1, 0, 2])); // [T, F, C]: one sequence per bin
  }

  /**
   * FeatureConversion on x [T, F, C]: after even layers rfft(frames, ortho) → [re ‖ im] channels,
   * after odd ones their irfft; each one matrix product over the frame axis.
   */
  featureConversion(layer: number, x: Value): Value {
    const [frames, bins, channels] = x.shape as [number, number, number];
    if (layer % 2 === 0) {
      const spectra = frames / 2 + 1;
      const both = this.ops.matmul(this.dft(frames, 'forward'), this.ops.reshape(x, [frames, bins * channels]), { fixed: true }); // [re; im] rows
      return this.ops.reshape(this.ops.transpose(this.ops.reshape(both, [2, spectra, bins, channels]), [1, 2, 0, 3]), [spectra, bins, 2 * channels]);
    }
    const half = channels / 2;
    const parts = this.ops.transpose(this.ops.reshape(x, [frames, bins, 2, half]), [2, 0, 1, 3]); // [re; im] rows
    const signal = this.ops.matmul(this.dft(2 * (frames - 1), 'inverse'), this.ops.reshape(parts, [2 * frames, bins * half]), { fixed: true });
    return this.ops.reshape(signal, [2 * (frames - 1), bins, half]);
  }

  /**
   * Orthonormal real DFT for n frames, applied from the left: forward [2k, n] (k = n/2 + 1; rows
   * Re = cos, then Im = −sin); inverse [n, 2k] (columns cos, then −sin), each bin but DC and
   * Nyquist counted twice (their imaginary parts drop out).
   */
  private dft(n: number, direction: 'forward' | 'inverse'): Value {
    if (n % 2 !== 0) throw new Error(`the frame count ${n} must be even`);
    const bins = n / 2 + 1;
    const matrix = new Float32Array(2 * bins * n);
    const scale = 1 / Math.sqrt(n);
    for (let k = 0; k < bins; k++) {
      const weight = direction === 'forward' || k === 0 || k === n / 2 ? 1 : 2;
      for (let t = 0; t < n; t++) {
        const angle = (2 * Math.PI * ((k * t) % n)) / n;
        const [re, im] = direction === 'forward' ? [k * n + t, (bins + k) * n + t] : [t * 2 * bins + k, t * 2 * bins + bins + k];
        matrix[re] = weight * scale * Math.cos(angle);
        matrix[im] = -weight * scale * Math.sin(angle);
      }
    }
    return this.graph.constant(matrix, direction === 'forward' ? [2 * bins, n] : [n, 2 * bins], `dft_${direction}`);
  }

  /** Decoder j (level `level`): x + skip → FusionLayer (conv of [x, x] and GLU) → SU layer. */
  decoder(j: number, level: number, x: Value, skip: Value, geometry: readonly BandGeometry[]): Value {
    const { dims, bands, channels: audioChannels, sources } = this.config;
    const channels = dims[level + 1] as number;
    const prefix = `decoder.${j}`;
    const fused = this.ops.add(x, skip);
    const weight = this.weights.get(`${prefix}.0.conv.weight`, [2 * channels, 2 * channels, 3, 3]).data;
    const folded = foldRepeatedInput(weight, 2 * channels, channels, 9);
    const conv = this.ops.conv(
      fused,
      this.graph.constant(folded, [2 * channels, channels, 3, 3], 'fusion_w'),
      this.constant(`${prefix}.0.conv.bias`, [2 * channels]),
      {
        pads: [1, 1, 1, 1],
      },
    );
    const gated = this.ops.glu(conv, 1);
    const channelsOut = level === 0 ? 2 * audioChannels * sources.length : (dims[level] as number);
    const parts = this.ops.split(
      gated,
      2,
      geometry.map((g) => g.outLength),
    );
    const up = parts.map((part, b) => {
      const band = bands[b] as (typeof bands)[number];
      const g = geometry[b] as BandGeometry;
      const w = this.constant(`${prefix}.1.convtrs.${b}.weight`, [channels, channelsOut, band.kernel, 1]);
      const out = this.ops.convTranspose(part, w, this.constant(`${prefix}.1.convtrs.${b}.bias`, [channelsOut]), [band.stride, 1]);
      return g.trim === 0 && g.upLength === g.length ? out : this.ops.slice(out, 2, g.trim, g.trim + g.length);
    });
    return this.ops.concat(up, 2);
  }

  /** GroupNorm(1, channels) with the weights under `prefix`. */
  private groupNorm(x: Value, prefix: string, channels: number): Value {
    return this.ops.groupNorm(x, 1, this.weights.get(`${prefix}.weight`, [channels]).data, this.weights.get(`${prefix}.bias`, [channels]).data);
  }

  private lstmWeights(prefix: string, input: number, hidden: number) {
    const direction = (suffix: string) => ({
      weightIh: this.weights.get(`${prefix}.weight_ih_l0${suffix}`, [4 * hidden, input]).data,
      weightHh: this.weights.get(`${prefix}.weight_hh_l0${suffix}`, [4 * hidden, hidden]).data,
      biasIh: this.weights.get(`${prefix}.bias_ih_l0${suffix}`, [4 * hidden]).data,
      biasHh: this.weights.get(`${prefix}.bias_hh_l0${suffix}`, [4 * hidden]).data,
    });
    return onnxLstmWeights([direction(''), direction('_reverse')], hidden);
  }

  private constant(name: string, shape: readonly number[]): Value {
    return this.graph.constant(this.weights.get(name, shape).data, shape, name);
  }
}

/** A conv over `x.repeat(1, 2)` is one over x with the two input halves' kernels summed: [out, 2·half, k] → [out, half, k]. */
function foldRepeatedInput(weight: Float32Array, out: number, half: number, kernel: number): Float32Array {
  const folded = new Float32Array(out * half * kernel);
  for (let o = 0; o < out; o++) {
    for (let i = 0; i < half * kernel; i++) {
      folded[o * half * kernel + i] = (weight[o * 2 * half * kernel + i] as number) + (weight[(o * 2 * half + half) * kernel + i] as number);
    }
  }
  return folded;
}
