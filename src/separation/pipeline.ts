/**
 * Whole-track separation with a segment model, computing what Demucs' `apply_model`
 * (demucs/apply.py) and `Separator` (demucs/api.py) compute:
 *
 * 1. normalise the whole track by the mean and standard deviation of its mono mix
 *    (when the model asks for it), and undo that on every output stem;
 * 2. cut each pass into chunks of one segment with stride `(1 - overlap) · segment`,
 *    pad short chunks centred with real neighbouring samples, run the model and
 *    centre-trim its output back to the chunk;
 * 3. add chunks back with triangular weights and divide by the summed weights;
 * 4. with `shifts > 0`, run that many passes on the track padded by half a second and
 *    read from a random offset, undo each offset and average the passes.
 *
 * The work is done by `separateStream` (stream.ts), which never holds the track; this is
 * its whole-track form, for callers that have the track in memory (and the fixture tests).
 */
import { StemsplitError } from '../errors.js';
import type { SeparationModel } from './model.js';
import { monoMixNormalization, type Normalization, type TrackStatistics } from './normalization.js';
import { separateStream, type StreamOptions } from './segment-stream.js';

export interface StereoTrack {
  /** Planar [2, length]: left samples, then right samples. */
  readonly data: Float32Array;
  /** Samples per channel. */
  readonly length: number;
}

/** Overlap, shifts, transition power, seed, progress and cancellation: as for `separateStream`. */
export type SeparateOptions = StreamOptions;

/** Frames handed to the streaming core per block when the track is already in memory. */
const BLOCK_FRAMES = 65_536;

/** Separates a stereo track into one planar [2, length] buffer per model source. */
export async function separate(model: SeparationModel, track: StereoTrack, options: SeparateOptions = {}): Promise<Float32Array[]> {
  checkTrack(track);
  const { length } = track;
  const outputs = model.sources.map(() => new Float32Array(2 * length));
  let written = 0;
  const collect = (stems: readonly Float32Array[], frames: number): void => {
    for (const [source, stem] of stems.entries()) {
      const output = outputs[source] as Float32Array;
      output.set(stem.subarray(0, frames), written);
      output.set(stem.subarray(frames, 2 * frames), length + written);
    }
    written += frames;
  };
  await separateStream(
    model,
    { length, statistics: statisticsOf(track), frames: interleavedBlocks(track), reread: () => interleavedBlocks(track) },
    collect,
    options,
  );
  return outputs;
}

function checkTrack(track: StereoTrack): void {
  if (!(Number.isInteger(track.length) && track.length > 0)) {
    throw new StemsplitError('SEPARATION_FAILED', 'cannot separate an empty track');
  }
  if (track.data.length < 2 * track.length) {
    throw new StemsplitError('SEPARATION_FAILED', `track buffer holds ${track.data.length} samples, ${2 * track.length} needed`);
  }
}

/** The planar track as interleaved stereo blocks, the streaming core's input. */
async function* interleavedBlocks(track: StereoTrack): AsyncGenerator<Float32Array> {
  const { data, length } = track;
  for (let start = 0; start < length; start += BLOCK_FRAMES) {
    const count = Math.min(BLOCK_FRAMES, length - start);
    const block = new Float32Array(2 * count);
    for (let i = 0; i < count; i++) {
      block[2 * i] = data[start + i] as number;
      block[2 * i + 1] = data[length + start + i] as number;
    }
    yield block;
  }
}

/** The mono mix's mean and sum of squared deviations, two passes in float64, and the peak. */
export function statisticsOf(track: StereoTrack): TrackStatistics {
  const { data, length } = track;
  let sum = 0;
  for (let i = 0; i < length; i++) sum += ((data[i] ?? 0) + (data[length + i] ?? 0)) / 2;
  const mean = sum / length;
  let squares = 0;
  let peak = 0;
  for (let i = 0; i < length; i++) {
    squares += (((data[i] ?? 0) + (data[length + i] ?? 0)) / 2 - mean) ** 2;
    peak = Math.max(peak, Math.abs(data[i] ?? 0), Math.abs(data[length + i] ?? 0));
  }
  return { frames: length, mean, squares, peak };
}

/** Mean and unbiased standard deviation (plus 1e-8) of the mono mix, as float32 values like Demucs'. */
export function normalizationOf(track: StereoTrack): Normalization {
  return monoMixNormalization(statisticsOf(track));
}
