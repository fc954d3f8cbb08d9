/**
 * Decoding any ffmpeg-readable file to planar stereo float32 at one sample rate.
 *
 * ffmpeg writes interleaved f32le to a pipe; we de-interleave each chunk straight into
 * the planar result, so memory stays at about one planar copy (sized from the header's
 * duration) plus one pipe chunk.
 */
import { resolveFfmpegPath, spawnFfmpeg } from './ffmpeg.js';
import { decodeFailed, ffmpegInputUrl, readAudioHeader, type AudioHeader } from './probe.js';

/** Planar stereo audio: `data` is [left × length, right × length]. */
export interface PlanarAudio {
  readonly sampleRate: number;
  /** Samples per channel. */
  readonly length: number;
  readonly data: Float32Array;
  /** What the file itself holds (its rate, channels and depth), for writing stems the same way. */
  readonly source: AudioHeader;
}

export interface DecodeProgress {
  readonly decodedSeconds: number;
  /** From the file's header; undefined when it has none. */
  readonly totalSeconds: number | undefined;
}

export interface DecodeOptions {
  /** Output rate; any input rate is resampled to it. Default 44100. */
  readonly sampleRate?: number;
  readonly ffmpegPath?: string;
  readonly onProgress?: (progress: DecodeProgress) => void;
  readonly signal?: AbortSignal;
}

const BYTES_PER_FRAME = 8; // stereo float32
/** Capacity used when the header gives no duration; grows by half as needed. */
const FALLBACK_CAPACITY_SECONDS = 60;

/**
 * Streams the decoded audio as interleaved stereo float32 chunks (whole frames only).
 * The chunks are fresh arrays the caller may keep.
 */
export async function* decodeInterleaved(file: string, options: DecodeOptions & { readonly header?: AudioHeader } = {}): AsyncGenerator<Float32Array> {
  const sampleRate = options.sampleRate ?? 44_100;
  const ffmpegPath = options.ffmpegPath ?? resolveFfmpegPath();
  const header = options.header ?? (await readAudioHeader(file, ffmpegPath));
  // ffmpeg's own mono→stereo upmix lowers the level by 3 dB; a stem splitter wants the
  // mono signal unchanged on both channels (as Demucs does), so copy it explicitly.
  const channelArgs = header.channels === 1 ? ['-af', 'pan=stereo|c0=c0|c1=c0'] : ['-ac', '2'];
  const args = [
    '-nostdin',
    '-v',
    'error',
    '-i',
    ffmpegInputUrl(file),
    '-map',
    '0:a:0',
    '-vn',
    '-sn',
    '-dn',
    ...channelArgs,
    '-ar',
    String(sampleRate),
    '-c:a',
    'pcm_f32le',
    '-f',
    'f32le',
    'pipe:1',
  ];
  const run = spawnFfmpeg(ffmpegPath, args);
  run.child.stdin.end();
  const abort = (): void => void run.child.kill('SIGKILL');
  options.signal?.addEventListener('abort', abort, { once: true });
  let carry = Buffer.alloc(0);
  try {
    for await (const chunk of run.child.stdout as AsyncIterable<Buffer>) {
      const bytes = carry.length === 0 ? chunk : Buffer.concat([carry, chunk]);
      const whole = bytes.length - (bytes.length % BYTES_PER_FRAME);
      carry = Buffer.from(bytes.subarray(whole));
      if (whole > 0) yield floatsOf(bytes.subarray(0, whole));
    }
    const code = await run.exited;
    options.signal?.throwIfAborted();
    if (code !== 0) throw decodeFailed(file, run.stderr.lastLine() || `ffmpeg exited with ${String(code)}`);
  } finally {
    options.signal?.removeEventListener('abort', abort);
    if (run.child.exitCode === null) run.child.kill('SIGKILL');
  }
}

/** A Float32Array copy of little-endian float bytes (a copy, since pipe buffers need not be 4-byte aligned). */
function floatsOf(bytes: Buffer): Float32Array {
  const floats = new Float32Array(bytes.length / 4);
  new Uint8Array(floats.buffer).set(bytes);
  return floats;
}

/** Decodes the first audio stream of `file` to planar stereo float32. Errors are AUDIO_DECODE_FAILED. */
export async function decodeToPlanar(file: string, options: DecodeOptions = {}): Promise<PlanarAudio> {
  const sampleRate = options.sampleRate ?? 44_100;
  const ffmpegPath = options.ffmpegPath ?? resolveFfmpegPath();
  const header = await readAudioHeader(file, ffmpegPath);
  const expectedFrames = header.durationSeconds === undefined ? undefined : Math.ceil(header.durationSeconds * sampleRate);
  // A little headroom over the header's duration avoids a regrow for rounding or a short lie.
  const builder = new PlanarBuilder(expectedFrames === undefined ? FALLBACK_CAPACITY_SECONDS * sampleRate : expectedFrames + Math.ceil(sampleRate / 10));
  for await (const interleaved of decodeInterleaved(file, { ...options, sampleRate, ffmpegPath, header })) {
    builder.append(interleaved);
    options.onProgress?.({ decodedSeconds: builder.length / sampleRate, totalSeconds: header.durationSeconds });
  }
  if (builder.length === 0) throw decodeFailed(file, 'no audio samples');
  return { sampleRate, length: builder.length, data: builder.finish(), source: header };
}

/**
 * Collects interleaved stereo frames into one planar buffer laid out as
 * [left × capacity, right × capacity]; `finish` moves the right channel down so the
 * result is [left × length, right × length] without a second full-size buffer.
 */
export class PlanarBuilder {
  private data: Float32Array;
  private capacity: number;
  length = 0;

  constructor(initialCapacity: number) {
    this.capacity = Math.max(1, initialCapacity);
    this.data = new Float32Array(2 * this.capacity);
  }

  append(interleaved: Float32Array): void {
    const frames = interleaved.length / 2;
    if (this.length + frames > this.capacity) this.grow(this.length + frames);
    const left = this.length;
    const right = this.capacity + this.length;
    for (let frame = 0; frame < frames; frame++) {
      this.data[left + frame] = interleaved[2 * frame] ?? 0;
      this.data[right + frame] = interleaved[2 * frame + 1] ?? 0;
    }
    this.length += frames;
  }

  /** The planar result. Its buffer may be slightly larger than the view (the unused headroom). */
  finish(): Float32Array {
    this.data.copyWithin(this.length, this.capacity, this.capacity + this.length);
    return this.data.subarray(0, 2 * this.length);
  }

  private grow(needed: number): void {
    const capacity = Math.max(needed, Math.ceil(this.capacity * 1.5));
    const grown = new Float32Array(2 * capacity);
    grown.set(this.data.subarray(0, this.length), 0);
    grown.set(this.data.subarray(this.capacity, this.capacity + this.length), capacity);
    this.data = grown;
    this.capacity = capacity;
  }
}
