/**
 * `split`'s flags as what a split asks for (split-request/): the same object the API's body is,
 * checked by the same rules, its problems named by the flags. What only the CLI has (the output
 * folder, the filename template, --single-stem, --sample-rate, --pull) stays beside it.
 */
import { isStemFormat, STEM_FORMATS } from '../audio/index.js';
import { bitrateProblem, STEM_FORMAT_INFO, type StemFormat } from '../audio/formats.js';
import { CLIP_MODES, DEFAULT_NORMALIZE_PEAK, isClipMode, normalizePeakProblem } from '../audio/levels.js';
import { StemsplitError } from '../errors.js';
import type { StemOutputOptions } from '../split-worker/split-audio-file.js';
import { ENSEMBLE_ALGORITHMS, isEnsembleAlgorithm } from '../ensemble/algorithms.js';
import { ensembleMembers } from '../config.js';
import { familyFlags } from '../models/families.js';
import { CLI_DEFAULT_ALIAS } from '../models/aliases.js';
import { flagAttribute } from '../contract/family.js';
import { checkSplitRequest, splitRequestProblem, stemOutputOf, type FieldWords, type SplitRequest } from '../split-request/split-request.js';
import type { RecipeStep } from '../chains/recipe.js';
import { readRecipeFile, thenSteps } from './chain-steps.js';

export interface SplitOptions {
  int24?: boolean;
  sampleRate?: string;
  /** Each --model given; several make an ensemble. */
  model: string[];
  ensemble?: string;
  ensembleWeights?: string;
  modelConfig?: string;
  twoStems?: string;
  singleStem?: string;
  output: string;
  format: string;
  float32?: boolean;
  bitrate?: string;
  /** The old name of --bitrate, for MP3. */
  mp3Bitrate?: string;
  clipMode?: string;
  /** --normalize alone (true) or with its peak. */
  normalize?: string | boolean;
  json?: boolean;
  /** Where each stem goes under -o: `{track}/{stem}.{ext}` by default (cli/filename-template.ts). */
  filename?: string;
  /** Pull the catalog models named with --model that are not installed, first. */
  pull?: boolean;
  /** A named ensemble (`presets list`) instead of --model/--ensemble. */
  preset?: string;
  /** Each --then INPUT=MODEL: a chain's later steps. */
  then?: string[];
  /** A chain's recipe file. */
  chain?: string;
  keepIntermediate?: boolean;
  /** Each family's options (its table, contract/family.ts), as commander parsed them: --shifts, --mdx-overlap, … */
  readonly [familyFlag: string]: unknown;
}

/** A flag commander parsed: a value, or true for a switch. */
export function isGiven(value: unknown): boolean {
  return value !== undefined && value !== false;
}

/** The split request the flags ask for, checked by split-request/'s rules; its problems are usage errors naming the flags. */
export function splitRequestOf(options: SplitOptions): SplitRequest {
  // python-audio-separator writes its formats in capitals (--output_format FLAC).
  const format = options.format.toLowerCase();
  if (!isStemFormat(format)) throw new StemsplitError('USAGE', `--format must be ${STEM_FORMATS.join(', ')}, got "${format}"`);
  if (options.int24 && options.float32) throw new StemsplitError('USAGE', '--int24 and --float32 exclude each other');
  const then = options.then ?? [];
  const chained = options.chain !== undefined || then.length > 0;
  const models = options.model.flatMap(ensembleMembers);
  const modelOptions = Object.fromEntries(
    familyFlags()
      .map(({ flags }) => flagAttribute(flags))
      .filter((attribute) => isGiven(options[attribute]))
      .map((attribute) => [attribute, options[attribute] as string | number | boolean]),
  );
  const bitrate = parseBitrate(format, options);
  const words = flagWords(options);
  if (options.chain !== undefined && then.length > 0) throw new StemsplitError('USAGE', '--chain names every step and its models; leave out --then');
  const choice = {
    ...(models.length > 1 ? { models } : models.length === 1 ? { model: models[0] } : {}),
    ...(options.ensemble !== undefined ? { ensemble: parseAlgorithm(options.ensemble) } : {}),
    ...(options.ensembleWeights !== undefined ? { ensembleWeights: parseWeights(options.ensembleWeights) } : {}),
  };
  const asked = {
    // A chain from a file names every step's models (--model beside it is refused); --then's first step is --model's.
    ...(options.chain !== undefined ? { chain: recipeOf(options.chain, choice, words), ...choice } : {}),
    ...(options.chain === undefined && then.length > 0 ? { chain: [{ model: CLI_DEFAULT_ALIAS, ...choice }, ...thenSteps(then)] } : {}),
    ...(!chained ? choice : {}),
    ...(options.preset !== undefined ? { preset: options.preset } : {}),
    ...(options.keepIntermediate ? { keepIntermediate: true } : {}),
    // UVR names stems capitalised (Vocals, Instrumental); the models' stems are lower-case, as --single-stem takes them.
    ...(options.twoStems !== undefined ? { twoStems: options.twoStems.toLowerCase() } : {}),
    outputFormat: format,
    ...(options.float32 ? { bitDepth: 32 } : options.int24 ? { bitDepth: 24 } : {}),
    ...(bitrate !== undefined ? { bitrateKbps: bitrate } : {}),
    ...parseLevels(options),
    ...(Object.keys(modelOptions).length > 0 ? { modelOptions } : {}),
  };
  const checked = checkSplitRequest(asked, words);
  if ('problem' in checked) throw new StemsplitError('USAGE', checked.problem);
  return checked.request;
}

