/**
 * Writing one stem to disk: WAV with our own writer; MP3 (libmp3lame CBR), FLAC, Ogg Vorbis,
 * Opus, AAC and ALAC (.m4a) and AIFF through ffmpeg (formats.ts holds each format's facts).
 *
 * MP3 goes through ffmpeg rather than a JS encoder: ffmpeg's libmp3lame runs at about
 * 50× realtime per core against about 14× for @breezystack/lamejs, and ffmpeg's MP3
 * muxer writes a Xing/LAME header carrying the encoder delay and padding, so decoders
 * trim the priming samples and a stem decodes to exactly the source's length (we
 * correct the padding where ffmpeg gets it wrong: see mp3-tag.ts).
 *
 * Every format is written to `<outPath>.partial` and renamed into place, so a reader
 * never sees a half-written stem.
 */
import { spawnSync } from 'node:child_process';
import { open, rename, rm } from 'node:fs/promises';
import { StemsplitError } from '../errors.js';
import { resolveFfmpegPath, spawnFfmpeg } from './ffmpeg.js';
import { fixMp3Padding } from './mp3-tag.js';
import { bytesPerFrame, interleaveFrames, wavHeader, type WavSampleFormat } from './wav.js';

import { stemBitrate, type StemFormat } from './formats.js';

export type { StemFormat } from './formats.js';

/** Sample depth of a WAV or FLAC stem (FLAC has no float: 'float' writes 24-bit there). */
export type StemDepth = 16 | 24 | 'float';

export interface EncodeOptions {
  readonly format: StemFormat;
  /** Lossy formats: the bitrate in kb/s (formats.ts checks its range); default the format's. */
  readonly bitrateKbps?: number;
  /** WAV only: 32-bit float samples instead of 16-bit PCM (the same as depth 'float'). */
  readonly float32?: boolean;
  /** Lossless formats: the sample depth. Default 16 (or 'float' with float32). */
  readonly depth?: StemDepth;
  /** The rate of `planar`. Default 44100. */
  readonly sampleRate?: number;
  /** The rate to write, resampled with a high-quality resampler when it differs. Default: sampleRate. */
  readonly outputSampleRate?: number;
  /** 1 writes the stem as mono (the mean of its two channels). Default 2. */
  readonly channels?: 1 | 2;
  readonly ffmpegPath?: string;
  /** The share of the stem handed to the encoder so far, 0–1. */
  readonly onProgress?: (fraction: number) => void;
}

/** Frames per write: 512 KiB of float32 stereo, small next to any stem. */
const FRAMES_PER_WRITE = 65_536;

/**
 * A stem being written as its audio arrives: `write` takes consecutive planar [2, frames]
 * blocks, `finish` checks the length, completes the file and moves it into place, `abort`
 * removes what was written. Memory is one block, whatever the stem's length.
 */
export interface StemEncoder {
  write(planar: Float32Array, frames: number): Promise<void>;
  finish(): Promise<void>;
  abort(): Promise<void>;
}

/** Opens `outPath` (through `<outPath>.partial`) for a stem of exactly `totalFrames` frames at `options.sampleRate`. */
export async function openStemEncoder(outPath: string, totalFrames: number, options: EncodeOptions): Promise<StemEncoder> {
  const partial = `${outPath}.partial`;
  const rate = options.sampleRate ?? 44_100;
  const outRate = options.outputSampleRate ?? rate;
  const direct = options.format === 'wav' && outRate === rate && (options.channels ?? 2) === 2 && depthOf(options) !== 24;
  const sink = direct ? await openWavSink(partial, totalFrames, rate, depthOf(options) === 'float' ? 'float32' : 'pcm16') : openFfmpegSink(partial, options);
  const failed = (error: unknown): StemsplitError =>
    error instanceof StemsplitError ? error : new StemsplitError('ENCODE_FAILED', `cannot write ${outPath}: ${String(error)}`, { cause: error });
  let written = 0;
  let settled = false;
  const abort = async (): Promise<void> => {
    if (settled) return;
    settled = true;
    await sink.abort().catch(() => undefined);
    await rm(partial, { force: true });
  };
  return {
    async write(planar, frames) {
      if (written + frames > totalFrames) throw failed(`more than the ${totalFrames} frames announced`);
      try {
        for (let start = 0; start < frames; start += FRAMES_PER_WRITE) {
          const count = Math.min(FRAMES_PER_WRITE, frames - start);
          await sink.write(planar, frames, start, count);
          written += count;
          options.onProgress?.(written / totalFrames);
        }
      } catch (error) {
        await abort();
        throw failed(error);
      }
    },
    async finish() {
      try {
        if (written !== totalFrames) throw new StemsplitError('ENCODE_FAILED', `${outPath}: ${written} of ${totalFrames} frames were written`);
        await sink.end();
        if (options.format === 'mp3') await fixMp3Padding(partial, Math.round((totalFrames * outRate) / rate));
        await rename(partial, outPath);
        settled = true;
      } catch (error) {
        await abort();
        throw failed(error);
      }
    },
    abort,
  };
}

