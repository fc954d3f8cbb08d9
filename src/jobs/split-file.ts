/**
 * The one use case both the CLI and the server run: decode a file, separate it, encode each stem.
 * Progress is reported as a single 0–100 figure over the three phases, weighted by how long
 * each typically takes, so a bar moves evenly.
 */
import { mkdir, readdir, rename, rm } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { decodeToPlanar, encodeStem, type AudioHeader, type StemDepth, type StemFormat } from '../audio/index.js';
import { StemsplitError } from '../errors.js';
import { separate } from '../separation/index.js';
import type { SegmentModel } from '../separation/model.js';

export type SplitPhase = 'decode' | 'separate' | 'encode';

export interface SplitProgress {
  readonly phase: SplitPhase;
  /** Overall progress, 0–100. */
  readonly percent: number;
}

export interface SplitFileOptions {
  readonly format: StemFormat;
  readonly mp3BitrateKbps?: number;
  /** WAV only: 32-bit float stems. */
  readonly float32?: boolean;
  /** WAV and FLAC: 24-bit stems. */
  readonly int24?: boolean;
  /** Write stems at this rate; default the source's (MP3: the source's where MP3 allows it). */
  readonly sampleRate?: number;
  readonly shifts?: number;
  readonly overlap?: number;
  /** Write this stem and `no_<stem>` (the sum of the others), demucs' --two-stems. */
  readonly twoStems?: string;
  readonly onProgress?: (progress: SplitProgress) => void;
  readonly signal?: AbortSignal;
  /** Stems encoded at once (default: one per core). */
  readonly encoders?: number;
}

export interface SplitFileResult {
  /** Stem name → file written. */
  readonly stems: Readonly<Record<string, string>>;
  readonly durationSeconds: number;
}

/**
 * Where each phase sits on the 0–100 scale, by its usual share of the time (docs/benchmarks.md,
 * 2 cores, per minute of audio): decoding takes ~0.1 s; separating 4.8 s with the bundled model
 * and 29 s with Demucs; encoding 4 MP3 stems two at a time ~5 s. Encoding is half the work with
 * the bundled model and a seventh with Demucs: a quarter of the bar is the middle ground.
 */
const PHASE_SPAN: Readonly<Record<SplitPhase, readonly [number, number]>> = {
  decode: [0, 2],
  separate: [2, 75],
  encode: [75, 100],
};

function overall(phase: SplitPhase, fraction: number): number {
  const [from, to] = PHASE_SPAN[phase];
  return from + (to - from) * Math.max(0, Math.min(1, fraction));
}

export function stemExtension(format: StemFormat): string {
  return format;
}

/**
 * Splits `inputPath` into `<outDir>/<stem>.<ext>`. Stems are written into a sibling temporary
 * folder first and moved into place at the end, so `outDir` never holds a half-written stem.
 */
