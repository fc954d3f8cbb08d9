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
 * Demucs v2 is built in v2-graph.ts, both from the layers of v3-builder.ts.
 */
import { StemsplitError } from '../errors.js';
import type { CheckpointTensor } from '../torch/checkpoint.js';
import { type Value } from '../onnx/graph.js';
import { Ops, type OpsOptions } from '../onnx/ops.js';
import type { GraphStage } from '../onnx/stages.js';
import type { HDemucsConfig } from './v3-config.js';
import { DCONV_ROWS, V3Builder } from './v3-builder.js';

export const V3_INPUTS = { spec: 'spec', wave: 'wave' } as const;
export const V3_OUTPUTS = { spec: 'spec_out', wave: 'wave_out' } as const;

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
      const outs = b.stage(
        p,
        below === undefined ? [skip] : [below, skip],
        (...values) => {
          const skipValue = values[values.length - 1] as Value;
          const input = below === undefined ? b.ops.mul(skipValue, b.graph.scalar(0, 'zero')) : (values[0] as Value);
          if (layer.bands.length > 0) {
            const out = this.decodeBands(p, layer, input, skipValue, last);
            return givesPre ? [out, out] : [out];
          }
          if (!givesPre && this.rowBanded(p, layer, input)) return [this.decodeRows(p, layer, input, skipValue, last)];
          const [out, pre] = this.decode(p, layer, input, skipValue, frameCount, last);
          return givesPre ? [out, pre] : [out];
        },
        last ? [V3_OUTPUTS.spec] : undefined,
      );
      y = outs[0] as Value;
      if (tlayer !== undefined) {
        const lengthT = lengthsT.pop() as number;
        const tp = `tdecoder.${step - offset}`;
        const names = last ? [V3_OUTPUTS.wave] : undefined;
        if (tlayer.empty) {
          [yt] = b.stage(
            tp,
            [outs[1] as Value],
            (pre) => {
              const flat = b.ops.reshape(pre as Value, [1, (pre as Value).shape[1] as number, (pre as Value).shape[3] as number]);
              return [this.decode(tp, tlayer, flat, undefined, lengthT, last)[0]];
            },
            names,
          ) as [Value];
        } else {
          [yt] = b.stage(
            tp,
            [yt as Value, savedT.pop() as Value],
            (input, skipT) => [this.decode(tp, tlayer, input as Value, skipT, lengthT, last)[0]],
            names,
          ) as [Value];
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
    const rowwise =
      config.rewrite &&
      y.shape.length === 4 &&
      !layer.norm &&
      b.state
        .get(`${p}.rewrite.weight`)
        .shape.slice(2)
        .every((k) => k === 1);
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

export function buildHDemucsStages(
  config: HDemucsConfig,
  state: ReadonlyMap<string, CheckpointTensor>,
  file: string,
  length: number,
  options: OpsOptions = {},
): GraphStage[] {
  const frames = Math.ceil(length / (config.nfft / 4));
  return new HDemucsBuilder(config, state, file, options).build(frames, length);
}
