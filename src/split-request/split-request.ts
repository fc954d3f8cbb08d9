/**
 * What a split asks for, declared once: the model choice (one `model`, an ensemble's `models` with
 * their `ensemble` and `ensembleWeights`, a `preset`, or a `chain` of steps with `keepIntermediate`),
 * `twoStems`, the output (`outputFormat`, `bitDepth`, `bitrateKbps`, `normalize`, `clipMode`) and the
 * families' `modelOptions`. The API's request schema is built from these fields (api/split-schemas.ts
 * adds the source, the webhook and the documentation), the CLI builds the same object from its
 * flags (cli/split-request.ts), the service takes it, the store keeps its options and checks them
 * when read back (store/job-options.ts), and the worker writes what `stemOutputOf` makes of it.
 *
 * Each rule between the fields is here once (`splitRequestProblem`), in the words of whoever asks:
 * the API names its fields, the CLI its flags. Plain zod, no HTTP: this folder imports none of the
 * layers that use it.
 */
import { z } from 'zod';
import { BIT_DEPTHS, bitrateProblem, DEFAULT_STEM_FORMAT, formatsHolding, holdsDepth, STEM_FORMATS, type BitDepth, type StemFormat } from '../audio/formats.js';
import { CLIP_MODES, DEFAULT_NORMALIZE_PEAK, type LevelOptions } from '../audio/levels.js';
import { DEFAULT_ENSEMBLE_ALGORITHM, ENSEMBLE_ALGORITHMS, ensembleWeightsProblem, takesWeights, type EnsembleAlgorithm } from '../ensemble/algorithms.js';
import { MAX_CHAIN_STEPS, recipeProblem } from '../chains/recipe.js';

/** A preset's id (presets/schema.ts: a presets file's keys). */
export const PRESET_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** Most ensembles are 2 or 3 models; 8 bounds a request's work. */
export const MAX_ENSEMBLE_MEMBERS = 8;

/** A model as a split names it: a name, an alias, or (from the CLI) a path; the API narrows it to names. */
export const ModelName = z.string().min(1).max(4096);
export const EnsembleWeights = z.array(z.number().min(0).max(1000)).min(2).max(MAX_ENSEMBLE_MEMBERS);
/** A stem's name as a model writes it (lower-case). */
export const StemKey = z.string().regex(/^[a-z][a-z0-9_-]{0,31}$/, 'must be a stem name the model writes (lower-case)');
/** A family's settings by their names (the CLI flags' attributes: `mdxSegmentSize`), checked against the chosen models when the job is made. */
export const ModelOptions = z.record(
  z.string().regex(/^[a-z][A-Za-z0-9]{0,39}$/, 'must be an option name from GET /v1/models'),
  z.union([z.string().max(64), z.number(), z.boolean()]),
);
/** The peak a louder stem is scaled down to. */
export const NormalizePeak = z.number().gt(0).max(1);
/** `true`: the default peak (python-audio-separator's --normalization); a number: that peak. */
export const Normalize = z.union([z.boolean(), NormalizePeak]);

/** A chain's step (chains/recipe.ts): its model as a split names one, and from the second step on the stem it splits. */
export const chainStepFields = {
  input: z
    .string()
    .regex(/^[a-z][a-z0-9_-]{0,127}$/, 'must be a stem an earlier step makes, e.g. vocals or vocals-vocals')
    .optional(),
  model: ModelName.optional(),
  models: z.array(ModelName).min(2).max(MAX_ENSEMBLE_MEMBERS).optional(),
  ensemble: z.enum(ENSEMBLE_ALGORITHMS).optional(),
  ensembleWeights: EnsembleWeights.optional(),
};
export const ChainStep = z.object(chainStepFields).strict();

