/**
 * vr_separator.py for params whose rate is not the track's (1band_sr16000_hl512,
 * 1band_sr32000_hl512, 1band_sr33075_hl384, 2band_32000, 2band_48000): `loading_mix` reads the
 * track with librosa.load at the params' rate, resampling with the top band's res_type, and
 * `separate` brings each stem back with librosa.resample's default, soxr_hq.
 *
 * Here a stream at the track's rate becomes one at the params' rate (read whole: these
 * resamplers are computed over whole signals, as the official code does), the stems the
 * separation writes at the params' rate are collected, and each stem's official M samples come
 * back as ⌈M·r⌉ samples at the track's rate, then silence to the track's length.
 */
import type { StemWriter, TrackStream } from '../separation/track-stream.js';
import type { VrParams } from './params.js';
import { stemAtTrackRate, trackAtModelRate } from './resample.js';

/** A separation writing both stems (primary first), the stream's length each. */
export type StemSeparation<Run> = (input: TrackStream, write: StemWriter, run: Run) => Promise<void>;

/** Samples of each official stem for a track of `length` samples at the params' own rate. */
export type OfficialLength = (length: number) => number;

const BLOCK_FRAMES = 1 << 16;

/** The official stems' length at the track's rate for a track of `trackLength` samples. */
export function stemLengthAtTrackRate(params: VrParams, trackRate: number, trackLength: number, officialLength: OfficialLength): number {
  if (params.sr === trackRate) return officialLength(trackLength);
  const kept = officialLength(Math.ceil((trackLength * params.sr) / trackRate));
  return Math.ceil((kept * trackRate) / params.sr);
}

/** `separate` (at the params' rate) as a separation of a track at `trackRate`; itself where the rates agree. */
export function atModelRate<Run>(params: VrParams, trackRate: number, officialLength: OfficialLength, separate: StemSeparation<Run>): StemSeparation<Run> {
  if (params.sr === trackRate) return separate;
  return async (input, write, run) => {
    const [left, right] = trackAtModelRate(await readWhole(input), params, trackRate) as [Float64Array, Float64Array];
    const length = left.length;
    const stems = [0, 1].map(() => [new Float64Array(length), new Float64Array(length)]);
    let at = 0;
    const collect: StemWriter = (planes, frames) => {
      for (const [s, stem] of stems.entries()) {
        const plane = planes[s] as Float32Array;
        (stem[0] as Float64Array).set(plane.subarray(0, frames), at);
        (stem[1] as Float64Array).set(plane.subarray(frames, 2 * frames), at);
      }
      at += frames;
    };
    const frames = () => interleaved(left, right);
    // The separation may read the track twice (VR's first pass finds the spectrogram's peak).
    const modelRateTrack = { length, frames: frames(), reread: frames };
    await separate(modelRateTrack, collect, run);
    const kept = officialLength(length);
    const back = stems.map((stem) => stemAtTrackRate(stem.map((channel) => channel.subarray(0, kept)), params, trackRate));
    for (let start = 0; start < input.length; start += BLOCK_FRAMES) {
      const count = Math.min(BLOCK_FRAMES, input.length - start);
      const planes = back.map((stem) => {
        const plane = new Float32Array(2 * count);
        for (let c = 0; c < 2; c++) {
          const channel = stem[c] as Float64Array;
          for (let i = 0; i < count && start + i < channel.length; i++) plane[c * count + i] = channel[start + i] as number;
        }
        return plane;
      });
      await write(planes, count);
    }
  };
}

/** The whole stream as two channels. */
async function readWhole(input: TrackStream): Promise<Float64Array[]> {
  const track = [new Float64Array(input.length), new Float64Array(input.length)] as const;
  let at = 0;
  for await (const block of input.frames) {
    const frames = Math.min(block.length / 2, input.length - at);
    for (let i = 0; i < frames; i++) {
      track[0][at + i] = block[2 * i] as number;
      track[1][at + i] = block[2 * i + 1] as number;
    }
    at += frames;
  }
  return [track[0], track[1]];
}

/** Two channels as one interleaved float32 block. */
async function* interleaved(left: Float64Array, right: Float64Array): AsyncGenerator<Float32Array> {
  const block = new Float32Array(2 * left.length);
  for (let i = 0; i < left.length; i++) {
    block[2 * i] = left[i] as number;
    block[2 * i + 1] = right[i] as number;
  }
  yield block;
}
