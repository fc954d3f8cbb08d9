/**
 * The parameters HDemucs and Demucs construct, by name and shape, in PyTorch's order
 * (`named_parameters`: each module's own, then its children in the order `__init__` assigned
 * them). A diffq-quantized state stores its tensors in that order without names, so this is
 * how they get theirs back.
 */
import type { DConvConfig, DemucsConfig, HDemucsConfig, V3Config } from './v3-config.js';

export type ParameterShapes = [string, number[]][];

const ATTENTION_HEADS = 4;
const ATTENTION_DECAYS = 4;

export function v3Parameters(config: V3Config): ParameterShapes {
  return config.klass === 'HDemucs' ? hybridUNetParameters(config) : demucsParameters(config);
}

export class Parameters {
  readonly list: ParameterShapes = [];

  add(name: string, shape: number[]): void {
    this.list.push([name, shape]);
  }

  /** Conv (weight [out, in, ...kernel]) or ConvTranspose (weight [in, out, ...kernel]), with bias. */
  conv(prefix: string, weight: number[], bias: number): void {
    this.add(`${prefix}.weight`, weight);
    this.add(`${prefix}.bias`, [bias]);
  }

  groupNorm(prefix: string, channels: number, present: boolean): void {
    if (!present) return;
    this.add(`${prefix}.weight`, [channels]);
    this.add(`${prefix}.bias`, [channels]);
  }

  /** DConv(channels): per layer conv, norm, [BLSTM], [LocalState], conv, norm, LayerScale. */
  dconv(prefix: string, channels: number, config: DConvConfig, layer: number): void {
    const hidden = Math.trunc(channels / config.compress);
    for (let d = 0; d < Math.abs(config.depth); d++) {
      const p = `${prefix}.layers.${d}`;
      this.conv(`${p}.0`, [hidden, channels, 3], hidden);
      this.groupNorm(`${p}.1`, hidden, true);
      let next = 3;
      if (layer >= config.lstmFrom) this.blstm(`${p}.${next++}`, hidden);
      if (layer >= config.attnFrom) this.localState(`${p}.${next++}`, hidden);
      this.conv(`${p}.${next++}`, [2 * channels, hidden, 1], 2 * channels);
      this.groupNorm(`${p}.${next++}`, 2 * channels, true);
      next++; // GLU
      this.add(`${p}.${next}.scale`, [channels]);
    }
  }

  private blstm(prefix: string, dim: number): void {
    for (let layer = 0; layer < 2; layer++) {
      for (const suffix of ['', '_reverse']) {
        const input = layer === 0 ? dim : 2 * dim;
        this.add(`${prefix}.lstm.weight_ih_l${layer}${suffix}`, [4 * dim, input]);
        this.add(`${prefix}.lstm.weight_hh_l${layer}${suffix}`, [4 * dim, dim]);
        this.add(`${prefix}.lstm.bias_ih_l${layer}${suffix}`, [4 * dim]);
        this.add(`${prefix}.lstm.bias_hh_l${layer}${suffix}`, [4 * dim]);
      }
    }
    this.conv(`${prefix}.linear`, [dim, 2 * dim], dim);
  }

  private localState(prefix: string, channels: number): void {
    for (const name of ['content', 'query', 'key']) this.conv(`${prefix}.${name}`, [channels, channels, 1], channels);
    this.conv(`${prefix}.query_decay`, [ATTENTION_HEADS * ATTENTION_DECAYS, channels, 1], ATTENTION_HEADS * ATTENTION_DECAYS);
    this.conv(`${prefix}.proj`, [channels, channels, 1], channels);
  }
}

interface HEncArgs {
  readonly chin: number;
  readonly chout: number;
  readonly kernel: number;
  readonly freq: boolean;
  readonly norm: boolean;
  readonly empty: boolean;
  readonly index: number;
}

/**
 * What HDemucs' U-Net and HTDemucs' (its copy around a transformer) are built from: HTDemucs has
 * `channels_time` (HDemucs refuses it), and neither its MultiWrap nor a time-only tail.
 */
