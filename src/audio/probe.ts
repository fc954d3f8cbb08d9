/**
 * What ffmpeg says about an input file before decoding it.
 *
 * There is no ffprobe in `@ffmpeg-installer/ffmpeg`, so this reads the input summary
 * `ffmpeg -i FILE` prints on stderr (about 10 ms). Headers can lie (an MP3 without a
 * Xing/LAME frame has its duration estimated from the bitrate), so where they may,
 * the duration is measured by decoding to the null muxer instead (about 0.7 ms per
 * second of audio), which also counts exactly what `decodeToPlanar` will return.
 */
import path from 'node:path';
import { StemsplitError } from '../errors.js';
import { resolveFfmpegPath, spawnFfmpeg } from './ffmpeg.js';

export interface AudioHeader {
  /** Container formats ffmpeg matched, e.g. `['mp3']` or `['mov', 'mp4', 'm4a', ...]`. */
  readonly formats: readonly string[];
  /** Channels of the first audio stream. */
  readonly channels: number;
  /** Its sample rate, when ffmpeg names one. */
  readonly sampleRate: number | undefined;
  /** Its sample depth: 16 or 24 (integer PCM, 32-bit integer read as 24), 'float', or undefined (lossy codecs decode to float: no depth of their own). */
  readonly bitDepth: 16 | 24 | 'float' | undefined;
  /** Duration from the header; undefined when the container has none. */
  readonly durationSeconds: number | undefined;
  /** True when ffmpeg guessed the duration (from the bitrate) or the container is MP3. */
  readonly durationUncertain: boolean;
}

/** ffmpeg's own name for an input, immune to `:` (protocols) and leading `-` in file names. */
export function ffmpegInputUrl(file: string): string {
  return `file:${path.resolve(file)}`;
}

export async function readAudioHeader(file: string, ffmpegPath = resolveFfmpegPath()): Promise<AudioHeader> {
  const lines: string[] = [];
  const run = spawnFfmpeg(ffmpegPath, ['-nostdin', '-i', ffmpegInputUrl(file)], (line) => lines.push(line));
  run.child.stdin.end();
  await run.exited; // Always exits 1 ("At least one output file must be specified"); the summary is what counts.
  return parseAudioHeader(lines, file);
}

function parseAudioHeader(lines: readonly string[], file: string): AudioHeader {
  const input = lines.map((line) => /^Input #0, (.*), from '/.exec(line)).find((match) => match !== null);
  if (input === undefined) {
    throw decodeFailed(file, lines.at(-1) ?? 'ffmpeg printed nothing');
  }
  const audio = lines.map((line) => /^Stream #0:\d+.*?: Audio: (.*)$/.exec(line)).find((match) => match !== null);
  if (audio === undefined) throw decodeFailed(file, 'no audio stream');
  const formats = (input[1] ?? '').split(',');
  const durationLine = lines.find((line) => line.startsWith('Duration:'));
  const durationSeconds = parseClock(/^Duration: ([\d:.]+)/.exec(durationLine ?? '')?.[1]);
  const estimated = lines.some((line) => line.includes('Estimating duration from bitrate'));
  return {
    formats,
    channels: parseChannels(audio[1] ?? ''),
    sampleRate: parseRate(audio[1] ?? ''),
    bitDepth: parseDepth(audio[1] ?? ''),
    durationSeconds,
    durationUncertain: estimated || durationSeconds === undefined || formats.includes('mp3'),
  };
}

/** The channel count in a stream summary such as `mp3, 44100 Hz, stereo, fltp, 320 kb/s`. */
function parseChannels(summary: string): number {
  if (/\bmono\b/.test(summary)) return 1;
  const counted = /\b(\d+) channels\b/.exec(summary);
  if (counted !== null) return Number(counted[1]);
  // Named layouts other than mono (stereo, 2.1, 5.1(side), ...) all have at least two channels.
  return 2;
}

function parseRate(summary: string): number | undefined {
  const match = /\b(\d+) Hz\b/.exec(summary);
  return match ? Number(match[1]) : undefined;
}

/**
 * The depth of a lossless stream from its codec and sample format (`pcm_s24le, 48000 Hz, stereo,
 * s32 (24 bit)`, `flac, …, s16`, `pcm_f32le, …, flt`); lossy codecs (mp3, aac, opus, vorbis) have none.
 */
function parseDepth(summary: string): 16 | 24 | 'float' | undefined {
  const codec = summary.split(/[ ,]/)[0] ?? '';
  if (!/^(pcm_|flac|alac|wavpack|ape|tta)/.test(codec)) return undefined;
  if (/^pcm_f(32|64)/.test(codec) || /\b(flt|fltp|dbl|dblp)\b/.test(summary)) return 'float';
  if (/\((2[0-9]|3[0-2]) bit\)/.test(summary) || /\bs(24|32)p?\b/.test(summary) || /^pcm_s(24|32)/.test(codec)) return 24;
  return 16;
}

/** `HH:MM:SS.fraction` to seconds; undefined for `N/A` or anything else. */
export function parseClock(clock: string | undefined): number | undefined {
  const match = /^(\d+):(\d{2}):(\d{2}(?:\.\d+)?)$/.exec(clock ?? '');
  if (match === null) return undefined;
  return Number(match[1]) * 3600 + Number(match[2]) * 60 + Number(match[3]);
}

export function decodeFailed(file: string, reason: string): StemsplitError {
  return new StemsplitError('AUDIO_DECODE_FAILED', `cannot decode ${path.basename(file)}: ${reason}`);
}

/** Duration in seconds of the first audio stream; throws AUDIO_DECODE_FAILED for undecodable or audio-less input. */
export async function probeDurationSeconds(file: string, ffmpegPath = resolveFfmpegPath()): Promise<number> {
  const header = await readAudioHeader(file, ffmpegPath);
  if (!header.durationUncertain && header.durationSeconds !== undefined) return header.durationSeconds;
  return measureDecodedSeconds(file, ffmpegPath);
}

/** Decodes the first audio stream to the null muxer and returns how long it was. */
async function measureDecodedSeconds(file: string, ffmpegPath: string): Promise<number> {
  const args = ['-nostdin', '-v', 'error', '-i', ffmpegInputUrl(file), '-map', '0:a:0', '-f', 'null', '-progress', 'pipe:1', '-'];
  const run = spawnFfmpeg(ffmpegPath, args);
  run.child.stdin.end();
  let progress = '';
  run.child.stdout.setEncoding('utf8');
  // Keep only the tail: each progress block repeats the running `out_time`.
  run.child.stdout.on('data', (text: string) => (progress = (progress + text).slice(-4096)));
  const code = await run.exited;
  if (code !== 0) throw decodeFailed(file, run.stderr.lastLine() || `ffmpeg exited with ${String(code)}`);
  const times = [...progress.matchAll(/^out_time=([\d:.]+)$/gm)];
  const seconds = parseClock(times.at(-1)?.[1]);
  if (seconds === undefined || seconds <= 0) throw decodeFailed(file, 'no audio samples');
  return seconds;
}
