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
import { open, rename, rm } from 'node:fs/promises';
import { StemsplitError } from '../errors.js';
import { resolveFfmpegPath, spawnFfmpeg } from './ffmpeg.js';
import { fixMp3Padding } from './mp3-tag.js';
import { bytesPerFrame, interleaveFrames, writeWavTo } from './wav.js';

export type StemFormat = 'mp3' | 'wav' | 'flac';

export interface EncodeOptions {
  readonly format: StemFormat;
  /** MP3 only: constant bitrate in kb/s. Default 320. */
  readonly mp3BitrateKbps?: number;
  /** WAV only: 32-bit float samples instead of 16-bit PCM. */
  readonly float32?: boolean;
  /** Default 44100. */
  readonly sampleRate?: number;
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
  try {
    if (options.format === 'wav') await writeWav(planar, length, partial, options);
    else await encodeWithFfmpeg(planar, length, partial, options);
    if (options.format === 'mp3') await fixMp3Padding(partial, length);
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
    await writeWavTo(handle, planar, length, options.sampleRate ?? 44_100, options.float32 === true ? 'float32' : 'pcm16');
  } finally {
    await handle.close();
  }
}

function codecArgs(options: EncodeOptions): string[] {
  switch (options.format) {
    case 'mp3':
      // `-write_xing 1` is the default; spelled out because exact stem length depends on it.
      return ['-c:a', 'libmp3lame', '-b:a', `${options.mp3BitrateKbps ?? 320}k`, '-write_xing', '1', '-f', 'mp3'];
    case 'flac':
      return ['-c:a', 'flac', '-sample_fmt', 's16', '-f', 'flac'];
    case 'wav':
      throw new Error('WAV is written without ffmpeg');
  }
}

async function encodeWithFfmpeg(planar: Float32Array, length: number, file: string, options: EncodeOptions): Promise<void> {
  const sampleRate = String(options.sampleRate ?? 44_100);
  const args = [
    '-v', 'error', '-f', 'f32le', '-ar', sampleRate, '-ac', '2', '-i', 'pipe:0',
    ...codecArgs(options), '-y', `file:${file}`,
  ];
  const run = spawnFfmpeg(options.ffmpegPath ?? resolveFfmpegPath(), args);
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
