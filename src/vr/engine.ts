/**
 * UVR's VR-architecture `.pth` models, run as python-audio-separator's VRSeparator runs them
 * (architectures/vr_separator.py `separate` → `loading_mix` → `inference_vr` → `spec_to_wav`):
 *
 * 1. the track's bands: spectrograms per the model params, stacked and pre-filtered
 *    (spectrogram.ts);
 * 2. |X| zero-padded `offset` frames left (128 for VR 5.0, 64 for 5.1) and up to whole
 *    roi = window − 2·offset right, divided by its maximum; windows of `window` frames every roi
 *    through the network, each mask cropped by `offset` at both ends and concatenated; with TTA
 *    a second pass shifted by roi/2, averaged;
 * 3. aggression: the mask raised to 1 + a/3 below the first band's crop_stop and 1 + a above,
 *    a = 2·aggression/100, or 1 − a where the primary stem is a non-accompaniment stem; then
 *    optionally merge_artifacts;
 * 4. primary = spec_to_wav(mask·X), secondary = spec_to_wav((1 − mask)·X), each
 *    hop·(frames − 1) samples of the top band (shorter than the track: the rest of each stem is
 *    written as silence, since stemsplit's stems have the track's length).
 *
 * A VR model separates the whole track at once, as the official code does: the stream is read
 * into memory first.
 */
import path from 'node:path';
import { StemsplitError } from '../errors.js';
import { createOrtSession, runTensors, type OrtSessionHandle } from '../onnx/session.js';
import type { SeparationProgress, TrackModel } from '../separation/model.js';
import type { StemWriter, TrackStream } from '../separation/track-stream.js';
import { readStateDict } from '../torch/checkpoint.js';
import { buildVrGraph, GRAPH_INPUT, GRAPH_OUTPUT, type VrVersion } from './graph.js';
import { secondaryStem, stemFileName } from '../uvr/model-data.js';
import { isNonAccompanimentStem, readVrModelData, type VrModelData } from './model-data.js';
import { vrOptions, type VrOptions } from './options.js';
import { vrParams, type VrParams } from './params.js';
import { supportedResampler } from './resample.js';
import { mirrorHighEnd, mixSpectrogram, spectrogramToWave, type StereoWave } from './spectrogram.js';
import type { Spectrogram } from './stft.js';

/** VR models' output rate: the params' `sr` is 44100 for every model stemsplit runs. */
export const VR_SAMPLE_RATE = 44_100;

/** UVR's nn_arch_size classes: model_size = ⌈bytes / 1024⌉ is matched to the nearest. */
const NN_ARCH_SIZES = [31191, 33966, 56817, 123821, 123812, 129605, 218409, 537238, 537227] as const;

/** vr_separator.py's size rule (the official code picks its network class and widths by it; stemsplit reads them from the tensors). */
export function nnArchSize(fileBytes: number): number {
  const modelSize = Math.ceil(fileBytes / 1024);
  return NN_ARCH_SIZES.reduce((best, size) => (Math.abs(size - modelSize) < Math.abs(best - modelSize) ? size : best));
}

export interface VrSettings {
  readonly data: VrModelData;
  readonly params: VrParams;
  readonly options: VrOptions;
}

/** The model data, its params and the options, refused in one line where stemsplit cannot run them as UVR does. */
export function vrSettings(data: VrModelData, options: Partial<VrOptions> = {}): VrSettings {
  const params = vrParams(data.vrModelParam, data.origin);
  if (params.sr !== VR_SAMPLE_RATE) {
    throw new StemsplitError('MODEL_INVALID', `${data.origin}: VR params ${params.name} run at ${params.sr} Hz; stemsplit runs the 44100 Hz params only (the official code resamples others with soxr)`);
  }
  const unsupported = params.bands.slice(0, -1).find((band) => !supportedResampler(band.resType));
  if (unsupported !== undefined) throw new StemsplitError('MODEL_INVALID', `${data.origin}: VR params ${params.name} resample a band with ${unsupported.resType}, which stemsplit does not reproduce`);
  return { data, params, options: vrOptions(options) };
}

/** The network on one window of |X|, through ONNX Runtime. */
export class VrNetwork {
  private constructor(
    readonly version: VrVersion,
    readonly bins: number,
    readonly window: number,
    private readonly session: OrtSessionHandle,
  ) {}

  /** predict_mask's crop: frames dropped at each end of a window's mask. */
  get offset(): number {
    return this.version === '5.0' ? 128 : 64;
  }

