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
 * stemsplit streams it (stream.ts): the track is read twice (the first pass for |X|'s maximum)
 * and separated block by block, each step computed exactly as over the whole track, so memory
 * does not grow with the track's length.
 */
import path from 'node:path';
import { StemsplitError } from '../errors.js';
import { createOrtSession, runTensors, type OrtSessionHandle } from '../onnx/session.js';
import type { TrackModel } from '../separation/model.js';
import { invertingSecondary } from '../separation/spectral-inversion.js';
import { checkStateDict, readStateDict } from '../torch/checkpoint.js';
import { buildVrGraph, GRAPH_INPUT, GRAPH_OUTPUT, type VrVersion } from './graph.js';
import { secondaryStem, stemFileName } from '../uvr/model-data.js';
import { readVrModelData, type VrModelData } from './model-data.js';
import { vrOptions, type VrOptions } from './options.js';
import { vrParams, type VrParams } from './params.js';
import { atModelRate, stemLengthAtTrackRate, type StemSeparation } from './rate.js';
import { vrResamplingProblem } from './resample.js';
import type { StereoWave } from './spectrogram.js';
import { vrGeometry } from './geometry.js';
import { streamVr, type VrStreamOptions } from './stream.js';

/** The track's and the stems' rate; params at another rate run at theirs in between (rate.ts), as vr_separator.py runs them. */
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
  const problem = vrResamplingProblem(params, VR_SAMPLE_RATE);
  if (problem !== undefined) throw new StemsplitError('MODEL_INVALID', `${data.origin}: VR params ${params.name} ${problem}`);
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
    const { windowSize } = settings.options;
    // Weights that do not fit the params are refused from the checkpoint's shapes, before any is read.
    buildVrGraph(checkStateDict(pthPath), pthPath, settings.params.bins, windowSize);
    const { graph, version } = buildVrGraph(readStateDict(pthPath), pthPath, settings.params.bins, windowSize);
    const offset = version === '5.0' ? 128 : 64;
    if (windowSize <= 2 * offset)
      throw new StemsplitError(
        'USAGE',
        `--vr-window-size ${windowSize} leaves no frames: a VR ${version} network crops ${offset} frames at each end of a window`,
      );
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

/**
 * The two stems of a stereo float32 track held in memory, each hop·(frames − 1) samples as the
 * official code returns them, primary first: the streamed separation, collected.
 */
export async function separateVr(network: VrNetwork, settings: VrSettings, track: StereoWave, run: VrStreamOptions = {}): Promise<[StereoWave, StereoWave]> {
  const length = track[0].length;
  const stems: [StereoWave, StereoWave] = [
    [new Float64Array(length), new Float64Array(length)],
    [new Float64Array(length), new Float64Array(length)],
  ];
  let at = 0;
  const collect = (planes: readonly Float32Array[], frames: number): void => {
    for (const [s, stem] of stems.entries()) {
      const plane = planes[s] as Float32Array;
      stem[0].set(plane.subarray(0, frames), at);
      stem[1].set(plane.subarray(frames, 2 * frames), at);
    }
    at += frames;
  };
  await separation(network, settings)({ length, frames: interleaved(track), reread: () => interleaved(track) }, collect, run);
  const kept = stemLengthAtTrackRate(settings.params, VR_SAMPLE_RATE, length, officialLength(settings.params));
  return stems.map((stem) => stem.map((channel) => channel.slice(0, kept))) as [StereoWave, StereoWave];
}

/** streamVr at the track's rate: params at another rate are resampled in and out as vr_separator.py does (rate.ts). */
function separation(network: VrNetwork, settings: VrSettings): StemSeparation<VrStreamOptions> {
  return atModelRate(settings.params, VR_SAMPLE_RATE, officialLength(settings.params), (input, write, run) => streamVr(network, settings, input, write, run));
}

/** The official stems' length (hop·(frames − 1) of the top band) for a track of `length` samples at the params' rate. */
function officialLength(params: VrParams): (length: number) => number {
  return (length) => vrGeometry(params, length).outputLengths.at(-1) as number;
}

/** A stereo track as one interleaved block. */
async function* interleaved(track: StereoWave): AsyncGenerator<Float32Array> {
  const block = new Float32Array(2 * track[0].length);
  for (let i = 0; i < track[0].length; i++) {
    block[2 * i] = track[0][i] as number;
    block[2 * i + 1] = track[1][i] as number;
  }
  yield block;
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
    streamTrack: settings.options.invertSpect === true ? invertingSecondary(separation(network, settings)) : separation(network, settings),
    dispose: () => network.release(),
  };
}
