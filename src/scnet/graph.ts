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
 *             odd ones back through irfft: both are constant DFT matrices here;
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
import { StemsplitError } from '../errors.js';
import { OnnxGraph, type Value } from '../onnx/graph.js';
import { onnxLstmWeights, Ops, type OpsOptions } from '../onnx/ops.js';
import type { GraphStage } from '../onnx/stages.js';
import type { CheckpointTensor } from '../torch/checkpoint.js';
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
    if (length < 1 || outLength < 1) throw new StemsplitError('MODEL_INVALID', `${where}: band ${i} of ${bins} bins is ${length} bins, too few for its kernel ${band.kernel}`);
    const upLength = (outLength - 1) * band.stride + band.kernel;
    // The transposed conv must give back at least the band's bins (else the official code fails to concatenate).
    if (upLength < length) throw new StemsplitError('MODEL_INVALID', `${where}: band ${i} (${length} bins, stride ${band.stride}, kernel ${band.kernel}) does not up-sample back to its size`);
    return { start, length, padLeft, padRight: total - padLeft, outLength, upLength, trim: Math.floor((upLength - length) / 2) };
  });
}

/** Reads weights by name, checks their shapes, and remembers which were used. */
class Weights {
  private readonly used = new Set<string>();
  constructor(
    private readonly state: State,
    private readonly file: string,
  ) {}

  get(name: string, shape: readonly number[]): Float32Array {
    const tensor = this.state.get(name);
    if (tensor === undefined) throw new StemsplitError('MODEL_INVALID', `${this.file}: the checkpoint lacks ${name} (does the config match it?)`);
    if (tensor.shape.length !== shape.length || tensor.shape.some((d, i) => d !== shape[i])) {
      throw new StemsplitError('MODEL_INVALID', `${this.file}: ${name} is [${tensor.shape.join(', ')}], the config implies [${shape.join(', ')}]`);
    }
    this.used.add(name);
    return tensor.data;
  }

  unused(): string[] {
    return [...this.state.keys()].filter((key) => !this.used.has(key));
  }
}

/**
 * The network as a chain of graphs: one per encoder level (writing its skip, the concatenated
 * bands; the level's 3×3 conv opens the next stage), one per dual-path layer, one per decoder
 * level. ONNX Runtime then holds one stage's activations at a time (the LSTMs' gate buffers are
 * the largest), and the skips pass between stages by name.
 */
export function buildScnetStages(config: ScnetConfig, state: State, shape: ScnetGraphShape, file: string, options: OpsOptions = {}): GraphStage[] {
  const weights = new Weights(state, file);
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
  const stage = (name: string, output: string, skips: readonly { name: string; shape: readonly number[] }[], body: (net: Network, x: Value, skips: Value[]) => Value) => {
    const graph = new OnnxGraph(`scnet-${name}`);
    const net = new Network(graph, new Ops(graph, options), weights, config, file);
    const x = graph.input(stages.length === 0 ? GRAPH_INPUT : 'x_in', previous.shape);
    const others = skips.map((skip) => graph.input(skip.name, skip.shape));
    const result = graph.output(body(net, x, others), output);
    stages.push({ name, graph, inputs: [x.name, ...skips.map((skip) => skip.name)], output });
    previous = { name: output, shape: result.shape };
  };
  // The 3×3 conv that closes encoder level `level`, at the start of the stage after it.
  const afterEncoder = (net: Network, x: Value, layer: number) => (layer === 0 ? net.globalConv(levels - 1, x) : x);
  for (let level = 0; level < levels; level++) {
    stage(`encoder${level}`, `skip${level}`, [], (net, x) => net.encoder(level, level === 0 ? x : net.globalConv(level - 1, x), geometries[level] as BandGeometry[]));
  }
  for (let layer = 0; layer < config.numDualPathLayers; layer++) {
    stage(`dualpath${layer}`, `dualpath${layer}`, [], (net, x) => net.featureConversion(layer, net.dualPath(layer, afterEncoder(net, x, layer))));
  }
  for (let j = 0; j < levels; j++) {
    const level = levels - 1 - j;
    const skip = { name: `skip${level}`, shape: skipShapes[level] as number[] };
    const input = config.numDualPathLayers === 0 && j === 0;
    stage(`decoder${level}`, level === 0 ? GRAPH_OUTPUT : `decoder${level}`, [skip], (net, x, [s]) =>
      net.decoder(j, level, input ? net.globalConv(levels - 1, x) : x, s as Value, geometries[level] as BandGeometry[]),
    );
  }
  const unused = weights.unused();
  if (unused.length > 0) {
    const shown = unused.slice(0, 5).join(', ') + (unused.length > 5 ? ` and ${unused.length - 5} more` : '');
    throw new StemsplitError('MODEL_INVALID', `${file}: layers the scnet config does not describe: ${shown}`);
  }
  return stages;
}

