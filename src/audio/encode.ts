/**
 * Writing one stem to disk: MP3 (libmp3lame CBR) and FLAC through ffmpeg, WAV with our own writer.
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
import { bytesPerFrame, interleaveFrames, writeWavTo } from './wav.js';

export type StemFormat = 'mp3' | 'wav' | 'flac';

/** Sample depth of a WAV or FLAC stem (FLAC has no float: 'float' writes 24-bit there). */
export type StemDepth = 16 | 24 | 'float';

export interface EncodeOptions {
  readonly format: StemFormat;
  /** MP3 only: constant bitrate in kb/s. Default 320. */
  readonly mp3BitrateKbps?: number;
  /** WAV only: 32-bit float samples instead of 16-bit PCM (the same as depth 'float'). */
  readonly float32?: boolean;
  /** WAV and FLAC: the sample depth. Default 16 (or 'float' with float32). */
  readonly depth?: StemDepth;
  /** The rate of `planar`. Default 44100. */
  readonly sampleRate?: number;
  /** The rate to write, resampled with a high-quality resampler when it differs. Default: sampleRate. */
  readonly outputSampleRate?: number;
  /** 1 writes the stem as mono (the mean of its two channels). Default 2. */
  readonly channels?: 1 | 2;
  readonly ffmpegPath?: string;
  /** The share of the stem handed to the encoder so far, 0–1 (MP3 and FLAC). */
  readonly onProgress?: (fraction: number) => void;
}

/** Frames per write to ffmpeg's stdin: 512 KiB of float32 stereo, small next to the stem itself. */
const FRAMES_PER_WRITE = 65_536;

export async function encodeStem(
  planar: Float32Array,
  length: number,
  outPath: string,
  options: EncodeOptions,
): Promise<void> {
  if (planar.length < 2 * length) {
    throw new StemsplitError('ENCODE_FAILED', `stem buffer holds ${planar.length} samples, ${2 * length} needed`);
  }
  const partial = `${outPath}.partial`;
  const rate = options.sampleRate ?? 44_100;
  const outRate = options.outputSampleRate ?? rate;
  try {
    if (options.format === 'wav' && outRate === rate && (options.channels ?? 2) === 2 && depthOf(options) !== 24) {
      await writeWav(planar, length, partial, options);
    } else {
      await encodeWithFfmpeg(planar, length, partial, options);
    }
    if (options.format === 'mp3') await fixMp3Padding(partial, Math.round((length * outRate) / rate));
    await rename(partial, outPath);
  } catch (error) {
    await rm(partial, { force: true });
    if (error instanceof StemsplitError) throw error;
    throw new StemsplitError('ENCODE_FAILED', `cannot write ${outPath}: ${String(error)}`, { cause: error });
  }
}

async function writeWav(planar: Float32Array, length: number, file: string, options: EncodeOptions): Promise<void> {
  const handle = await open(file, 'w');
  try {
    await writeWavTo(handle, planar, length, options.sampleRate ?? 44_100, depthOf(options) === 'float' ? 'float32' : 'pcm16');
  } finally {
    await handle.close();
  }
}

function depthOf(options: EncodeOptions): StemDepth {
  return options.depth ?? (options.float32 === true ? 'float' : 16);
}

function codecArgs(options: EncodeOptions): string[] {
  const depth = depthOf(options);
  switch (options.format) {
    case 'mp3':
      // `-write_xing 1` is the default; spelled out because exact stem length depends on it.
      return ['-c:a', 'libmp3lame', '-b:a', `${options.mp3BitrateKbps ?? 320}k`, '-write_xing', '1', '-f', 'mp3'];
    case 'flac':
      return depth === 16 ? ['-c:a', 'flac', '-sample_fmt', 's16', '-f', 'flac'] : ['-c:a', 'flac', '-sample_fmt', 's32', '-bits_per_raw_sample', '24', '-f', 'flac'];
    case 'wav':
      return ['-c:a', depth === 'float' ? 'pcm_f32le' : depth === 24 ? 'pcm_s24le' : 'pcm_s16le', '-f', 'wav'];
  }
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

async function encodeWithFfmpeg(planar: Float32Array, length: number, file: string, options: EncodeOptions): Promise<void> {
  const sampleRate = String(options.sampleRate ?? 44_100);
  const ffmpegPath = options.ffmpegPath ?? resolveFfmpegPath();
  const args = [
    '-v', 'error', '-f', 'f32le', '-ar', sampleRate, '-ac', '2', '-i', 'pipe:0',
    ...filterArgs(options, ffmpegPath), ...codecArgs(options), '-y', `file:${file}`,
  ];
  const run = spawnFfmpeg(ffmpegPath, args);
  run.child.stdout.resume();
  const fed = feed(run.child.stdin, planar, length, options.onProgress);
  const [code] = await Promise.all([run.exited, fed]);
  if (code !== 0) {
    throw new StemsplitError('ENCODE_FAILED', `ffmpeg could not encode ${options.format}: ${run.stderr.lastLine() || `exit ${String(code)}`}`);
  }
}

/** Writes the stem as interleaved f32le, waiting on back-pressure so only one chunk is in flight. */
async function feed(stdin: NodeJS.WritableStream, planar: Float32Array, length: number, onProgress?: (fraction: number) => void): Promise<void> {
  const scratch = Buffer.alloc(FRAMES_PER_WRITE * bytesPerFrame('f32le'));
  for (let start = 0; start < length; start += FRAMES_PER_WRITE) {
    const count = Math.min(FRAMES_PER_WRITE, length - start);
    const chunk = Buffer.from(interleaveFrames(planar, length, start, count, 'f32le', scratch));
    if (!stdin.write(chunk)) {
      const drained = await waitForDrain(stdin);
      if (!drained) return; // ffmpeg went away; its exit code tells why.
    }
    // Back-pressure keeps one chunk in flight, so what was written is about what was encoded.
    onProgress?.((start + count) / length);
  }
  stdin.end();
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