export type HybridUNetConfig = Pick<
  HDemucsConfig,
  | 'audioChannels'
  | 'cac'
  | 'channels'
  | 'context'
  | 'contextEnc'
  | 'dconv'
  | 'depth'
  | 'freqEmb'
  | 'growth'
  | 'kernelSize'
  | 'multiFreqs'
  | 'multiFreqsDepth'
  | 'nfft'
  | 'normStarts'
  | 'rewrite'
  | 'sources'
  | 'stride'
  | 'timeStride'
> & { readonly channelsTime?: number | null };

/** The encoders', decoders' and frequency embedding's parameters of HDemucs or HTDemucs (`HDemucs.__init__`'s loop). */
export function hybridUNetParameters(config: HybridUNetConfig): ParameterShapes {
  const encoder: ((p: Parameters, prefix: string) => void)[] = [];
  const decoder: ((p: Parameters, prefix: string) => void)[] = [];
  const tencoder: ((p: Parameters, prefix: string) => void)[] = [];
  const tdecoder: ((p: Parameters, prefix: string) => void)[] = [];
  let freqEmbedding: [number, number] | undefined;

  const encoderLayer = (a: HEncArgs, context: number) => (p: Parameters, prefix: string) => {
    const kernel = a.freq ? [a.kernel, 1] : [a.kernel];
    p.conv(`${prefix}.conv`, [a.chout, a.chin, ...kernel], a.chout);
    if (a.empty) return;
    p.groupNorm(`${prefix}.norm1`, a.chout, a.norm);
    if (config.rewrite) {
      const k = 1 + 2 * context;
      p.conv(`${prefix}.rewrite`, [2 * a.chout, a.chout, ...(a.freq ? [k, k] : [k])], 2 * a.chout);
      p.groupNorm(`${prefix}.norm2`, 2 * a.chout, a.norm);
    }
    if (config.dconv.mode & 1) p.dconv(`${prefix}.dconv`, a.chout, config.dconv, a.index);
  };
  const decoderLayer = (a: HEncArgs, contextFreq: boolean) => (p: Parameters, prefix: string) => {
    const kernel = a.freq ? [a.kernel, 1] : [a.kernel];
    // HDecLayer(chin, chout): its ConvTranspose takes chin channels to chout.
    p.conv(`${prefix}.conv_tr`, [a.chin, a.chout, ...kernel], a.chout);
    p.groupNorm(`${prefix}.norm2`, a.chout, a.norm);
    if (a.empty) return;
    if (config.rewrite) {
      const k = 1 + 2 * config.context;
      const rewriteKernel = a.freq ? (contextFreq ? [k, k] : [1, k]) : [k];
      p.conv(`${prefix}.rewrite`, [2 * a.chin, a.chin, ...rewriteKernel], 2 * a.chin);
      p.groupNorm(`${prefix}.norm1`, 2 * a.chin, a.norm);
    }
    if (config.dconv.mode & 2) p.dconv(`${prefix}.dconv`, a.chin, config.dconv, a.index);
  };
  const wrapped = (layer: (p: Parameters, prefix: string) => void, bands: number) => (p: Parameters, prefix: string) => {
    for (let k = 0; k < bands; k++) layer(p, `${prefix}.layers.${k}`);
  };

  let chin = config.audioChannels;
  let chinZ = config.cac ? 2 * chin : chin;
  // Python's `channels_time or channels`.
  let chout = config.channelsTime || config.channels;
  let choutZ = config.channels;
  let freqs = config.nfft / 2;
  for (let index = 0; index < config.depth; index++) {
    const norm = index >= config.normStarts;
    const freq = freqs > 1;
    let kernel = freq ? config.kernelSize : config.timeStride * 2;
    const lastFreq = freq && freqs <= config.kernelSize;
    if (lastFreq) kernel = freqs;
    const multi = config.multiFreqs.length > 0 && index < config.multiFreqsDepth;
    if (lastFreq) {
      choutZ = Math.max(chout, choutZ);
      chout = choutZ;
    }
    const enc = encoderLayer({ chin: chinZ, chout: choutZ, kernel, freq, norm, empty: false, index }, config.contextEnc);
    if (freq) tencoder.push(encoderLayer({ chin, chout, kernel: config.kernelSize, freq: false, norm, empty: lastFreq, index }, config.contextEnc));
    encoder.push(multi ? wrapped(enc, config.multiFreqs.length + 1) : enc);
    if (index === 0) {
      chin = config.audioChannels * config.sources.length;
      chinZ = config.cac ? 2 * chin : chin;
    }
    const dec = decoderLayer({ chin: choutZ, chout: chinZ, kernel, freq, norm, empty: false, index }, !multi);
    if (freq) tdecoder.unshift(decoderLayer({ chin: chout, chout: chin, kernel: config.kernelSize, freq: false, norm, empty: lastFreq, index }, true));
    decoder.unshift(multi ? wrapped(dec, config.multiFreqs.length + 1) : dec);
    chin = chout;
    chinZ = choutZ;
    chout = Math.trunc(config.growth * chout);
    choutZ = Math.trunc(config.growth * choutZ);
    if (freq) freqs = freqs <= config.kernelSize ? 1 : Math.floor(freqs / config.stride);
    if (index === 0 && config.freqEmb > 0) freqEmbedding = [freqs, chinZ];
  }
  const p = new Parameters();
  encoder.forEach((layer, i) => layer(p, `encoder.${i}`));
  decoder.forEach((layer, i) => layer(p, `decoder.${i}`));
  tencoder.forEach((layer, i) => layer(p, `tencoder.${i}`));
  tdecoder.forEach((layer, i) => layer(p, `tdecoder.${i}`));
  if (freqEmbedding !== undefined) p.add('freq_emb.embedding.weight', freqEmbedding);
  return p.list;
}

