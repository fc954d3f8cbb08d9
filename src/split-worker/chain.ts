/**
 * Running a chain (chains/recipe.ts) in one job: step 1 splits the track, each later step splits
 * a stem an earlier one made. Every step writes all its stems as 32-bit float WAV at the source's
 * rate into the job's work folder, so a stem a later step splits loses nothing to a lossy format;
 * the stems the chain writes are then encoded, as asked, into the output folder (staged, as a
 * single model's are).
 *
 * A finished step leaves a `done.json` beside its stems: a run that was killed (a crash, a
 * server restart) starts again at the first unfinished step. The work folder's name is a hash
 * of the source and the recipe, so another recipe or another file never picks up its steps; it
 * is removed once the stems are in place, or when the split fails or is stopped.
 */
import { createHash } from 'node:crypto';
import { stat, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { decodeInterleaved, openStemEncoder, readAudioHeader, readWavLayout, type StemEncoder } from '../audio/index.js';
import { leveled, needsPeak, peakOf, stemGain } from '../audio/levels.js';
import { CHAIN_STEPS_SHARE, chainStemName, chainStems, writtenStems } from '../chains/recipe.js';
import { StemsplitError } from '../errors.js';
import { mixStems, type StemPartition } from '../separation/mix-set.js';
import type { SeparationModel } from '../separation/model.js';
import { isEnsemble, planOf, type Ensemble } from '../ensemble/separate.js';
import {
  encoderOptions,
  splitAudioFile,
  stemFileName,
  stemOutput,
  type SplitFileOptions,
  type SplitFileResult,
  type SplitProgress,
} from './split-audio-file.js';
import { moveIntoPlace, openStaging } from './staging.js';

/** A chain's step with its model loaded. */
export interface LoadedStep {
  /** The stem it splits; absent on the first step. */
  readonly input?: string | undefined;
  readonly model: SeparationModel | Ensemble;
}

export interface ChainOptions extends SplitFileOptions {
  /** Write the stems later steps split too (`--keep-intermediate`). */
  readonly keepIntermediate?: boolean;
}

/** The stems one loaded step makes, by its own names. */
function stemsOf(model: SeparationModel | Ensemble): readonly string[] {
  return isEnsemble(model) ? planOf(model, undefined).stems : model.sources;
}

export async function splitChain(inputPath: string, steps: readonly LoadedStep[], outDir: string, options: ChainOptions): Promise<SplitFileResult> {
  if (options.twoStems !== undefined || options.singleStem !== undefined) {
    throw new StemsplitError(
      'USAGE',
      'two stems and a single stem apply to one model; a chain writes every stem its steps make (name the stems you do not want as inputs of later steps)',
    );
  }
  const stems = chainStems(
    steps.map((step) => step.input),
    steps.map((step) => stemsOf(step.model)),
  );
  if ('problem' in stems) throw new StemsplitError('USAGE', `the chain: ${stems.problem}`);
  const written = writtenStems(stems, options.keepIntermediate ?? false);
  const work = join(outDir, `.chain-${await fingerprint(inputPath, steps, options)}`);
  const report = (progress: Omit<SplitProgress, 'steps'>) => options.onProgress?.({ ...progress, steps: steps.length });
  try {
    const made = new Map<string, string>();
    // How the stems add up: step 1's to the mix, each later step's to the stem it split.
    const partitions: StemPartition[] = [];
    for (const [index, step] of steps.entries()) {
      const source = step.input === undefined ? inputPath : (made.get(step.input) as string);
      const share = (percent: number) => (CHAIN_STEPS_SHARE * (index + percent / 100)) / steps.length;
      const own = await runStep(join(work, `step-${index + 1}`), source, step.model, options, (progress) =>
        report({ phase: progress.phase, percent: share(progress.percent), step: index + 1 }),
      );
      for (const [stem, path] of Object.entries(own.stems)) made.set(chainStemName(step.input, stem), path);
      partitions.push({ ...(step.input !== undefined ? { whole: step.input } : {}), parts: own.mixStems.map((stem) => chainStemName(step.input, stem)) });
    }
    report({ phase: 'encode', percent: CHAIN_STEPS_SHARE, step: steps.length });
    const files = await encodeWritten(
      inputPath,
      written.map((stem) => ({ stem, path: made.get(stem) as string })),
      outDir,
      options,
      (fraction) => report({ phase: 'encode', percent: CHAIN_STEPS_SHARE + (100 - CHAIN_STEPS_SHARE) * fraction, step: steps.length }),
    );
    const { frames, sampleRate } = await readWavLayout(made.get(written[0] as string) as string);
    await rm(work, { recursive: true, force: true });
    return { stems: files, mixStems: mixStems(written, partitions), durationSeconds: frames / sampleRate };
  } catch (error) {
    // A failed or stopped chain is not resumed: its job is failed (and refunded) or its run stopped.
    await rm(work, { recursive: true, force: true });
    throw error;
  }
}

/**
 * One step: its stems as float WAV in `dir`, or those a killed run already finished there
 * (`done.json` lists them).
 */
async function runStep(
  dir: string,
  source: string,
  model: SeparationModel | Ensemble,
  options: ChainOptions,
  onProgress: (progress: SplitProgress) => void,
): Promise<StepStems> {
  const done = join(dir, 'done.json');
  const kept = await readFile(done, 'utf8').then(
    (text) => JSON.parse(text) as StepStems,
    () => undefined,
  );
  if (kept !== undefined) {
    onProgress({ phase: 'encode', percent: 100 });
    return kept;
  }
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const result = await splitAudioFile(source, model, join(dir, 'stems'), {
    format: 'wav',
    bitDepth: 32,
    ...(options.shifts !== undefined ? { shifts: options.shifts } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
    onProgress,
  });
  const stems: StepStems = { stems: { ...result.stems }, mixStems: [...(result.mixStems ?? Object.keys(result.stems))] };
  await writeFile(done, JSON.stringify(stems));
  return stems;
}

/** What a finished step made (its own stem names → float WAV files) and which of them add up to its input. */
interface StepStems {
  readonly stems: Readonly<Record<string, string>>;
  readonly mixStems: readonly string[];
}

/** A name for the work folder that changes with the source file and the recipe. */
async function fingerprint(inputPath: string, steps: readonly LoadedStep[], options: ChainOptions): Promise<string> {
  const file = await stat(inputPath);
  const recipe = steps.map((step) => ({ input: step.input, model: step.model.name, method: isEnsemble(step.model) ? step.model.method : undefined }));
  const key = JSON.stringify({ inputPath, size: file.size, mtime: file.mtimeMs, recipe, shifts: options.shifts });
  return createHash('sha256').update(key).digest('hex').slice(0, 16);
}

/** Encodes each written stem from its float WAV into `outDir`, as asked, through a staging folder. Returns stem → file. */
async function encodeWritten(
  inputPath: string,
  stems: ReadonlyArray<{ stem: string; path: string }>,
  outDir: string,
  options: ChainOptions,
  onProgress: (fraction: number) => void,
): Promise<Record<string, string>> {
  const source = await readAudioHeader(inputPath);
  const staging = await openStaging(outDir);
  const files = stems.map(({ stem }) => stemFileName(options, stem));
  const encoders: StemEncoder[] = [];
  try {
    for (const [index, { path }] of stems.entries()) {
      options.signal?.throwIfAborted();
      const layout = await readWavLayout(path);
      const output = stemOutput({ sampleRate: source.sampleRate, channels: layout.channels, bitDepth: source.bitDepth }, layout.sampleRate, options);
      const encoder = await openStemEncoder(join(staging, files[index] as string), layout.frames, encoderOptions(options, layout.sampleRate, output));
      encoders.push(encoder);
      const header = await readAudioHeader(path);
      const decode = { sampleRate: layout.sampleRate, header, ...(options.signal ? { signal: options.signal } : {}) };
      // --normalize and --clip-mode rescale need the stem's peak first: the float WAV is read once more for it.
      let peak = 0;
      if (needsPeak(options)) for await (const block of decodeInterleaved(path, decode)) peak = Math.max(peak, peakOf(block));
      const gain = stemGain(peak, options);
      for await (const block of decodeInterleaved(path, decode)) {
        const frames = block.length / 2;
        await encoder.write(leveled(planarOf(block, frames), gain, options), frames);
      }
      await encoder.finish();
      onProgress((index + 1) / stems.length);
    }
    await moveIntoPlace(staging, outDir, files);
    return Object.fromEntries(files.map((file, index) => [stems[index]?.stem as string, join(outDir, file)]));
  } catch (error) {
    await Promise.all(encoders.map((encoder) => encoder.abort()));
    await rm(staging, { recursive: true, force: true });
    throw error;
  }
}

/** Interleaved stereo → planar [2, frames]. */
function planarOf(interleaved: Float32Array, frames: number): Float32Array {
  const planar = new Float32Array(2 * frames);
  for (let i = 0; i < frames; i++) {
    planar[i] = interleaved[2 * i] as number;
    planar[frames + i] = interleaved[2 * i + 1] as number;
  }
  return planar;
}
