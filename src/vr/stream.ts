/**
 * A VR separation over a streamed track, in memory that does not grow with the track's length,
 * giving the stems UVR's whole-track computation gives (engine.ts lists its steps).
 *
 * Every step is local in time except one: |X| is divided by its maximum over the whole track.
 * So the track is read twice: a first pass computes the spectrogram block by block for that
 * maximum alone; the second computes it again, block by block, and runs the network on it.
 * merge_artifacts (the post-process) looks for runs of clean frames, which is local too, within
 * mask.ts' ARTIFACT_REACH frames.
 *
 * Within a pass, each step is computed for a range of its output from a slice of its input that
 * reaches past every sample the range depends on, so each value is computed from the same
 * numbers in the same order as the whole track's computation makes it:
 *
 * - a band's wave (input side) is the band above resampled from a slice that reaches past the
 *   filter on both sides: for resample_poly the slice starts on a sample where its phase is that
 *   of the track's start (a multiple of `down` input samples for up/down; zeros before the track
 *   as it pads them); for libsamplerate its walk (position and buffer counts, which depend on the
 *   band's length alone) is carried to the range's first output, so any ratio slices exactly and
 *   the range stops where libsamplerate stops;
 * - a band's STFT frames come from the band's samples around them (zeros outside the band);
 * - the network's windows are UVR's windows (every roi frames, offset and TTA shift as
 *   make_padding lays them), run once each, their masks kept in blocks of frames;
 * - a stem's samples at a band's rate are that band's iSTFT over the frames that reach them, plus
 *   the lower bands' sum resampled upwards (sinc_fastest) from a slice as on the input side (stem-waves.ts).
 *
 * Params at another rate than the track's are streamed in and out of it by rate.ts. The `reverse`
 * params transform each band flipped and flip each band's stem back: their frames run from the
 * track's end, so the same blocks are computed from a copy of the track read backwards, the stems
 * made from the end and written out forwards once whole (spool.ts; disk, not memory).
 */
import type { SeparationProgress } from '../separation/model.js';
import { IDENTITY } from '../separation/normalization.js';
import { TrackWindow, type StemWriter, type TrackStream } from '../separation/track-stream.js';
import { adjustAggression, applyArtifactWeights, ARTIFACT_REACH, artifactWeights, cleanFrames, masked } from './mask.js';
import { isNonAccompanimentStem } from './model-data.js';
import type { VrOptions } from './options.js';
import type { VrBand, VrParams } from './params.js';
import { vrGeometry, vrWindows, type VrGeometry } from './geometry.js';
import { flipped, InputSpectrogram, type SpectrogramBlock, type TrackSource } from './input-spectrogram.js';
import { slicedExactly } from './range-resampler.js';
import { Spool } from './spool.js';
import { StemWaves, type StemFrames } from './stem-waves.js';
import { emptySpectrogram, type Spectrogram } from './stft.js';

/** What the stream needs of the network (engine.ts' VrNetwork). */
export interface MaskNetwork {
  readonly version: '5.0' | '5.1';
  readonly window: number;
  /** predict_mask's crop at each end of a window. */
  readonly offset: number;
  /** One window [2, bins + 1, window] of |X| / max → its mask cropped to [2, bins + 1, window − 2·offset]. */
  predict(windowData: Float32Array): Promise<Float32Array>;
}

export interface VrStreamSettings {
  readonly params: VrParams;
  readonly options: VrOptions;
  readonly data: { readonly primaryStem: string };
}

export interface VrStreamOptions {
  readonly onProgress?: (progress: SeparationProgress) => void;
  readonly signal?: AbortSignal;
  /** Frames per block (default: one roi of the network's windows); a block of the whole track or more computes it at once. */
  readonly blockFrames?: number;
}