function demucsParameters(config: DemucsConfig): ParameterShapes {
  const encoder: ((p: Parameters) => void)[] = [];
  const decoder: ((p: Parameters) => void)[] = [];
  const scale = config.glu ? 2 : 1;
  let inChannels = config.audioChannels;
  let channels = config.channels;
  for (let index = 0; index < config.depth; index++) {
    const norm = index >= config.normStarts;
    const [cin, ch] = [inChannels, channels];
    encoder.push((p) => {
      const e = `encoder.${index}`;
      p.conv(`${e}.0`, [ch, cin, config.kernelSize], ch);
      p.groupNorm(`${e}.1`, ch, norm);
      let next = 3;
      if (config.dconv.mode & 1) p.dconv(`${e}.${next++}`, ch, config.dconv, index);
      if (config.rewrite) {
        p.conv(`${e}.${next}`, [scale * ch, ch, 1], scale * ch);
        p.groupNorm(`${e}.${next + 1}`, scale * ch, norm);
      }
    });
    const out = index > 0 ? inChannels : config.sources.length * config.audioChannels;
    decoder.unshift((p) => {
      const d = `decoder.${config.depth - 1 - index}`;
      let next = 0;
      if (config.rewrite) {
        p.conv(`${d}.0`, [scale * ch, ch, 2 * config.context + 1], scale * ch);
        p.groupNorm(`${d}.1`, scale * ch, norm);
        next = 3;
      }
      if (config.dconv.mode & 2) p.dconv(`${d}.${next++}`, ch, config.dconv, index);
      p.conv(`${d}.${next}`, [ch, out, config.kernelSize], out);
      if (index > 0) p.groupNorm(`${d}.${next + 1}`, out, norm);
    });
    inChannels = channels;
    channels = Math.trunc(config.growth * channels);
  }
  const p = new Parameters();
  for (const layer of [...encoder, ...decoder]) layer(p);
  return p.list;
}
