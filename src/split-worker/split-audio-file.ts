/**
 * The one use case both the CLI and the server run: decode a file, separate it, encode each stem.
 * Progress is reported as a single 0–100 figure over the three phases, weighted by how long
 * each typically takes, so a bar moves evenly.
 */
import { rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import {
  decodeFailed,
  decodeInterleaved,
  openStemEncoder,
  readAudioHeader,
  type AudioHeader,
  type EncodeOptions,
  type DecodeOptions,
  type StemDepth,
  type StemEncoder,
  type StemFormat,
} from '../audio/index.js';
import { STEM_FORMAT_INFO, stemBitrate, stemExtension, storableRate, type BitDepth } from '../audio/formats.js';
import type { LevelOptions } from '../audio/levels.js';
import { StemsplitError } from '../errors.js';
import { twoStemsProblem } from '../split-request/split-request.js';
import { diskSize, freeBytesAt } from '../disk-space.js';
import { NormalizationMeter, separateStream, type TrackStatistics } from '../separation/index.js';
import type { SeparationModel } from '../separation/model.js';
import { mixStems } from '../separation/mix-set.js';
import { withSpectralComplement } from '../separation/spectral-inversion.js';
import { mixPartitions } from '../ensemble/plan.js';
import { ensembleSampleRate, isEnsemble, planOf, separateEnsemble, spoolBytes, type Ensemble } from '../ensemble/separate.js';
import { moveIntoPlace, openStaging } from './staging.js';
import { levelSpoolBytes, openLeveledStems, type LeveledStems } from './levels.js';

export type SplitPhase = 'decode' | 'separate' | 'encode';

export interface SplitProgress {
  readonly phase: SplitPhase;
  /** Overall progress, 0–100. */
  readonly percent: number;
  /** A chain's step now running (1-based) and its number of steps (split-worker/chain.ts); absent for one model. */
  readonly step?: number;
  readonly steps?: number;
}

/** What a split writes: plain data, the same from the CLI, the job runner and across to the worker process. */
export interface StemOutputOptions extends LevelOptions {
  readonly format: StemFormat;
  /** Lossy formats: kb/s (formats.ts has each one's range and default). */
  readonly bitrateKbps?: number;
  /** Lossless formats: 16- or 24-bit, or 32-bit float (WAV); absent, the source's depth. */
  readonly bitDepth?: BitDepth;
  /** Write stems at this rate; default the source's (MP3, Opus, AAC: the nearest rate they hold). */
  readonly sampleRate?: number;
  readonly shifts?: number;
  /** Write this stem and `no_<stem>` (the sum of the others), demucs' --two-stems. */
  readonly twoStems?: string;
  /** Write only this stem (or `no_<stem>`, the rest of one): python-audio-separator's --single_stem. */
  readonly singleStem?: string;
  /** Each stem's file name, `{stem}` standing for its name (split --filename); default `{stem}.<the format's extension>`. */
  readonly stemFile?: string;
}

export interface SplitFileOptions extends StemOutputOptions {
  readonly onProgress?: (progress: SplitProgress) => void;
  readonly signal?: AbortSignal;
}

export interface SplitFileResult {
  /** Stem name → file written. */
  readonly stems: Readonly<Record<string, string>>;
  /**
   * The stems that add up to the mix, each part once (separation/mix-set.ts); [] when they don't
   * (one stem written). Absent where a splitter does not say: a job then keeps no mix set.
   */
  readonly mixStems?: readonly string[];
  readonly durationSeconds: number;
}

/**
 * Where each phase sits on the 0–100 scale. Decoding (the first pass, which measures the track)
 * takes about 0.1 s a minute; separating and encoding then run together, the encoders taking
 * each block as the model settles it, so the bar follows the model; the last step flushes the
 * encoders and moves the stems into place.
 */
const PHASE_SPAN: Readonly<Record<SplitPhase, readonly [number, number]>> = {
  decode: [0, 3],
  separate: [3, 97],
  encode: [97, 100],
};

function overall(phase: SplitPhase, fraction: number): number {
  const [from, to] = PHASE_SPAN[phase];
  return from + (to - from) * Math.max(0, Math.min(1, fraction));
}

/**
 * Splits `inputPath` into `<outDir>/<stem>.<ext>`, streaming: the file is decoded once to
 * measure it (length, and the statistics Demucs normalises by), then again into the model (a
 * VR model reads it once more before, for its spectrogram's peak),
 * and each stem block goes to its encoder as soon as the model has settled it. Memory does
 * not grow with the track's length, for Demucs, the bundled models and RoFormers alike; disk
 * needs room for the stems only (checked first). An ensemble decodes the track once more per
 * member and needs room for its spools too (ensemble/separate.ts).
 *
 * Stems are written into a sibling staging folder first and moved into place at the end
 * (staging.ts), so `outDir` never holds a half-written stem.
 */
export async function splitAudioFile(
  inputPath: string,
  model: SeparationModel | Ensemble,
  outDir: string,
  options: SplitFileOptions,
): Promise<SplitFileResult> {
  const report = (phase: SplitPhase, fraction: number) => options.onProgress?.({ phase, percent: overall(phase, fraction) });
  const signal = options.signal ? { signal: options.signal } : {};
  const sampleRate = isEnsemble(model) ? ensembleSampleRate(model) : model.sampleRate;
  const twoStems = options.twoStems ?? pairOfSingleStem(options.singleStem);
  const ensemble = isEnsemble(model) ? { ensemble: model, plan: planOf(model, twoStems) } : undefined;
  // --two-stems X of a multi-stem model run with --invert-spect: no_X by spectral inversion of the mix and X.
  const single = ensemble ? undefined : withSpectralComplement(model as SeparationModel, twoStems);
  const planned = ensemble
    ? { names: ensemble.plan.stems, combine: (blocks: readonly Float32Array[]) => blocks }
    : stemPlan(single as SeparationModel, twoStems);
  const stems = options.singleStem === undefined ? planned : onlyStem(planned, options.singleStem, model.name);

  report('decode', 0);
  const source = await measure(inputPath, sampleRate, options, (fraction) => report('decode', fraction));
  // A model whose official code writes stereo stems for a mono source (MDX-Net) keeps them stereo.
  const stereoForMono = isEnsemble(model) ? model.members.some((member) => member.stereoForMono) : model.stereoForMono;
  const output = stemOutput(stereoForMono ? { ...source.header, channels: 2 } : source.header, sampleRate, options);
  const spool = ensemble ? spoolBytes(ensemble.plan, ensemble.ensemble.members.length, source.length) : 0;
  const levelSpool = levelSpoolBytes(options, stems.names.length, source.length);
  await ensureDiskSpace(dirname(outDir), stemBytes(source.length / sampleRate, output, options, stems.names.length, spool + levelSpool));

  const staging = await openStaging(outDir);
  const files = stems.names.map((name) => stemFileName(options, name));
  const encoders: StemEncoder[] = [];
  let leveledStems: LeveledStems | undefined;
  try {
    for (const file of files) {
      encoders.push(await openStemEncoder(join(staging, file), source.length, encoderOptions(options, sampleRate, output)));
    }
    // --normalize and --clip-mode stand between the stems and their encoders (levels.ts).
    const leveling = await openLeveledStems(encoders, join(staging, 'levels'), options);
    leveledStems = leveling;
    const write = (blocks: readonly Float32Array[], frames: number): Promise<void> => leveling.write(stems.combine(blocks, frames), frames);
    const passes = {
      ...(options.shifts !== undefined ? { shifts: options.shifts } : {}),
      ...signal,
    };
    if (ensemble) {
      // Each member decodes the track again; all but the last spool their stems in the staging folder.
      const track = { length: source.length, statistics: source.statistics, frames: () => decodeInterleaved(inputPath, source.decode) };
      await separateEnsemble(ensemble.ensemble, ensemble.plan, track, join(staging, 'ensemble'), write, {
        ...passes,
        onProgress: (fraction) => report('separate', fraction),
      });
    } else {
      // The second decode goes straight into the model.
      const frames = decodeInterleaved(inputPath, source.decode);
      const reread = () => decodeInterleaved(inputPath, source.decode);
      await separateStream(single as SeparationModel, { length: source.length, statistics: source.statistics, frames, reread }, write, {
        ...passes,
        onProgress: ({ done, total }) => report('separate', done / total),
      });
    }
    report('encode', 0);
    await leveling.drain((fraction) => report('encode', 0.9 * fraction));
    for (const encoder of encoders) await encoder.finish();
    await moveIntoPlace(staging, outDir, files);
    report('encode', 1);
    const written = Object.fromEntries(files.map((file, index) => [stems.names[index] as string, join(outDir, file)]));
    const partitions = ensemble ? mixPartitions(ensemble.plan, ensemble.ensemble.members) : [{ parts: planned.names }];
    return { stems: written, mixStems: mixStems(stems.names, partitions), durationSeconds: source.length / sampleRate };
  } catch (error) {
    await leveledStems?.abort();
    await Promise.all(encoders.map((encoder) => encoder.abort()));
    await rm(staging, { recursive: true, force: true });
    throw error;
  }
}

/** A stem's file name: `--filename`'s file part, or `<stem>.<ext>`. */
export function stemFileName(options: Pick<StemOutputOptions, 'stemFile' | 'format'>, stem: string): string {
  return (options.stemFile ?? `{stem}.${stemExtension(options.format)}`).replaceAll('{stem}', stem);
}

/** How a stem of blocks at `sampleRate` is encoded, as the options and `stemOutput` say. */
export function encoderOptions(options: StemOutputOptions, sampleRate: number, output: ReturnType<typeof stemOutput>): EncodeOptions {
  return { format: options.format, sampleRate, ...output, ...(options.bitrateKbps !== undefined ? { bitrateKbps: options.bitrateKbps } : {}) };
}

/** What the first pass learns: the file's header, its length at the model's rate and the mono mix's statistics. */
interface Measured {
  readonly header: AudioHeader;
  /** Samples per channel at the model's rate. */
  readonly length: number;
  readonly statistics: TrackStatistics;
  /** How the file is decoded, for the second pass to read it the same way. */
  readonly decode: DecodeOptions & { readonly header: AudioHeader };
}

/** First pass: decodes the file once to count its samples and meet its statistics. */
async function measure(inputPath: string, sampleRate: number, options: SplitFileOptions, onProgress: (fraction: number) => void): Promise<Measured> {
  const header = await readAudioHeader(inputPath);
  const decode = { sampleRate, header, ...(options.signal ? { signal: options.signal } : {}) };
  const meter = new NormalizationMeter();
  for await (const block of decodeInterleaved(inputPath, decode)) {
    meter.add(block);
    if (header.durationSeconds) onProgress(meter.frames / sampleRate / header.durationSeconds);
  }
  if (meter.frames === 0) throw decodeFailed(inputPath, 'no audio samples');
  return { header, length: meter.frames, statistics: meter.statistics(), decode };
}

/**
 * Disk a job needs: its stems, written to a staging folder beside the output and moved in
 * (no other spill: the source is decoded again rather than kept). A lossless format is at most
 * its PCM size, a lossy one its bitrate; plus 1 % and 64 KiB a stem (headers, a last frame).
 * `spool` adds what sits beside the stems for a while: an ensemble's spools, and the level
 * spools of --normalize and --clip-mode rescale (levels.ts).
 * An ensemble adds its spools (`spool` bytes: stereo float32 at the model rate for each stem
 * each member but the last makes, see ensemble/separate.ts), which sit beside the stems.
 */
export function stemBytes(
  seconds: number,
  output: { outputSampleRate: number; channels: 1 | 2; depth: StemDepth },
  options: Pick<SplitFileOptions, 'format' | 'bitrateKbps'>,
  stems: number,
  spool = 0,
): number {
  const kbps = stemBitrate(options.format, options.bitrateKbps, output.channels);
  const perSecond =
    kbps !== undefined ? (kbps * 1000) / 8 : output.outputSampleRate * output.channels * (output.depth === 16 ? 2 : output.depth === 24 ? 3 : 4);
  return Math.ceil(stems * (seconds * perSecond * 1.01 + 65_536) + spool);
}

/** Refuses a job whose stems would not fit on the disk that holds `dir` (or its nearest existing parent). */
async function ensureDiskSpace(dir: string, bytes: number): Promise<void> {
  const free = await freeBytesAt(dir);
  if (free && free.bytes < bytes) {
    throw new StemsplitError('STORAGE_FAILED', `the stems need about ${diskSize(bytes)} of disk and ${free.at} has ${diskSize(free.bytes)} free`);
  }
}

/**
 * How stems are written, as a studio expects: at the source's rate (resampled back from the
 * model's), mono for a mono source (more than two channels are mixed down to stereo before
 * separating, so their stems are stereo), and at the source's depth (16, 24 or float; a lossy
 * source gives 16-bit; a float source 24-bit where the format holds no float). --sample-rate,
 * bitDepth (--int24, --float32) overrides; a rate the format cannot hold becomes the nearest it can above.
 * (A lossy format takes float samples; the depth it is given does not matter to it.)
 */
export function stemOutput(
  source: Pick<AudioHeader, 'sampleRate' | 'channels' | 'bitDepth'>,
  modelRate: number,
  options: Pick<SplitFileOptions, 'format' | 'bitDepth' | 'sampleRate'>,
): { outputSampleRate: number; channels: 1 | 2; depth: StemDepth } {
  const rate = storableRate(options.format, options.sampleRate ?? source.sampleRate ?? modelRate);
  const holdsFloat = STEM_FORMAT_INFO[options.format].depths?.includes(32) ?? true;
  const sourceDepth: StemDepth = source.bitDepth === 'float' ? (holdsFloat ? 'float' : 24) : (source.bitDepth ?? 16);
  const depth: StemDepth = options.bitDepth === 32 ? 'float' : (options.bitDepth ?? sourceDepth);
  return { outputSampleRate: rate, channels: source.channels === 1 ? 1 : 2, depth };
}

/**
 * Where `twoStems` is among a model's sources, or a USAGE error naming them: checked by the CLI
 * before the model loads (where its catalog entry lists its sources) and here once it has.
 */
export function twoStemsIndex(twoStems: string, modelName: string, sources: readonly string[]): number {
  const problem = twoStemsProblem(twoStems, modelName, sources, '--two-stems');
  if (problem !== undefined) throw new StemsplitError('USAGE', problem);
  return sources.indexOf(twoStems);
}

/** `--single-stem no_vocals` is the rest of `vocals`: a two-stem plan, of which one stem is written. */
function pairOfSingleStem(singleStem: string | undefined): string | undefined {
  return singleStem?.startsWith('no_') ? singleStem.slice(3) : undefined;
}

/** The plan cut down to one of its stems (python-audio-separator's --single_stem). */
function onlyStem(plan: StemPlan, stem: string, modelName: string): StemPlan {
  const index = plan.names.indexOf(stem);
  if (index < 0)
    throw new StemsplitError(
      'USAGE',
      `--single-stem ${stem}: model ${modelName} writes no such stem (it writes ${plan.names.join(', ')}; no_<stem> for the rest of one)`,
    );
  return { names: [stem], combine: (blocks, frames) => [plan.combine(blocks, frames)[index] as Float32Array] };
}

/** Which stems a split writes, and how a block of model sources becomes them. */
interface StemPlan {
  readonly names: readonly string[];
  combine(blocks: readonly Float32Array[], frames: number): readonly Float32Array[];
}

/**
 * Every model source, or with `twoStems` the demucs --two-stems pair: `stem` and `no_<stem>`,
 * the sum of every other source.
 */
function stemPlan(model: SeparationModel, twoStems: string | undefined): StemPlan {
  if (twoStems === undefined) return { names: model.sources, combine: (blocks) => blocks };
  const index = twoStemsIndex(twoStems, model.name, model.sources);
  return {
    names: [twoStems, `no_${twoStems}`],
    combine(blocks, frames) {
      const rest = new Float32Array(2 * frames);
      for (const [i, other] of blocks.entries()) {
        if (i === index) continue;
        for (let k = 0; k < rest.length; k++) rest[k] = (rest[k] as number) + (other[k] as number);
      }
      return [blocks[index] as Float32Array, rest];
    },
  };
}