/** Separates the streamed track, writing both stems (primary first) block by block, the track's length each (silence after hop·(frames − 1)). */
export async function streamVr(
  network: MaskNetwork,
  settings: VrStreamSettings,
  input: TrackStream,
  write: StemWriter,
  run: VrStreamOptions = {},
): Promise<void> {
  const { params } = settings;
  const geometry = vrGeometry(params, input.length);
  const roi = network.window - 2 * network.offset;
  const requested = Math.max(1, run.blockFrames ?? roi);
  const whole = !slicedExactly(params) || requested >= geometry.frames;
  const isV51 = network.version === '5.1';
  const plan: VrPlan = {
    network,
    settings,
    geometry,
    isV51,
    whole,
    reversed: params.channels === 'reverse' && !isV51,
    blockFrames: whole ? geometry.frames : requested,
  };
  if (plan.reversed) return streamReversed(plan, input, write, run);
  const { reread } = input;
  if (reread === undefined) throw new Error('unreachable: a VR model reads its track twice, and this stream cannot be read again');
  const peakWindow = new TrackWindow(input, trackSpan(params, whole ? geometry.frames : PEAK_BLOCK_FRAMES));
  const max = await spectrogramPeak(plan, windowSource(peakWindow), run.signal).then(
    async (peak) => (await peakWindow.finish(), peak),
    async (error: unknown) => {
      await peakWindow.close();
      throw error;
    },
  );
  const window = new TrackWindow({ length: input.length, frames: reread() }, trackSpan(params, plan.blockFrames));
  try {
    await separateBlocks(plan, windowSource(window), max, run, write);
    await window.finish();
  } catch (error) {
    await window.close();
    throw error;
  }
}

/** What one separation computes, and how. */
interface VrPlan {
  readonly network: MaskNetwork;
  readonly settings: VrStreamSettings;
  readonly geometry: VrGeometry;
  readonly isV51: boolean;
  readonly whole: boolean;
  /** `reverse` params (VR 5.0): each band is transformed flipped, so the computation runs from the track's end. */
  readonly reversed: boolean;
  readonly blockFrames: number;
}

/**
 * The `reverse` params: the track is copied to a raw file (the first pass: the peak is any
 * block's), read backwards from it by the second, whose stems, made from the end, go to raw files
 * that are written out forwards at the end (spool.ts; the disk is 24 bytes a sample).
 */
async function streamReversed(plan: VrPlan, input: TrackStream, write: StemWriter, run: VrStreamOptions): Promise<void> {
  const spool = await Spool.create();
  try {
    const track = await spool.track(input.frames, input.length, run.signal);
    try {
      const source: TrackSource = { read: (start, end) => track.read(start, end), discardBefore: () => undefined };
      const max = await spectrogramPeak(plan, source, run.signal);
      const stems = await spool.stems(2, input.length);
      try {
        await separateBlocks(plan, source, max, run, (planes, frames, start) => stems.put(planes, start, frames));
        await stems.replay(write, run.signal);
      } finally {
        await stems.close();
      }
    } finally {
      await track.close();
    }
  } finally {
    await spool.remove();
  }
}

function windowSource(window: TrackWindow): TrackSource {
  return {
    async read(start, end) {
      const count = end - start;
      await window.ensure(end);
      const planar = new Float32Array(2 * count);
      window.read(start, count, IDENTITY, planar);
      return [Float64Array.from(planar.subarray(0, count)), Float64Array.from(planar.subarray(count))];
    },
    discardBefore: (position) => window.discardBefore(position),
  };
}