/** The fields of what a split asks for, each checked alone; `splitRequestProblem` checks them together. */
export const splitRequestFields = {
  model: ModelName.optional(),
  models: z.array(ModelName).min(2).max(MAX_ENSEMBLE_MEMBERS).optional(),
  ensemble: z.enum(ENSEMBLE_ALGORITHMS).optional(),
  ensembleWeights: EnsembleWeights.optional(),
  preset: z.string().regex(PRESET_ID, 'must be a preset id from GET /v1/presets').optional(),
  chain: z.array(ChainStep).min(1).max(MAX_CHAIN_STEPS).optional(),
  keepIntermediate: z.boolean().optional(),
  twoStems: StemKey.optional(),
  outputFormat: z.enum(STEM_FORMATS).default(DEFAULT_STEM_FORMAT),
  bitDepth: z.literal(BIT_DEPTHS).optional(),
  bitrateKbps: z.int().optional(),
  clipMode: z.enum(CLIP_MODES).optional(),
  normalize: Normalize.optional(),
  modelOptions: ModelOptions.optional(),
};

/** The rules between the fields, checked in one place for whoever asks. */
export const SplitRequest = z
  .object(splitRequestFields)
  .strict()
  .superRefine((body, ctx) => {
    const problem = splitRequestProblem(body);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });

/** A value that is read, not changed: arrays and records readonly all the way down. */
type Frozen<T> = T extends readonly (infer Item)[] ? readonly Frozen<Item>[] : T extends object ? { readonly [Key in keyof T]: Frozen<T[Key]> } : T;

/** What a split asks for, as checked. */
export type SplitRequest = Frozen<z.output<typeof SplitRequest>>;
/** A chain's step as a split asks for it. */
export type ChainStepRequest = NonNullable<SplitRequest['chain']>[number];
export type SplitField = keyof typeof splitRequestFields;

/** How a caller names each field in its messages: the API by the fields' names, the CLI by its flags (a depth by the flag that asks for it). */
export type FieldWords = Readonly<Record<Exclude<SplitField, 'bitDepth'>, string>> & { readonly bitDepth: (depth: BitDepth) => string };
export const API_WORDS: FieldWords = Object.freeze({
  ...(Object.fromEntries(Object.keys(splitRequestFields).map((field) => [field, field])) as Record<Exclude<SplitField, 'bitDepth'>, string>),
  bitDepth: (depth: BitDepth) => (depth === 32 ? 'bitDepth 32 (float)' : 'bitDepth'),
});

const SplitRequestFields = z.object(splitRequestFields).strict();

/**
 * A value (the CLI's flags made into a request) checked field by field and then by the rules, its
 * problem named in `words`; the API's schema runs the same checks in its own words.
 */
export function checkSplitRequest(value: unknown, words: FieldWords): { readonly request: SplitRequest } | { readonly problem: string } {
  const parsed = SplitRequestFields.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue?.path[0];
    const word = typeof field === 'string' && field in words ? words[field as SplitField] : undefined;
    const depth = (value as { readonly bitDepth?: unknown } | null)?.bitDepth;
    const named = typeof word === 'function' ? word(depth === 24 || depth === 16 ? depth : 32) : (word ?? 'the request');
    return { problem: `${named}: ${issue?.message ?? 'invalid'}` };
  }
  const problem = splitRequestProblem(parsed.data, words);
  return problem === undefined ? { request: parsed.data } : { problem };
}

/**
 * `twoStems` against the stems a model writes, once they are known (the service before it charges, the CLI
 * before the model loads where its entry lists them, the worker once it has loaded): the problem, the field
 * named as its caller names it (`twoStems`, `--two-stems`), or undefined.
 */
export function twoStemsProblem(twoStems: string, modelName: string, sources: readonly string[], field = API_WORDS.twoStems): string | undefined {
  if (sources.includes(twoStems)) return undefined;
  return `${field} ${twoStems}: ${modelName} writes no such stem (it writes ${sources.join(', ')})`;
}

/** The fields `splitRequestProblem` reads: a request as asked, before its defaults. */
type Asked = { readonly [Field in SplitField]?: Readonly<z.output<(typeof splitRequestFields)[Field]>> | undefined };

/**
 * What is wrong between a split's fields, in a sentence naming them as `words` does, or undefined.
 * The fields alone are checked by their schemas; what needs the models (their stems, their
 * options, an ensemble's member count where a name joins several) is checked once they are known.
 */