/** Writes a whole planar stem (a convenience over `openStemEncoder`). */
export async function encodeStem(planar: Float32Array, length: number, outPath: string, options: EncodeOptions): Promise<void> {
  if (planar.length < 2 * length) {
    throw new StemsplitError('ENCODE_FAILED', `stem buffer holds ${planar.length} samples, ${2 * length} needed`);
  }
  const encoder = await openStemEncoder(outPath, length, options);
  // The whole stem is one planar [2, length] block; the encoder writes it a slice at a time.
  await encoder.write(planar, length);
  await encoder.finish();
}

/** Where interleaved frames go: our WAV writer or an ffmpeg process. */
interface FrameSink {
  /** Writes frames [start, start + count) of the planar [2, frames] block. */
  write(planar: Float32Array, frames: number, start: number, count: number): Promise<void>;
  end(): Promise<void>;
  abort(): Promise<void>;
}

async function openWavSink(file: string, totalFrames: number, sampleRate: number, format: WavSampleFormat): Promise<FrameSink> {
  const handle = await open(file, 'w');
  await handle.write(wavHeader(totalFrames, sampleRate, format));
  const scratch = Buffer.alloc(FRAMES_PER_WRITE * bytesPerFrame(format));
  return {
    async write(planar, frames, start, count) {
      await handle.write(interleaveFrames(planar, frames, start, count, format, scratch));
    },
    end: () => handle.close(),
    abort: () => handle.close(),
  };
}

function depthOf(options: EncodeOptions): StemDepth {
  return options.depth ?? (options.float32 === true ? 'float' : 16);
}

function codecArgs(options: EncodeOptions): string[] {
  const depth = depthOf(options);
  const kbps = `${stemBitrate(options.format, options.bitrateKbps, options.channels ?? 2) ?? 0}k`;
  switch (options.format) {
    case 'mp3':
      // `-write_xing 1` is the default; spelled out because exact stem length depends on it.
      return ['-c:a', 'libmp3lame', '-b:a', kbps, '-write_xing', '1', '-f', 'mp3'];
    case 'flac':
      return depth === 16
        ? ['-c:a', 'flac', '-sample_fmt', 's16', '-f', 'flac']
        : ['-c:a', 'flac', '-sample_fmt', 's32', '-bits_per_raw_sample', '24', '-f', 'flac'];
    case 'wav':
      return ['-c:a', depth === 'float' ? 'pcm_f32le' : depth === 24 ? 'pcm_s24le' : 'pcm_s16le', '-f', 'wav'];
    case 'ogg':
      // libvorbis' bitrate mode refuses many rate and channel pairs (320 kb/s at 22.05 kHz, any at 96 kHz); its quality mode takes them all.
      return ['-c:a', 'libvorbis', '-q:a', vorbisQuality(stemBitrate('ogg', options.bitrateKbps, 2) ?? 0).toFixed(2), '-f', 'ogg'];
    case 'opus':
      return ['-c:a', 'libopus', '-b:a', kbps, '-f', 'opus'];
    case 'm4a':
      return ['-c:a', 'aac', '-b:a', kbps, '-f', 'ipod'];
    case 'alac':
      return depth === 16
        ? ['-c:a', 'alac', '-sample_fmt', 's16p', '-f', 'ipod']
        : ['-c:a', 'alac', '-sample_fmt', 's32p', '-bits_per_raw_sample', '24', '-f', 'ipod'];
    case 'aiff':
      return ['-c:a', depth === 16 ? 'pcm_s16be' : 'pcm_s24be', '-f', 'aiff'];
  }
}