  static async open(pthPath: string, settings: VrSettings, options: { readonly intraOpThreads?: number } = {}): Promise<VrNetwork> {
    const state = readStateDict(pthPath);
    const { windowSize } = settings.options;
    const { graph, version } = buildVrGraph(state, pthPath, settings.params.bins, windowSize);
    const offset = version === '5.0' ? 128 : 64;
    if (windowSize <= 2 * offset) throw new StemsplitError('USAGE', `--vr-window-size ${windowSize} leaves no frames: a VR ${version} network crops ${offset} frames at each end of a window`);
    const session = await createOrtSession(graph.encode().toBytes(), options.intraOpThreads === undefined ? {} : { intraOpThreads: options.intraOpThreads });
    return new VrNetwork(version, settings.params.bins, windowSize, session);
  }

  /** One window [2, bins + 1, window] → its mask, cropped to [2, bins + 1, window − 2·offset]. */
  async predict(windowData: Float32Array): Promise<Float32Array> {
    const { bins, window, offset } = this;
    const rows = 2 * (bins + 1);
    const result = await runTensors(this.session, { [GRAPH_INPUT]: { data: windowData, dims: [1, 2, bins + 1, window] } }, [GRAPH_OUTPUT]);
    const mask = (result[GRAPH_OUTPUT] as { data: Float32Array }).data;
    const roi = window - 2 * offset;
    const out = new Float32Array(rows * roi);
    for (let r = 0; r < rows; r++) out.set(mask.subarray(r * window + offset, r * window + offset + roi), r * roi);
    return out;
  }

  release(): Promise<void> {
    return this.session.release();
  }
}

export interface VrRunOptions {
  readonly onProgress?: (progress: SeparationProgress) => void;
  readonly signal?: AbortSignal;
}

/** The two stems of a stereo float32 track, each hop·(frames − 1) samples: primary first. */
export async function separateVr(network: VrNetwork, settings: VrSettings, track: StereoWave, run: VrRunOptions = {}): Promise<[StereoWave, StereoWave]> {
  const { params, options, data } = settings;
  const isV51 = network.version === '5.1';
  const mix = mixSpectrogram(track, params, isV51, options.highEndProcess);
  const { spec } = mix;
  const magnitude = new Float32Array(spec.re.length);
  for (let i = 0; i < magnitude.length; i++) magnitude[i] = Math.hypot(spec.re[i] as number, spec.im[i] as number);
  let mask = await inferMask(network, magnitude, 2 * spec.bins, spec.frames, options, run);
  mask = adjustAggression(mask, spec.bins, spec.frames, params.bands[0]?.cropStop ?? 0, options.aggression, isNonAccompanimentStem(data.primaryStem));
  if (options.enablePostProcess) mergeArtifacts(mask, 2 * spec.bins, spec.frames, options.postProcessThreshold);
  // One stem's spectrogram at a time: each is as large as the track's.
  const toWave = (inverse: boolean): StereoWave => {
    const stem = masked(spec, mask, inverse);
    const mirrored = mix.highEnd === undefined ? undefined : mirrorHighEnd(stem, mix.highEnd, params);
    return spectrogramToWave(stem, params, isV51, mirrored);
  };
  return [toWave(false), toWave(true)];
}

/**
 * make_padding's geometry for `frames` frames: |X| gets `offset` zero frames on the left (plus
 * `shift` for TTA's second pass) and enough on the right for whole windows; window p starts at
 * padded frame p·roi, and its cropped mask covers track frames [p·roi − shift, (p + 1)·roi − shift).
 */
export function vrWindows(frames: number, window: number, offset: number, shift: number): { readonly roi: number; readonly patches: number } {
  const roi = window - 2 * offset;
  const padRight = roi - (frames % roi) + offset;
  return { roi, patches: Math.floor((offset + shift + frames + padRight + shift - 2 * offset) / roi) };
}

/** inference_vr's windows (and TTA's second pass, shifted by half a roi) → the mask, `rows` = 2·(bins + 1) rows of `frames`. */
async function inferMask(network: VrNetwork, magnitude: Float32Array, rows: number, frames: number, options: VrOptions, run: VrRunOptions): Promise<Float32Array> {
  const { window, offset } = network;
  const half = Math.floor((window - 2 * offset) / 2);
  const shifts = options.enableTta ? [0, half] : [0];
  const progress = { done: 0, total: shifts.reduce((sum, shift) => sum + vrWindows(frames, window, offset, shift).patches, 0) };
  const max = maxOf(magnitude);
  const masks: Float32Array[] = [];
  for (const shift of shifts) masks.push(await maskPass(network, magnitude, rows, frames, shift, max, progress, run));
  const [first, second] = masks as [Float32Array, Float32Array | undefined];
  if (second === undefined) return first;
  return first.map((v, i) => Math.fround(Math.fround(v + (second[i] as number)) * 0.5));
}