export function splitRequestProblem(body: Asked, words: FieldWords = API_WORDS): string | undefined {
  return modelChoiceProblem(body, words) ?? outputProblem(body, words);
}

/** The model choice: one of model, models, preset or chain, and an ensemble's method with its members. */
function modelChoiceProblem(body: Asked, words: FieldWords): string | undefined {
  const named = (fields: readonly Exclude<SplitField, 'bitDepth'>[]) =>
    [...new Set(fields.filter((field) => body[field] !== undefined).map((field) => words[field]))].join(', ');
  if (body.chain !== undefined) {
    if (body.twoStems !== undefined)
      return `${words.twoStems} applies to one model; a chain writes the stems no later step splits (${words.keepIntermediate}: those too)`;
    const given = named(['model', 'models', 'preset', 'ensemble', 'ensembleWeights']);
    if (given !== '') return `${words.chain} names each step's model; leave out ${given}`;
    const problem = recipeProblem(body.chain);
    return problem === undefined ? undefined : `${words.chain}: ${problem}`;
  }
  if (body.keepIntermediate !== undefined) return `${words.keepIntermediate} applies to a chain`;
  if (body.model !== undefined && body.models !== undefined) return `give either ${words.model} or ${words.models} (an ensemble), not both`;
  if (body.preset !== undefined) {
    const clash = named(['model', 'models', 'ensemble', 'ensembleWeights']);
    if (clash !== '') return `${words.preset} names its models and how they combine; drop ${clash}`;
  }
  if (body.models === undefined && (body.ensemble !== undefined || body.ensembleWeights !== undefined))
    return `${words.ensemble} and ${words.ensembleWeights} combine two or more models: name each with ${words.models}`;
  if (body.models !== undefined && body.ensembleWeights !== undefined) {
    const problem = ensembleWeightsProblem(body.ensemble ?? DEFAULT_ENSEMBLE_ALGORITHM, body.ensembleWeights, body.models.length);
    if (problem !== undefined) return `${words.ensembleWeights} ${problem}`;
  }
  return undefined;
}

/** The output: a depth the format holds, a bitrate in the format's range. */
function outputProblem(body: Asked, words: FieldWords): string | undefined {
  const format = body.outputFormat ?? DEFAULT_STEM_FORMAT;
  if (body.bitDepth !== undefined && !holdsDepth(format, body.bitDepth))
    return `${words.bitDepth(body.bitDepth)} applies to ${words.outputFormat} ${formatsHolding(body.bitDepth).join(', ')}${body.bitDepth === 32 ? ' only' : ''}`;
  if (body.bitrateKbps !== undefined) return bitrateProblem(format, body.bitrateKbps, words.bitrateKbps);
  return undefined;
}

/** The peak `normalize` asks for: `true` is the default peak; absent or false, none. */
export function normalizePeakOf(normalize: boolean | number | undefined): number | undefined {
  return normalize === true ? DEFAULT_NORMALIZE_PEAK : normalize === false ? undefined : normalize;
}

/** What a split writes, as the worker takes it (split-worker/split-audio-file.ts's StemOutputOptions). */
export interface StemOutput extends LevelOptions {
  readonly format: StemFormat;
  readonly bitrateKbps?: number;
  readonly bitDepth?: SplitRequest['bitDepth'];
  readonly twoStems?: string;
}

/** The output part of a split request, in the worker's words: the one place its fields are copied. */
export function stemOutputOf(
  request: Pick<SplitRequest, 'bitDepth' | 'bitrateKbps' | 'clipMode' | 'normalize' | 'twoStems'> & { readonly outputFormat: StemFormat },
): StemOutput {
  const peak = normalizePeakOf(request.normalize);
  return {
    format: request.outputFormat,
    ...(request.bitDepth !== undefined ? { bitDepth: request.bitDepth } : {}),
    ...(request.bitrateKbps !== undefined ? { bitrateKbps: request.bitrateKbps } : {}),
    ...(request.clipMode !== undefined ? { clipMode: request.clipMode } : {}),
    ...(peak !== undefined ? { normalizePeak: peak } : {}),
    ...(request.twoStems !== undefined ? { twoStems: request.twoStems } : {}),
  };
}
