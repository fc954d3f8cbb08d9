/**
 * vr_separator.py for params whose rate is not the track's (1band_sr16000_hl512,
 * 1band_sr32000_hl512, 1band_sr33075_hl384, 2band_32000, 2band_48000): `loading_mix` reads the
 * track with librosa.load at the params' rate, resampling with the top band's res_type, and
 * `separate` brings each stem back with librosa.resample's default, soxr_hq.
 *
 * Here both run as streams, in memory that does not grow with the track's length: the track is
 * resampled as it is read (once for each of the separation's two passes), and each stem's
 * official M samples are resampled as the separation writes them, to ⌈M·r⌉ samples at the track's
 * rate, then silence to the track's length. Each resampler is fed its signal in order and gives,
 * bit for bit, what it gives over the whole signal (resample-stream.ts).
 */
import { StemsplitError } from '../errors.js';
import type { StemWriter, TrackStream } from '../separation/track-stream.js';
import type { VrParams } from './params.js';
import { stemResampler, trackResampler } from './resample.js';
import type { ChannelResampler } from './resample-stream.js';

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
export function atModelRate<Run extends { readonly signal?: AbortSignal }>(
  params: VrParams,
  trackRate: number,
  officialLength: OfficialLength,
  separate: StemSeparation<Run>,
): StemSeparation<Run> {
  if (params.sr === trackRate) return separate;
  return async (input, write, run) => {
    const { reread } = input;
    if (reread === undefined) throw new Error('unreachable: a VR model reads its track twice, and this stream cannot be read again');
    const length = Math.ceil((input.length * params.sr) / trackRate);
    const atModel = (frames: AsyncIterable<Float32Array>) => resampledFrames(frames, () => trackResampler(params, trackRate, input.length), run.signal);
    const stems = new StemsAtTrackRate(params, trackRate, officialLength(length), input.length, write);
    await separate({ length, frames: atModel(input.frames), reread: () => atModel(reread()) }, (planes, frames) => stems.add(planes, frames), run);
    await stems.finish();
  };
}

/** Input frames resampled between two looks at the event loop (sinc_best takes about 0.1 s over 4096 frames of both channels). */
const RESAMPLE_FRAMES = 4096;

/**
 * Interleaved stereo blocks, each channel through its own resampler, as interleaved float32
 * blocks. The resampling is the separation's longest synchronous work for these params, so
 * between every RESAMPLE_FRAMES input frames it lets other events in (a cancel reaches the worker
 * as one) and checks the signal.
 */
async function* resampledFrames(
  frames: AsyncIterable<Float32Array>,
  channel: () => ChannelResampler,
  signal: AbortSignal | undefined,
): AsyncGenerator<Float32Array> {
  const resamplers = [channel(), channel()] as const;
  for await (const block of frames) {
    for (let from = 0; from < block.length / 2; from += RESAMPLE_FRAMES) {
      await new Promise((resolve) => setImmediate(resolve));
      signal?.throwIfAborted();
      const count = Math.min(RESAMPLE_FRAMES, block.length / 2 - from);
      const planes = resamplers.map((resampler, c) => resampler.push(Float64Array.from({ length: count }, (_, i) => block[2 * (from + i) + c] as number)));
      const out = interleaved(planes[0] as Float64Array, planes[1] as Float64Array);
      if (out.length > 0) yield out;
    }
  }
}

/**
 * The stems written at the params' rate, resampled to the track's as they come: the first `kept`
 * samples of each (the official stem), then silence to the track's length.
 */
class StemsAtTrackRate {
  readonly #resamplers: (readonly [ChannelResampler, ChannelResampler])[] = [];
  #received = 0;
  #written = 0;

  constructor(
    params: VrParams,
    trackRate: number,
    private readonly kept: number,
    private readonly length: number,
    private readonly out: StemWriter,
  ) {
    for (let s = 0; s < 2; s++) this.#resamplers.push([stemResampler(params, trackRate, kept), stemResampler(params, trackRate, kept)]);
  }

  async add(planes: readonly Float32Array[], frames: number): Promise<void> {
    const from = Math.min(frames, Math.max(0, this.kept - this.#received));
    this.#received += frames;
    if (from === 0) return;
    const back = this.#resamplers.map((channels, s) =>
      channels.map((resampler, c) => resampler.push(Float64Array.from((planes[s] as Float32Array).subarray(c * frames, c * frames + from)))),
    ) as Float64Array[][];
    await this.#emit(back);
  }

  /** The silence after the stems, to the track's length. */
  async finish(): Promise<void> {
    if (this.#received < this.kept) throw new StemsplitError('SEPARATION_FAILED', `the separation wrote ${this.#received} of ${this.kept} samples`);
    for (let rest = this.length - this.#written; rest > 0; rest = this.length - this.#written) {
      const count = Math.min(BLOCK_FRAMES, rest);
      await this.#emit([0, 1].map(() => [new Float64Array(count), new Float64Array(count)]));
    }
  }

  /** Writes the resampled samples (the same count in each stem and channel), cut at the track's length. */
  async #emit(back: readonly (readonly Float64Array[])[]): Promise<void> {
    const count = Math.min((back[0]?.[0] as Float64Array).length, this.length - this.#written);
    if (count <= 0) return;
    const planes = back.map((channels) => {
      const plane = new Float32Array(2 * count);
      for (let c = 0; c < 2; c++) plane.set((channels[c] as Float64Array).subarray(0, count), c * count);
      return plane;
    });
    this.#written += count;
    await this.out(planes, count);
  }
}

/** Two channels as one interleaved float32 block. */
function interleaved(left: Float64Array, right: Float64Array): Float32Array {
  const block = new Float32Array(2 * left.length);
  for (let i = 0; i < left.length; i++) {
    block[2 * i] = left[i] as number;
    block[2 * i + 1] = right[i] as number;
  }
  return block;
}
