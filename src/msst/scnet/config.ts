/**
 * The `model` section of an SCNet MSST config (the keyword arguments of `SCNet(**config.model)`
 * in models/scnet/scnet.py; the rest of the yaml is msst/config.ts). Every constructor option is
 * read with the official defaults; anything else is refused by name.
 */
import { msstCommon, MsstDocument, readMsstDocument, type MsstCommon } from '../config.js';

/** One of the three frequency bands (low, mid, high) of the sparse down/up-sample layers. */
export interface ScnetBand {
  /** Share of the bins (`band_SR`). */
  readonly share: number;
  readonly stride: number;
  readonly kernel: number;
}

export interface ScnetConfig extends MsstCommon {
  readonly sources: readonly string[];
  /** Channels of each encoder level; dims[0] is 2 · audio channels (real and imaginary parts). */
  readonly dims: readonly number[];
  readonly nFft: number;
  readonly hop: number;
  readonly winLength: number;
  readonly normalized: boolean;
  readonly bands: readonly [ScnetBand, ScnetBand, ScnetBand];
  /** Residual layers of the convolution module of each band. */
  readonly convDepths: readonly [number, number, number];
  readonly compress: number;
  readonly convKernel: number;
  readonly numDualPathLayers: number;
  readonly expand: number;
}

const OPTIONS = new Set([
  'sources',
  'audio_channels',
  'dims',
  'nfft',
  'hop_size',
  'win_size',
  'normalized',
  'band_SR',
  'band_stride',
  'band_kernel',
  'conv_depths',
  'compress',
  'conv_kernel',
  'num_dplayer',
  'expand',
]);

/** `segmentSize`: the run's `--mdxc-segment-size` (msst/config.ts). */
export function readScnetConfig(file: string, segmentSize?: number): ScnetConfig {
  return scnetConfigOf(readMsstDocument(file, segmentSize));
}

/** A parsed yaml document (tests and benchmarks build them in memory). */
export function parseScnetConfig(document: unknown, file: string): ScnetConfig {
  return scnetConfigOf(new MsstDocument(document, file));
}

const isNumber = (item: unknown): item is number => typeof item === 'number' && Number.isFinite(item);
const isInteger = (item: unknown): item is number => Number.isInteger(item);
const isName = (item: unknown): item is string => typeof item === 'string';

export function scnetConfigOf(doc: MsstDocument): ScnetConfig {
  const { model } = doc;
  doc.refuseUnknown('scnet', OPTIONS);
  const int = doc.int.bind(doc);
  const three = <T>(key: string, check: (item: unknown) => item is T, what: string, fallback: readonly T[]): [T, T, T] => {
    const values = doc.list(model, key, check, what, fallback);
    if (values.length !== 3) throw doc.fail(`${key} must list 3 values (low, mid and high band), got ${values.length}`);
    return values as [T, T, T];
  };

  const sources = doc.list(model, 'sources', isName, 'names', ['drums', 'bass', 'other', 'vocals']);
  if (sources.length === 0) throw doc.fail('sources must name at least one stem');
  const audioChannels = int(model, 'audio_channels', 2, 1);
  if (audioChannels !== 1 && audioChannels !== 2) throw doc.fail(`audio_channels must be 1 or 2, got ${audioChannels}`);
  const dims = doc.list(model, 'dims', isInteger, 'integers', [4, 32, 64, 128]);
  if (dims.length < 2 || dims.some((d) => d < 1)) throw doc.fail('dims must list at least two positive channel counts');
  if (dims[0] !== 2 * audioChannels) throw doc.fail(`dims[0] must be 2 · audio_channels = ${2 * audioChannels} (the real and imaginary parts), got ${dims[0]}`);

  const nFft = int(model, 'nfft', 4096, 4);
  const winLength = int(model, 'win_size', 4096, 1);
  if (winLength > nFft) throw doc.fail(`win_size ${winLength} is longer than nfft ${nFft}`);
  const shares = three('band_SR', isNumber, 'numbers', [0.175, 0.392, 0.433]);
  const strides = three('band_stride', isInteger, 'integers', [1, 4, 16]);
  const kernels = three('band_kernel', isInteger, 'integers', [3, 4, 16]);
  if (strides.some((s) => s < 1) || kernels.some((k) => k < 1)) throw doc.fail('band_stride and band_kernel must be positive');
  const bands = [0, 1, 2].map((i) => ({ share: shares[i] as number, stride: strides[i] as number, kernel: kernels[i] as number })) as [
    ScnetBand,
    ScnetBand,
    ScnetBand,
  ];
  // ConvolutionModule takes abs(depth).
  const convDepths = three('conv_depths', isInteger, 'integers', [3, 2, 1]).map(Math.abs) as [number, number, number];
  const compress = doc.number(model, 'compress', 4);
  if (compress <= 0) throw doc.fail(`compress must be positive, got ${compress}`);
  const convKernel = int(model, 'conv_kernel', 3, 1);
  if (convKernel % 2 !== 1) throw doc.fail(`conv_kernel must be odd, got ${convKernel}`);
  const numDualPathLayers = int(model, 'num_dplayer', 6);
  // Even layers rfft the time axis and odd ones invert it: an odd count leaves the decoder a spectrum (the official code fails too).
  if (numDualPathLayers % 2 !== 0) throw doc.fail(`num_dplayer must be even, got ${numDualPathLayers}`);

  const hop = int(model, 'hop_size', 1024, 1);
  const common = msstCommon(doc, { channels: audioChannels, numStems: sources.length, stemsFrom: 'the number of model.sources', stft: { hop, nFft } });
  return {
    ...common,
    sources,
    dims,
    nFft,
    hop,
    winLength,
    normalized: doc.bool(model, 'normalized', true),
    bands,
    convDepths,
    compress,
    convKernel,
    numDualPathLayers,
    expand: int(model, 'expand', 1, 1),
  };
}