/** One pass of windows over |X| / max, each window's cropped mask written where it falls on the track's frames. */
async function maskPass(
  network: VrNetwork,
  magnitude: Float32Array,
  rows: number,
  frames: number,
  shift: number,
  max: number,
  progress: { done: number; readonly total: number },
  run: VrRunOptions,
): Promise<Float32Array> {
  const { window, offset } = network;
  const { roi, patches } = vrWindows(frames, window, offset, shift);
  const out = new Float32Array(rows * frames);
  const windowData = new Float32Array(rows * window);
  for (let p = 0; p < patches; p++) {
    run.signal?.throwIfAborted();
    // Padded frame q is track frame q − offset − shift; padding is zeros.
    const start = p * roi - offset - shift;
    const from = Math.max(0, start);
    const to = Math.min(frames, start + window);
    windowData.fill(0);
    for (let row = 0; row < rows; row++) {
      for (let frame = from; frame < to; frame++) windowData[row * window + frame - start] = Math.fround((magnitude[row * frames + frame] as number) / max);
    }
    const mask = await network.predict(windowData);
    const first = p * roi - shift;
    const lo = Math.max(0, first);
    const hi = Math.min(frames, first + roi);
    for (let row = 0; row < rows && hi > lo; row++) out.set(mask.subarray(row * roi + lo - first, row * roi + hi - first), row * frames + lo);
    progress.done++;
    run.onProgress?.({ done: progress.done, total: progress.total });
  }
  return out;
}

function maxOf(values: Float32Array): number {
  let max = 0;
  for (const v of values) if (v > max) max = v;
  return max;
}

/** spec_utils.adjust_aggr (no aggr_correction: no params file sets one). */
function adjustAggression(mask: Float32Array, bins: number, frames: number, splitBin: number, aggression: number, nonAccompaniment: boolean): Float32Array {
  // vr_separator.py keeps aggression / 100; adjust_aggr doubles it.
  let aggr = (aggression / 100) * 2;
  if (aggr === 0) return mask;
  if (nonAccompaniment) aggr = 1 - aggr;
  // numpy raises a float32 mask to a Python float exponent in float32.
  const low = Math.fround(1 + aggr / 3);
  const high = Math.fround(1 + aggr);
  for (let c = 0; c < 2; c++) {
    for (let k = 0; k < bins; k++) {
      const exponent = k < splitBin ? low : high;
      const at = (c * bins + k) * frames;
      for (let t = 0; t < frames; t++) mask[at + t] = Math.fround(Math.pow(mask[at + t] as number, exponent));
    }
  }
  return mask;
}

/**
 * spec_utils.merge_artifacts(mask, thres): stretches of more than 64 frames where the mask is
 * above `threshold` in every bin of both channels are pushed towards 1 with 32-frame fades; where
 * the official code's slicing fails (no such frame at all, or fades that do not fit) it leaves
 * the mask as it was.
 */
export function mergeArtifacts(mask: Float32Array, rows: number, frames: number, threshold: number, minRange = 64, fadeSize = 32): void {
  const above: number[] = [];
  for (let t = 0; t < frames; t++) {
    let min = Infinity;
    for (let r = 0; r < rows; r++) min = Math.min(min, mask[r * frames + t] as number);
    if (min > threshold) above.push(t);
  }
  if (above.length === 0) return;
  const starts = [above[0] as number];
  const ends: number[] = [];
  for (let i = 1; i < above.length; i++) {
    if ((above[i] as number) - (above[i - 1] as number) !== 1) {
      ends.push(above[i - 1] as number);
      starts.push(above[i] as number);
    }
  }
  ends.push(above[above.length - 1] as number);
  const weight = new Float32Array(frames);
  const assign = (from: number, to: number, values: Float64Array | number): boolean => {
    const [a, b] = pySlice(from, to, frames);
    const count = Math.max(0, b - a);
    if (typeof values !== 'number' && values.length !== count) return false;
    for (let i = 0; i < count; i++) weight[a + i] = typeof values === 'number' ? values : (values[i] as number);
    return true;
  };
  const fadeIn = linspaceF(0, 1, fadeSize);
  const fadeOut = linspaceF(1, 0, fadeSize);
  let oldEnd: number | undefined;
  for (let i = 0; i < starts.length; i++) {
    let s = starts[i] as number;
    let e = ends[i] as number;
    if (!(e - s > minRange)) continue;
    if (oldEnd !== undefined && s - oldEnd < fadeSize) s = oldEnd - fadeSize * 2;
    if (s !== 0) {
      if (!assign(s, s + fadeSize, fadeIn)) return;
    } else s -= fadeSize;
    if (e !== frames) {
      if (!assign(e - fadeSize, e, fadeOut)) return;
    } else e += fadeSize;
    assign(s + fadeSize, e - fadeSize, 1);
    oldEnd = e;
  }
  for (let r = 0; r < rows; r++) {
    for (let t = 0; t < frames; t++) {
      const at = r * frames + t;
      const m = mask[at] as number;
      mask[at] = Math.fround(m + Math.fround((weight[t] as number) * Math.fround(1 - m)));
    }
  }
}