/** libvorbis' quality levels and their nominal bitrates for 44.1 kHz stereo (its documentation's table), in kb/s. */
const VORBIS_QUALITY_KBPS: ReadonlyArray<readonly [quality: number, kbps: number]> = [
  [-1, 45],
  [0, 64],
  [1, 80],
  [2, 96],
  [3, 112],
  [4, 128],
  [5, 160],
  [6, 192],
  [7, 224],
  [8, 256],
  [9, 320],
  [10, 500],
];

/** The Vorbis quality whose nominal bitrate is `kbps`, between the table's points. */
export function vorbisQuality(kbps: number): number {
  const above = VORBIS_QUALITY_KBPS.findIndex(([, nominal]) => nominal >= kbps);
  if (above <= 0) return above === 0 ? -1 : 10;
  const [q0, k0] = VORBIS_QUALITY_KBPS[above - 1] as readonly [number, number];
  const [q1, k1] = VORBIS_QUALITY_KBPS[above] as readonly [number, number];
  return q0 + ((q1 - q0) * (kbps - k0)) / (k1 - k0);
}

/**
 * The resampling filter for `rate`: SoX's resampler at its highest precision where this ffmpeg
 * has it (system ffmpeg builds do), else ffmpeg's own with a long filter; and the mono downmix.
 */
function filterArgs(options: EncodeOptions, ffmpegPath: string): string[] {
  const rate = options.sampleRate ?? 44_100;
  const outRate = options.outputSampleRate ?? rate;
  const filters: string[] = [];
  if (options.channels === 1) filters.push('pan=mono|c0=0.5*c0+0.5*c1');
  if (outRate !== rate) {
    filters.push(hasSoxr(ffmpegPath) ? `aresample=${outRate}:resampler=soxr:precision=28` : `aresample=${outRate}:filter_size=256:phase_shift=12:cutoff=0.97`);
  }
  return filters.length > 0 ? ['-af', filters.join(',')] : [];
}

const soxrByPath = new Map<string, boolean>();

function hasSoxr(ffmpegPath: string): boolean {
  let known = soxrByPath.get(ffmpegPath);
  if (known === undefined) {
    const version = spawnSync(ffmpegPath, ['-hide_banner', '-version'], { encoding: 'utf8' });
    known = (version.stdout ?? '').includes('--enable-libsoxr');
    soxrByPath.set(ffmpegPath, known);
  }
  return known;
}

/** An ffmpeg process reading interleaved f32le on stdin; a write waits while its pipe is full. */
function openFfmpegSink(file: string, options: EncodeOptions): FrameSink {
  const sampleRate = String(options.sampleRate ?? 44_100);
  const ffmpegPath = options.ffmpegPath ?? resolveFfmpegPath();
  const args = [
    '-v',
    'error',
    '-f',
    'f32le',
    '-ar',
    sampleRate,
    '-ac',
    '2',
    '-i',
    'pipe:0',
    ...filterArgs(options, ffmpegPath),
    ...codecArgs(options),
    '-y',
    `file:${file}`,
  ];
  const run = spawnFfmpeg(ffmpegPath, args);
  run.child.stdout.resume();
  const scratch = Buffer.alloc(FRAMES_PER_WRITE * bytesPerFrame('f32le'));
  const failure = async (): Promise<StemsplitError> => {
    const code = await run.exited.catch(() => null);
    return new StemsplitError('ENCODE_FAILED', `ffmpeg could not encode ${options.format}: ${run.stderr.lastLine() || `exit ${String(code)}`}`);
  };
  return {
    async write(planar, frames, start, count) {
      // A copy: the pipe may still hold the chunk when the scratch buffer is reused.
      const chunk = Buffer.from(interleaveFrames(planar, frames, start, count, 'f32le', scratch));
      if (!run.child.stdin.write(chunk) && !(await waitForDrain(run.child.stdin))) throw await failure();
    },
    async end() {
      run.child.stdin.end();
      if ((await run.exited) !== 0) throw await failure();
    },
    async abort() {
      run.child.kill('SIGKILL');
      await run.exited.catch(() => undefined);
    },
  };
}

function waitForDrain(stream: NodeJS.WritableStream): Promise<boolean> {
  return new Promise((resolve) => {
    const onDrain = (): void => done(true);
    const onClose = (): void => done(false);
    const done = (drained: boolean): void => {
      stream.off('drain', onDrain);
      stream.off('close', onClose);
      stream.off('error', onClose);
      resolve(drained);
    };
    stream.once('drain', onDrain);
    stream.once('close', onClose);
    stream.once('error', onClose);
  });
}