class Network {
  constructor(
    private readonly graph: OnnxGraph,
    private readonly ops: Ops,
    private readonly weights: Weights,
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
   * DualPathRNN on x [1, C, F, T]: over the bins (one sequence per frame), then over the frames
   * (one sequence per bin); each path GroupNorm → bidirectional LSTM → Linear(2H → C) + residual.
   */
  dualPath(layer: number, x: Value): Value {
    const [, channels, bins, frames] = x.shape as [number, number, number, number];
    const prefix = `separation_net.dp_modules.${layer}`;
    const hidden = channels * this.config.expand;
    const path = (index: number, input: Value, toSequences: readonly number[], fromSequences: readonly number[]) => {
      const normed = this.groupNorm(input, `${prefix}.norm_layers.${index}`, channels);
      const sequences = this.ops.transpose(this.ops.reshape(normed, [channels, bins, frames]), toSequences); // [seq, batch, C]
      const [seq, batch] = sequences.shape as [number, number, number];
      const lstm = this.ops.lstm(sequences, this.lstmWeights(`${prefix}.lstm_layers.${index}`, channels, hidden));
      const both = this.ops.reshape(this.ops.transpose(lstm, [0, 2, 1, 3]), [seq * batch, 2 * hidden]); // forward ‖ backward
      const weight = this.constant(`${prefix}.linear_layers.${index}.weight`, [channels, 2 * hidden]);
      const projected = this.ops.linear(both, weight, this.constant(`${prefix}.linear_layers.${index}.bias`, [channels]));
      const back = this.ops.transpose(this.ops.reshape(projected, [seq, batch, channels]), fromSequences);
      return this.ops.add(this.ops.reshape(back, input.shape), input);
    };
    const overBins = path(0, x, [1, 2, 0], [2, 0, 1]); // [F, T, C] ↔ [C, F, T]
    return path(1, overBins, [2, 1, 0], [2, 1, 0]); // [T, F, C] ↔ [C, F, T]
  }

  /** FeatureConversion: after even layers rfft(frames, ortho) → [re; im] channels, after odd ones their irfft. */
  featureConversion(layer: number, x: Value): Value {
    const frames = x.shape[3] as number;
    if (layer % 2 === 0) {
      const { cos, sin } = this.dft(frames, 'forward');
      return this.ops.concat([this.ops.matmul(x, cos, { fixed: true }), this.ops.matmul(x, sin, { fixed: true })], 1);
    }
    const [re, im] = this.ops.split(x, 1, 2) as [Value, Value];
    const { cos, sin } = this.dft(2 * (frames - 1), 'inverse');
    return this.ops.add(this.ops.matmul(re, cos, { fixed: true }), this.ops.matmul(im, sin, { fixed: true }));
  }

  /**
   * Orthonormal real DFT matrices for n frames: forward [n, n/2+1] (Re = x·cos, Im = x·(−sin));
   * inverse [n/2+1, n] with each bin but DC and Nyquist counted twice (their imaginary parts drop out).
   */
  private dft(n: number, direction: 'forward' | 'inverse'): { cos: Value; sin: Value } {
    if (n % 2 !== 0) throw new Error(`the frame count ${n} must be even`);
    const bins = n / 2 + 1;
    const cos = new Float32Array(n * bins);
    const sin = new Float32Array(n * bins);
    const scale = 1 / Math.sqrt(n);
    for (let k = 0; k < bins; k++) {
      const weight = direction === 'forward' || k === 0 || k === n / 2 ? 1 : 2;
      for (let t = 0; t < n; t++) {
        const angle = (2 * Math.PI * ((k * t) % n)) / n;
        const at = direction === 'forward' ? t * bins + k : k * n + t;
        cos[at] = weight * scale * Math.cos(angle);
        sin[at] = -weight * scale * Math.sin(angle);
      }
    }
    const shape = direction === 'forward' ? [n, bins] : [bins, n];
    return { cos: this.graph.constant(cos, shape, 'dft_cos'), sin: this.graph.constant(sin, shape, 'dft_sin') };
  }

  /** Decoder j (level `level`): x + skip → FusionLayer (conv of [x, x] and GLU) → SU layer. */
  decoder(j: number, level: number, x: Value, skip: Value, geometry: readonly BandGeometry[]): Value {
    const { dims, bands, channels: audioChannels, sources } = this.config;
    const channels = dims[level + 1] as number;
    const prefix = `decoder.${j}`;
    const fused = this.ops.add(x, skip);
    const weight = this.weights.get(`${prefix}.0.conv.weight`, [2 * channels, 2 * channels, 3, 3]);
    const folded = foldRepeatedInput(weight, 2 * channels, channels, 9);
    const conv = this.ops.conv(fused, this.graph.constant(folded, [2 * channels, channels, 3, 3], 'fusion_w'), this.constant(`${prefix}.0.conv.bias`, [2 * channels]), {
      pads: [1, 1, 1, 1],
    });
    const gated = this.ops.glu(conv, 1);
    const channelsOut = level === 0 ? 2 * audioChannels * sources.length : (dims[level] as number);
    const parts = this.ops.split(gated, 2, geometry.map((g) => g.outLength));
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
    return this.ops.groupNorm(x, 1, this.weights.get(`${prefix}.weight`, [channels]), this.weights.get(`${prefix}.bias`, [channels]));
  }

  private lstmWeights(prefix: string, input: number, hidden: number) {
    const direction = (suffix: string) => ({
      weightIh: this.weights.get(`${prefix}.weight_ih_l0${suffix}`, [4 * hidden, input]),
      weightHh: this.weights.get(`${prefix}.weight_hh_l0${suffix}`, [4 * hidden, hidden]),
      biasIh: this.weights.get(`${prefix}.bias_ih_l0${suffix}`, [4 * hidden]),
      biasHh: this.weights.get(`${prefix}.bias_hh_l0${suffix}`, [4 * hidden]),
    });
    return onnxLstmWeights([direction(''), direction('_reverse')], hidden);
  }

  private constant(name: string, shape: readonly number[]): Value {
    return this.graph.constant(this.weights.get(name, shape), shape, name);
  }
}

/** A conv over `x.repeat(1, 2)` is one over x with the two input halves' kernels summed: [out, 2·half, k] → [out, half, k]. */
function foldRepeatedInput(weight: Float32Array, out: number, half: number, kernel: number): Float32Array {
  const folded = new Float32Array(out * half * kernel);
  for (let o = 0; o < out; o++) {
    for (let i = 0; i < half * kernel; i++) {
      folded[o * half * kernel + i] = (weight[(o * 2 * half) * kernel + i] as number) + (weight[(o * 2 * half + half) * kernel + i] as number);
    }
  }
  return folded;
}