/** Python's slice [from:to] of a sequence of `length`: negative bounds count from the end, both clamped. */
function pySlice(from: number, to: number, length: number): [number, number] {
  const norm = (i: number) => Math.min(length, Math.max(0, i < 0 ? i + length : i));
  return [norm(from), norm(to)];
}

function linspaceF(a: number, b: number, n: number): Float64Array {
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) out[i] = a + ((b - a) * i) / (n - 1);
  out[n - 1] = b;
  return out;
}

/** mask·|X|·e^{i∠X} (or (1 − mask)·…), complex64, NaN and ±∞ as 0 (nan_to_num). */
function masked(spec: Spectrogram, mask: Float32Array, inverse: boolean): Spectrogram {
  const re = new Float32Array(spec.re.length);
  const im = new Float32Array(spec.im.length);
  for (let i = 0; i < re.length; i++) {
    const m = inverse ? Math.fround(1 - (mask[i] as number)) : (mask[i] as number);
    const xr = spec.re[i] as number;
    const xi = spec.im[i] as number;
    const magnitude = Math.fround(m * Math.fround(Math.hypot(xr, xi)));
    const phase = Math.fround(Math.atan2(xi, xr));
    const r = Math.fround(magnitude * Math.fround(Math.cos(phase)));
    const j = Math.fround(magnitude * Math.fround(Math.sin(phase)));
    re[i] = Number.isFinite(r) ? r : 0;
    im[i] = Number.isFinite(j) ? j : 0;
  }
  return { bins: spec.bins, frames: spec.frames, re, im };
}

/** What `loadVr` needs of a model reference. */
export interface VrModelRef {
  readonly path: string;
  readonly name?: string;
  readonly options?: { readonly vr?: Partial<VrOptions> };
}

/** The stems a model of `primaryStem` writes: UVR's names lower-cased, primary first. */
export function vrSources(primaryStem: string): [string, string] {
  return [stemFileName(primaryStem), stemFileName(secondaryStem(primaryStem))];
}

/** A VR `.pth` as a stemsplit model: model data from NAME.json or the built-in table, the reference's VR options. */
export async function loadVr(ref: VrModelRef, options: { readonly intraOpThreads?: number } = {}): Promise<TrackModel> {
  const settings = vrSettings(readVrModelData(ref.path), ref.options?.vr);
  const network = await VrNetwork.open(ref.path, settings, options);
  return {
    name: ref.name ?? path.basename(ref.path).replace(/\.pth$/i, ''),
    sampleRate: VR_SAMPLE_RATE,
    sources: vrSources(settings.data.primaryStem),
    normalize: false,
    stereoForMono: true,
    streamTrack: (input, write, run) => streamVr(network, settings, input, write, run),
    dispose: () => network.release(),
  };
}

/** Reads the whole stream, separates it and writes both stems, padded with silence to the track's length. */
async function streamVr(network: VrNetwork, settings: VrSettings, input: TrackStream, write: StemWriter, run: VrRunOptions): Promise<void> {
  const track = await readTrack(input);
  const stems = await separateVr(network, settings, track, run);
  const { length } = input;
  const block = 1 << 16;
  for (let start = 0; start < length; start += block) {
    const count = Math.min(block, length - start);
    const planes = stems.map((stem) => {
      const plane = new Float32Array(2 * count);
      for (let c = 0; c < 2; c++) {
        const channel = stem[c] as Float64Array;
        for (let i = 0; i < count && start + i < channel.length; i++) plane[c * count + i] = channel[start + i] as number;
      }
      return plane;
    });
    await write(planes, count);
  }
}

async function readTrack(input: TrackStream): Promise<StereoWave> {
  const track: StereoWave = [new Float64Array(input.length), new Float64Array(input.length)];
  let at = 0;
  for await (const block of input.frames) {
    const frames = block.length / 2;
    if (at + frames > input.length) throw new StemsplitError('SEPARATION_FAILED', `the track yielded more than the ${input.length} samples it announced`);
    for (let i = 0; i < frames; i++) {
      track[0][at + i] = block[2 * i] as number;
      track[1][at + i] = block[2 * i + 1] as number;
    }
    at += frames;
  }
  if (at !== input.length) throw new StemsplitError('SEPARATION_FAILED', `the track yielded ${at} of the ${input.length} samples it announced`);
  return track;
}