export async function splitAudioFile(
  inputPath: string,
  model: SegmentModel,
  outDir: string,
  options: SplitFileOptions,
): Promise<SplitFileResult> {
  const report = (phase: SplitPhase, fraction: number) => options.onProgress?.({ phase, percent: overall(phase, fraction) });

  report('decode', 0);
  const audio = await decodeToPlanar(inputPath, {
    sampleRate: model.sampleRate,
    ...(options.signal ? { signal: options.signal } : {}),
    onProgress: ({ decodedSeconds, totalSeconds }) => report('decode', totalSeconds ? decodedSeconds / totalSeconds : 0),
  });

  const stems = await separate(model, audio, {
    ...(options.shifts !== undefined ? { shifts: options.shifts } : {}),
    ...(options.overlap !== undefined ? { overlap: options.overlap } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
    onProgress: ({ done, total }) => report('separate', done / total),
  });

  const { names, planes } = options.twoStems === undefined ? { names: model.sources, planes: stems } : twoStems(model, stems, options.twoStems);
  const output = stemOutput(audio.source, audio.sampleRate, options);
  const staging = `${stagingPrefix(outDir)}${Date.now()}`;
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  try {
    const written: Record<string, string> = {};
    const encodedShare = new Array<number>(names.length).fill(0);
    const reportEncoded = (index: number, fraction: number) => {
      encodedShare[index] = fraction;
      report('encode', encodedShare.reduce((sum, share) => sum + share, 0) / names.length);
    };
    // Each encode is its own ffmpeg process: running one per core keeps every core busy.
    await forEachConcurrently([...names.entries()], options.encoders ?? availableParallelism(), async ([index, name]) => {
      options.signal?.throwIfAborted();
      const planar = planes[index];
      if (!planar) throw new Error(`model ${model.name} returned no audio for ${name}`);
      const file = `${name}.${stemExtension(options.format)}`;
      await encodeStem(planar, audio.length, join(staging, file), {
        format: options.format,
        sampleRate: audio.sampleRate,
        ...output,
        ...(options.mp3BitrateKbps !== undefined ? { mp3BitrateKbps: options.mp3BitrateKbps } : {}),
        onProgress: (fraction) => reportEncoded(index, fraction),
      });
      planes[index] = new Float32Array(0); // let the encoded stem's buffer go
      written[name] = join(outDir, file);
      reportEncoded(index, 1);
    });
    // Move the finished stems in one by one: other files a user keeps in outDir are left alone.
    await mkdir(outDir, { recursive: true });
    for (const name of names) {
      const file = `${name}.${stemExtension(options.format)}`;
      await rename(join(staging, file), join(outDir, file));
    }
    await rm(staging, { recursive: true, force: true });
    return { stems: written, durationSeconds: audio.length / audio.sampleRate };
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    throw error;
  }
}

/** Rates an MP3 can have (MPEG-1, -2 and 2.5). */
export const MP3_RATES: readonly number[] = [8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000];

/**
 * How stems are written, as a studio expects: at the source's rate (resampled back from the
 * model's), mono for a mono source (more than two channels are mixed down to stereo before
 * separating, so their stems are stereo), and at the source's depth (16, 24 or float; a lossy
 * source gives 16-bit). --sample-rate, --int24 and --float32 override.
 */
export function stemOutput(
  source: Pick<AudioHeader, 'sampleRate' | 'channels' | 'bitDepth'>,
  modelRate: number,
  options: Pick<SplitFileOptions, 'format' | 'float32' | 'int24' | 'sampleRate'>,
): { outputSampleRate: number; channels: 1 | 2; depth: StemDepth } {
  let rate = options.sampleRate ?? source.sampleRate ?? modelRate;
  if (options.format === 'mp3' && !MP3_RATES.includes(rate)) rate = rate > 48_000 ? 48_000 : 44_100;
  const sourceDepth: StemDepth = source.bitDepth === 'float' ? (options.format === 'flac' ? 24 : 'float') : (source.bitDepth ?? 16);
  const depth: StemDepth = options.float32 ? 'float' : options.int24 ? 24 : sourceDepth;
  return { outputSampleRate: rate, channels: source.channels === 1 ? 1 : 2, depth };
}

/** `stem` and `no_<stem>` (the sum of every other stem), as demucs --two-stems writes them. */
function twoStems(model: SegmentModel, stems: Float32Array[], stem: string): { names: string[]; planes: Float32Array[] } {
  const index = model.sources.indexOf(stem);
  if (index < 0) throw new StemsplitError('USAGE', `--two-stems ${stem}: model ${model.name} has no such stem (it has ${model.sources.join(', ')})`);
  const target = stems[index] as Float32Array;
  const rest = new Float32Array(target.length);
  for (const [i, other] of stems.entries()) {
    if (i === index) continue;
    for (let k = 0; k < rest.length; k++) rest[k] = (rest[k] as number) + (other[k] as number);
  }
  return { names: [stem, `no_${stem}`], planes: [target, rest] };
}

/**
 * Stems are encoded into `<outDir>.partial-<pid>-<time>` and moved in when all are done. The
 * prefix names this process's staging folders for `outDir`, for whoever must remove them when
 * the process is stopped mid-encode.
 */
export function stagingPrefix(outDir: string): string {
  return `${outDir}.partial-${process.pid}-`;
}

/** Removes this process's staging folders for `outDir` (a stopped split's half-encoded stems). */
export async function removeStaging(outDir: string): Promise<void> {
  const prefix = basename(stagingPrefix(outDir));
  const names = await readdir(dirname(outDir)).catch(() => [] as string[]);
  await Promise.all(names.filter((name) => name.startsWith(prefix)).map((name) => rm(join(dirname(outDir), name), { recursive: true, force: true })));
}

/** Runs `work` over `items`, at most `limit` at a time; the first failure rejects after the rest settle. */
async function forEachConcurrently<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, async () => {
    while (next < items.length) {
      const item = items[next++] as T;
      await work(item);
    }
  });
  const results = await Promise.allSettled(lanes);
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
}