/** `--chain FILE`'s recipe; a flag it excludes is said first, whatever the file holds. */
function recipeOf(file: string, choice: Record<string, unknown>, words: FieldWords): RecipeStep[] {
  try {
    return [...readRecipeFile(file)];
  } catch (error) {
    const clash = splitRequestProblem({ ...choice, chain: [{ model: file }] }, words);
    throw clash !== undefined ? new StemsplitError('USAGE', clash) : error;
  }
}

/** How the rules name each field: by the flag that set it. */
function flagWords(options: SplitOptions): FieldWords {
  return {
    model: '--model',
    models: '--model',
    ensemble: '--ensemble',
    ensembleWeights: '--ensemble-weights',
    preset: '--preset',
    chain: options.chain !== undefined ? '--chain' : '--then',
    keepIntermediate: '--keep-intermediate',
    twoStems: '--two-stems',
    outputFormat: '--format',
    bitDepth: (depth) => (depth === 32 ? '--float32' : '--int24'),
    bitrateKbps: options.bitrate !== undefined ? '--bitrate' : '--mp3-bitrate',
    clipMode: '--clip-mode',
    normalize: '--normalize',
    modelOptions: 'the family flags',
  };
}

function parseAlgorithm(given: string): string {
  if (!isEnsembleAlgorithm(given)) throw new StemsplitError('USAGE', `--ensemble must be one of ${ENSEMBLE_ALGORITHMS.join(', ')}, got "${given}"`);
  return given;
}

/** `--ensemble-weights 3,1`: numbers ≥ 0 (how many, and for which algorithm, the rules check). */
function parseWeights(given: string): number[] {
  const values = given.split(',').map((part) => (part.trim() === '' ? Number.NaN : Number(part)));
  if (values.some((value) => !Number.isFinite(value) || value < 0)) throw new StemsplitError('USAGE', `--ensemble-weights must be numbers ≥ 0, got "${given}"`);
  return values;
}

/**
 * --bitrate (or its old name --mp3-bitrate, for MP3) as kb/s; its range is the rules'. `320k` is
 * 320, as python-audio-separator's --output_bitrate writes it.
 */
function parseBitrate(format: StemFormat, options: SplitOptions): number | undefined {
  if (options.mp3Bitrate !== undefined && format !== 'mp3')
    throw new StemsplitError('USAGE', `--mp3-bitrate applies to --format mp3; for ${format} use --bitrate`);
  if (options.mp3Bitrate !== undefined && options.bitrate !== undefined && options.mp3Bitrate !== options.bitrate) {
    throw new StemsplitError('USAGE', '--mp3-bitrate is the old name of --bitrate; give one of them');
  }
  const given = options.bitrate ?? options.mp3Bitrate;
  if (given === undefined) return undefined;
  const kbps = Number(given.replace(/k$/i, ''));
  if (!Number.isInteger(kbps)) {
    const problem = bitrateProblem(format, kbps, options.bitrate !== undefined ? '--bitrate' : '--mp3-bitrate');
    throw new StemsplitError('USAGE', (problem ?? `--bitrate must be a whole number of kb/s, got "${given}"`).replace(/got NaN$/, `got "${given}"`));
  }
  return kbps;
}

/** --clip-mode and --normalize [peak] (audio/levels.ts). */
function parseLevels(options: SplitOptions): { clipMode?: string; normalize?: number } {
  const clipMode = options.clipMode?.toLowerCase();
  if (clipMode !== undefined && !isClipMode(clipMode))
    throw new StemsplitError('USAGE', `--clip-mode must be ${CLIP_MODES.join(', ')}, got "${options.clipMode}"`);
  const peak =
    options.normalize === undefined || options.normalize === false
      ? undefined
      : options.normalize === true
        ? DEFAULT_NORMALIZE_PEAK
        : Number(options.normalize);
  const problem = peak === undefined ? undefined : normalizePeakProblem(peak, '--normalize');
  if (problem !== undefined) throw new StemsplitError('USAGE', problem.replace(/got NaN$/, `got "${String(options.normalize)}"`));
  return { ...(clipMode !== undefined ? { clipMode } : {}), ...(peak !== undefined ? { normalize: peak } : {}) };
}

/** What a run writes: the request's output as the worker takes it, with the CLI's own --single-stem and --sample-rate. */
export function stemOutputFrom(request: SplitRequest, options: SplitOptions): StemOutputOptions {
  if (options.twoStems !== undefined && options.singleStem !== undefined) throw new StemsplitError('USAGE', '--two-stems and --single-stem exclude each other');
  if (options.singleStem !== undefined && request.chain !== undefined) {
    throw new StemsplitError('USAGE', '--single-stem applies to one model; a chain writes the stems no later step splits (--keep-intermediate: those too)');
  }
  const format = request.outputFormat;
  const sampleRate = options.sampleRate === undefined ? undefined : Number(options.sampleRate);
  if (sampleRate !== undefined && (!Number.isInteger(sampleRate) || sampleRate < 8000 || sampleRate > 384_000)) {
    throw new StemsplitError('USAGE', `--sample-rate must be a whole number of Hz from 8000 to 384000, got "${options.sampleRate}"`);
  }
  const rates = STEM_FORMAT_INFO[format].rates;
  if (sampleRate !== undefined && rates !== undefined && !rates.includes(sampleRate)) {
    throw new StemsplitError('USAGE', `${STEM_FORMAT_INFO[format].title} cannot hold ${sampleRate} Hz; use one of ${rates.join(', ')} or --format wav/flac`);
  }
  return {
    ...stemOutputOf(request),
    ...(sampleRate !== undefined ? { sampleRate } : {}),
    ...(options.singleStem !== undefined ? { singleStem: options.singleStem.toLowerCase() } : {}),
  };
}