/** The second pass: the stems, block by block, written in the order they are made (from the end for `reverse`), with each block's first sample. */
async function separateBlocks(
  plan: VrPlan,
  track: TrackSource,
  max: number,
  run: VrStreamOptions,
  emit: (planes: Float32Array[], frames: number, start: number) => Promise<void> | void,
): Promise<void> {
  const { settings, geometry, whole, reversed, blockFrames } = plan;
  const { params } = settings;
  const source = new InputSpectrogram(params, plan.isV51, settings.options.highEndProcess, geometry, track, whole, reversed);
  const masks = new MaskStore(plan.network, settings, source, geometry, blockFrames, max, run);
  const stems = new StemWaves(params, plan.isV51, geometry, masks, whole, reversed);
  const top = params.bands.length - 1;
  const length = geometry.inputLengths[top] as number;
  const segment = whole ? length : blockFrames * (params.bands[top] as VrBand).hl;
  const starts = Array.from({ length: Math.ceil(length / segment) }, (_, i) => i * segment);
  if (reversed) starts.reverse();
  for (const start of starts) {
    run.signal?.throwIfAborted();
    const end = Math.min(length, start + segment);
    const planes: Float32Array[] = [];
    for (const inverse of [false, true]) {
      const wave = await stems.level(top, start, end, inverse);
      const plane = new Float32Array(2 * (end - start));
      plane.set(wave[0]);
      plane.set(wave[1], end - start);
      planes.push(plane);
    }
    masks.release();
    await emit(planes, end - start, start);
  }
}

/** Track samples one block of frames reaches, with room for the resamplers' reach. */
function trackSpan(params: VrParams, blockFrames: number): number {
  const top = params.bands[params.bands.length - 1] as VrBand;
  return (blockFrames + 4) * top.hl + 4 * top.nFft;
}

/** Frames per block of the first pass (which keeps nothing but the maximum). */
const PEAK_BLOCK_FRAMES = 256;

/** First pass: the largest |X| of the stacked spectrogram (inference_vr's X_mag_pad.max()), block by block. */
async function spectrogramPeak(plan: VrPlan, track: TrackSource, signal: AbortSignal | undefined): Promise<number> {
  const { geometry, whole } = plan;
  const blockFrames = whole ? geometry.frames : PEAK_BLOCK_FRAMES;
  const source = new InputSpectrogram(plan.settings.params, plan.isV51, false, geometry, track, whole, plan.reversed);
  let max = 0;
  for (let from = 0; from < geometry.frames; from += blockFrames) {
    signal?.throwIfAborted();
    const { magnitude } = await source.block(from, Math.min(geometry.frames, from + blockFrames));
    for (const value of magnitude) if (value > max) max = value;
  }
  return max;
}

/** A block of frames: its spectrogram and, as the network's windows cover it, its mask. */
interface MaskBlock extends SpectrogramBlock {
  readonly from: number;
  readonly to: number;
  /** Each pass's mask as its windows write it. */
  readonly passes: Float32Array[];
  /** The passes averaged, with aggression; merge_artifacts' weights applied once `final`. */
  mask?: Float32Array;
  final?: boolean;
  /** The primary's and the secondary's stacked spectrograms, once asked for. */
  readonly stems: [Spectrogram?, Spectrogram?];
}

/** One pass of windows (TTA's second is shifted by half a roi). */
interface Pass {
  readonly index: number;
  readonly shift: number;
  readonly patches: number;
  next: number;
  /** Frames [0, covered) have this pass's mask. */
  covered: number;
}

/** inference_vr and postprocess' mask, block by block, each network window run once. */
class MaskStore implements StemFrames {
  readonly #blocks = new Map<number, MaskBlock>();
  readonly #passes: Pass[];
  readonly #rows: number;
  readonly #bins: number;
  readonly #roi: number;
  readonly #clean: Uint8Array | undefined;
  readonly #progress: { done: number; readonly total: number };
  #computed = 0;
  /** The earliest frame the stems asked for since the last release. */
  #lowestAsked = Infinity;

  constructor(
    private readonly network: MaskNetwork,
    private readonly settings: VrStreamSettings,
    private readonly source: InputSpectrogram,
    private readonly geometry: VrGeometry,
    private readonly blockFrames: number,
    private readonly max: number,
    private readonly run: VrStreamOptions,
  ) {
    const { window, offset } = network;
    this.#roi = window - 2 * offset;
    this.#bins = settings.params.bins + 1;
    this.#rows = 2 * this.#bins;
    const shifts = settings.options.enableTta ? [0, Math.floor(this.#roi / 2)] : [0];
    // UVR's last window can lie wholly past the track (its mask is cut off): it is not run.
    const needed = (shift: number) => Math.min(vrWindows(geometry.frames, window, offset, shift).patches, Math.ceil((geometry.frames + shift) / this.#roi));
    this.#passes = shifts.map((shift, index) => ({ index, shift, patches: needed(shift), next: 0, covered: 0 }));
    this.#progress = { done: 0, total: this.#passes.reduce((sum, pass) => sum + pass.patches, 0) };
    this.#clean = settings.options.enablePostProcess ? new Uint8Array(geometry.frames) : undefined;
  }

  /** A stem's stacked spectrogram over frames [from, to): the mask (or 1 − mask) times X, and the input's high end. */
  async stemFrames(from: number, to: number, inverse: boolean): Promise<{ readonly spec: Spectrogram; readonly highEnd?: Spectrogram }> {
    this.#lowestAsked = Math.min(this.#lowestAsked, from);
    const count = to - from;
    const spec = emptySpectrogram(this.#bins, count, 'complex64');
    const highEndBins = (await this.#final(from)).highEnd?.bins;
    const highEnd = highEndBins === undefined ? undefined : emptySpectrogram(highEndBins, count, 'complex64');
    for (let b = Math.floor(from / this.blockFrames); b * this.blockFrames < to; b++) {
      const block = await this.#final(b * this.blockFrames);
      const stem = (block.stems[inverse ? 1 : 0] ??= masked(block.spec, block.mask as Float32Array, inverse));
      const copy = (source: Spectrogram, target: Spectrogram) => {
        const lo = Math.max(from, block.from);
        const hi = Math.min(to, block.to);
        for (const part of ['re', 'im'] as const)
          copyFrames(source[part], target[part], 2 * source.bins, block.to - block.from, lo - block.from, count, lo - from, hi - lo);
      };
      copy(stem, spec);
      if (highEnd !== undefined && block.highEnd !== undefined) copy(block.highEnd.spec, highEnd);
    }
    return highEnd === undefined ? { spec } : { spec, highEnd };
  }

  /** Drops the blocks neither the stems nor the network's windows will read again. */
  release(): void {
    const windowsFrom = Math.min(...this.#passes.map((pass) => pass.next * this.#roi - this.network.offset - pass.shift));
    const keepFrom = Math.min(this.#lowestAsked, windowsFrom);
    for (const [index, block] of this.#blocks) if (block.to <= keepFrom) this.#blocks.delete(index);
    this.#lowestAsked = Infinity;
  }

  /** The block holding `frame`, its mask final. */
  async #final(frame: number): Promise<MaskBlock> {
    const index = Math.floor(frame / this.blockFrames);
    const block = this.#blocks.get(index);
    if (block?.final === true) return block;
    const { frames } = this.geometry;
    const end = Math.min(frames, (index + 1) * this.blockFrames);
    // merge_artifacts' flags come from settled blocks: those of the frames up to ARTIFACT_REACH beyond this one.
    const flagged = Math.ceil((end + ARTIFACT_REACH) / this.blockFrames) * this.blockFrames;
    await this.#cover(this.#clean === undefined ? end : Math.min(frames, flagged));
    const settled = this.#blocks.get(index);
    if (settled?.mask === undefined) throw new Error(`unreachable: frame ${frame}'s block was released`);
    if (this.#clean !== undefined) {
      const from = Math.max(0, settled.from - ARTIFACT_REACH);
      const weights = artifactWeights(this.#clean.subarray(from, Math.min(frames, settled.to + ARTIFACT_REACH)));
      if (weights !== undefined) applyArtifactWeights(settled.mask, this.#rows, settled.to - settled.from, weights.subarray(settled.from - from));
    }
    settled.final = true;
    return settled;
  }

  /** Runs every pass's windows until frames [0, end) have their mask, settling each block they complete. */
  async #cover(end: number): Promise<void> {
    for (const pass of this.#passes) {
      while (pass.covered < end) await this.#runWindow(pass);
    }
    for (const block of this.#blocks.values()) {
      if (block.mask === undefined && this.#passes.every((pass) => pass.covered >= block.to)) this.#settle(block);
    }
  }

  async #runWindow(pass: Pass): Promise<void> {
    if (pass.next >= pass.patches) throw new Error('unreachable: the windows end before the frames do');
    this.run.signal?.throwIfAborted();
    const { window, offset } = this.network;
    const { frames } = this.geometry;
    const roi = this.#roi;
    const rows = this.#rows;
    // Padded frame q is track frame q − offset − shift; padding is zeros.
    const start = pass.next * roi - offset - pass.shift;
    const windowData = new Float32Array(rows * window);
    for (const block of await this.#blocksOver(start, start + window)) {
      const n = block.to - block.from;
      const lo = Math.max(start, block.from);
      const hi = Math.min(start + window, block.to);
      for (let row = 0; row < rows; row++) {
        for (let frame = lo; frame < hi; frame++)
          windowData[row * window + frame - start] = Math.fround((block.magnitude[row * n + frame - block.from] as number) / this.max);
      }
    }
    const mask = await this.network.predict(windowData);
    const first = pass.next * roi - pass.shift;
    for (const block of await this.#blocksOver(first, first + roi)) {
      const n = block.to - block.from;
      const lo = Math.max(first, block.from);
      const hi = Math.min(first + roi, block.to);
      const target = (block.passes[pass.index] ??= new Float32Array(rows * n));
      for (let row = 0; row < rows; row++) target.set(mask.subarray(row * roi + lo - first, row * roi + hi - first), row * n + lo - block.from);
    }
    pass.next++;
    pass.covered = Math.min(frames, first + roi);
    this.#progress.done++;
    this.run.onProgress?.({ done: this.#progress.done, total: this.#progress.total });
  }

  /** The blocks over frames [from, to) ∩ the track, computed as needed. */
  async #blocksOver(from: number, to: number): Promise<MaskBlock[]> {
    const { frames } = this.geometry;
    const blocks: MaskBlock[] = [];
    for (let index = Math.floor(Math.max(0, from) / this.blockFrames); index * this.blockFrames < Math.min(to, frames); index++) {
      while (this.#computed <= index) await this.#compute(this.#computed++);
      const block = this.#blocks.get(index);
      if (block === undefined) throw new Error(`unreachable: block ${index} was released`);
      blocks.push(block);
    }
    return blocks;
  }

  async #compute(index: number): Promise<void> {
    const from = index * this.blockFrames;
    const to = Math.min(this.geometry.frames, from + this.blockFrames);
    this.#blocks.set(index, { ...(await this.source.block(from, to)), from, to, passes: [], stems: [] });
  }

  /** The passes averaged (TTA), aggression applied, merge_artifacts' flags noted. */
  #settle(block: MaskBlock): void {
    const n = block.to - block.from;
    const [first, second] = block.passes as [Float32Array, Float32Array | undefined];
    const mask = second === undefined ? first : first.map((v, i) => Math.fround(Math.fround(v + (second[i] as number)) * 0.5));
    const { params, options, data } = this.settings;
    adjustAggression(mask, this.#bins, n, params.bands[0]?.cropStop ?? 0, options.aggression, isNonAccompanimentStem(data.primaryStem));
    this.#clean?.set(cleanFrames(mask, this.#rows, n, options.postProcessThreshold), block.from);
    block.mask = mask;
    block.passes.length = 0;
  }
}

/** Copies frames [from, from + count) of each of `rows` rows of `n` frames into rows of `m` frames at `at`. */
function copyFrames(
  source: Float32Array | Float64Array,
  target: Float32Array | Float64Array,
  rows: number,
  n: number,
  from: number,
  m: number,
  at: number,
  count: number,
): void {
  for (let row = 0; row < rows; row++) target.set(source.subarray(row * n + from, row * n + from + count), row * m + at);
}
