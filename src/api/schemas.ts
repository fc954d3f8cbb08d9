/**
 * Every request and response of the v1 API, declared once with zod. The routes validate their
 * input with these schemas and `GET /v1/openapi.json` is generated from the same route
 * declarations (routes/, openapi.ts), so the two cannot drift apart.
 *
 * Objects are strict (unknown fields are refused, and documented as `additionalProperties:
 * false`), numbers are integers, and each resource lists its scalar fields before nested ones,
 * in the order the server writes them.
 */
import { z } from '@hono/zod-openapi';
import { API_ERROR_CODES, JOB_ERROR_CODES } from '../errors.js';
import { BIT_DEPTHS, bitrateProblem, DEFAULT_STEM_FORMAT, formatsHolding, holdsDepth, STEM_FORMATS, type BitDepth, type StemFormat } from '../audio/formats.js';
import { CLIP_MODES, DEFAULT_NORMALIZE_PEAK } from '../audio/levels.js';
import { ALLOWED_CONTENT_TYPES, MAX_UPLOAD_BYTES } from '../limits.js';
import { parseHttpUrl } from '../net/fetch.js';
import { ENSEMBLE_ALGORITHMS } from '../ensemble/algorithms.js';
import { PRESET_ID } from '../presets/schema.js';
import { MAX_CHAIN_STEPS, recipeProblem, type RecipeStep } from '../chains/recipe.js';
import { API_DEFAULT_ALIAS, STEM_MODEL_ALIASES, type StemModelAlias } from '../models/aliases.js';
import { TASKS } from '../models/tasks.js';

/** An http(s) URL, checked the way the server will fetch or call it. */
const httpUrl = z
  .string()
  .max(2048)
  .superRefine((value, ctx) => {
    try {
      parseHttpUrl(value);
    } catch (error) {
      ctx.addIssue({ code: 'custom', message: (error as Error).message });
    }
  })
  .openapi({ format: 'uri' });

export const text = (maxLength: number) => z.string().min(1).max(maxLength);
export const isoTime = z.string().openapi({ format: 'date-time' });
export const count = z.int().min(0);

export const StemModel = z.enum(STEM_MODEL_ALIASES);
/** A model as a job names it: a name from GET /v1/models or an alias (checked against the library when the job is made). */
const ModelName = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._+-]*$/, 'must be a model name from GET /v1/models');
const StemKey = z.string().regex(/^[a-z][a-z0-9_-]{0,31}$/, 'must be a stem name the model writes (lower-case)');
/** A family's settings by their names (the CLI flags' attributes: `mdxSegmentSize`), checked against the chosen models when the job is made. */
const ModelOptions = z.record(
  z.string().regex(/^[a-z][A-Za-z0-9]{0,39}$/, 'must be an option name from GET /v1/models'),
  z.union([z.string().max(64), z.number(), z.boolean()]),
);
/** Most ensembles are 2 or 3 models; 8 bounds a request's work. */
const MAX_ENSEMBLE_MEMBERS = 8;

export const ErrorEnvelope = z
  .object({
    success: z.literal(false),
    error: z.object({ code: z.enum(API_ERROR_CODES), message: z.string() }).strict(),
  })
  .strict()
  .openapi('ErrorEnvelope');

/** An upload reservation's body, for a server taking uploads of at most `maxUploadBytes`. */
export function uploadRequestSchema(maxUploadBytes: number) {
  return z
    .object({
      filename: text(255).refine((name) => !/[\u0000-\u001f\u007f]/.test(name), 'filename must not contain control characters'),
      contentType: z.enum(ALLOWED_CONTENT_TYPES),
      contentLength: z
        .int()
        .min(1)
        .max(maxUploadBytes)
        .openapi({ description: "Bytes; at most this server's limit (GET /v1/limits), 52428800 unless its operator set serve --max-upload-mb." }),
    })
    .strict()
    .openapi('UploadRequest');
}

/** The reservation body of a server on the default limit (the spec's). */
export const UploadRequest = uploadRequestSchema(MAX_UPLOAD_BYTES);

export const ServerLimits = z
  .object({
    maxUploadBytes: z.int().min(1).openapi({ description: "The largest upload or direct_url source (serve --max-upload-mb; the spec's 52428800 by default)." }),
    maxSourceSeconds: z.int().min(1).nullable().openapi({ description: 'The longest source a job accepts (serve --max-minutes), or null: any length.' }),
    uploadTtlSeconds: z.int().min(1).openapi({ description: 'How long an upload reservation stays usable.' }),
    stemUrlTtlSeconds: z.int().min(1).openapi({ description: 'How long a signed stem URL stays valid after it is issued.' }),
    stemRetentionSeconds: z.int().min(0).openapi({ description: 'How long stems are kept after a job ends.' }),
    contentTypes: z.array(z.enum(ALLOWED_CONTENT_TYPES)).openapi({ description: 'The contentType values an upload may declare.' }),
  })
  .strict()
  .openapi('ServerLimits');

export type ServerLimitsBody = z.infer<typeof ServerLimits>;

export const UploadReservation = z
  .object({
    uploadId: z.string().regex(/^upl_/),
    uploadUrl: z.string().openapi({ format: 'uri' }),
    expiresAt: isoTime,
    uploadHeaders: z.record(z.string(), z.string()),
  })
  .strict()
  .openapi('UploadReservation');

export const UploadResult = z
  .object({
    url: z.string().openapi({ format: 'uri', description: 'The fileUrl of an uploaded_file input.' }),
    key: z.string().openapi({ description: 'The storageKey of an uploaded_file input.' }),
  })
  .strict()
  .openapi('UploadResult');

export const DirectUrlInput = z
  .object({ type: z.literal('direct_url'), url: httpUrl })
  .strict()
  .openapi('DirectUrlInput');

export const UploadedFileInput = z
  .object({
    type: z.literal('uploaded_file'),
    uploadId: text(64),
    fileUrl: text(2048).openapi({ format: 'uri' }),
    storageKey: text(128),
  })
  .strict()
  .openapi('UploadedFileInput');

/** audio/formats.ts's depths: 16, 24, or 32 (float). */
const BitDepthSchema = z.literal(BIT_DEPTHS);

/** A chain's step (chains/recipe.ts): its model as a job names one, and from the second step on the stem it splits. */
export const ChainStep = z
  .object({
    input: z
      .string()
      .regex(/^[a-z][a-z0-9_-]{0,127}$/, 'must be a stem an earlier step makes, e.g. vocals or vocals-vocals')
      .optional()
      .openapi({ description: 'The stem an earlier step made that this step splits; absent on the first step. Its stems are named `<input>-<stem>`.' }),
    model: ModelName.optional(),
    models: z.array(ModelName).min(2).max(MAX_ENSEMBLE_MEMBERS).optional(),
    ensemble: z.enum(ENSEMBLE_ALGORITHMS).optional(),
    ensembleWeights: z.array(z.number().min(0).max(1000)).min(2).max(MAX_ENSEMBLE_MEMBERS).optional(),
  })
  .strict()
  .openapi('ChainStep');

export const SplitRequest = z
  .object({
    input: z.discriminatedUnion('type', [DirectUrlInput, UploadedFileInput], {
      error: (issue) =>
        typeof issue.input === 'object' && issue.input !== null && !Array.isArray(issue.input)
          ? 'input.type must be "direct_url" or "uploaded_file"'
          : 'input is required and must be an object',
    }),
    stemModel: StemModel.default(API_DEFAULT_ALIAS),
    model: ModelName.optional().openapi({ description: 'An addition: the model to run, a name from GET /v1/models (or 4s/6s). Overrides stemModel.' }),
    models: z
      .array(ModelName)
      .min(2)
      .max(MAX_ENSEMBLE_MEMBERS)
      .optional()
      .openapi({ description: 'An addition: several models whose stems are combined (an ensemble), names from GET /v1/models.' }),
    ensemble: z.enum(ENSEMBLE_ALGORITHMS).optional().openapi({ description: 'An addition, with `models`: how their stems combine (default avg_wave).' }),
    ensembleWeights: z
      .array(z.number().min(0).max(1000))
      .min(2)
      .max(MAX_ENSEMBLE_MEMBERS)
      .optional()
      .openapi({ description: 'An addition, with `models` and avg_wave or avg_fft: one weight per model.' }),
    preset: z.string().regex(PRESET_ID, 'must be a preset id from GET /v1/presets').optional().openapi({
      description:
        'An addition: a named ensemble from GET /v1/presets (its models, algorithm and weights), instead of model, models, ensemble and ensembleWeights.',
    }),
    twoStems: StemKey.optional().openapi({ description: "An addition: write this stem and no_<stem> (the rest), as the CLI's --two-stems." }),
    outputFormat: z.enum(STEM_FORMATS).default(DEFAULT_STEM_FORMAT).openapi({
      description:
        "`mp3` as in the spec; the others are additions of this server: lossless `wav`, `flac`, `aiff` and `alac` (Apple Lossless, .m4a), at the source's depth; lossy `ogg` (Vorbis), `opus` and `m4a` (AAC).",
    }),
    bitDepth: BitDepthSchema.optional().openapi({
      description: "An addition, for the lossless formats: 16, 24, or 32 (32-bit float, wav only); default the source's depth.",
    }),
    bitrateKbps: z.int().optional().openapi({
      description:
        'An addition, for the lossy formats: kb/s (mp3 32–320, default 320; ogg 45–500, default 320; opus 6–512, default 256; m4a 32–512, default 256).',
    }),
    clipMode: z.enum(CLIP_MODES).optional().openapi({
      description:
        "An addition, as demucs' --clip-mode: `rescale` divides a stem that would clip by 1.01 × its peak, `clamp` clips it at ±1; default `none` (integer formats clip, float and lossy ones keep it).",
    }),
    normalize: z
      .union([z.boolean(), z.number().gt(0).max(1)])
      .optional()
      .openapi({
        description: `An addition: scale each stem whose peak exceeds this level (0–1) down to it; \`true\` is ${DEFAULT_NORMALIZE_PEAK}, as python-audio-separator's --normalization.`,
      }),
    modelOptions: ModelOptions.optional().openapi({
      description:
        'An addition: the model family\'s own settings, as the CLI\'s flags name them (e.g. {"mdxSegmentSize": 512, "vrAggression": 10}); GET /v1/models lists each model\'s.',
    }),
    chain: z.array(ChainStep).min(1).max(MAX_CHAIN_STEPS).optional().openapi({
      description:
        'An addition: models run one after another, each later step splitting a stem an earlier one made, e.g. [{"model": "A"}, {"input": "vocals", "model": "B"}]; replaces model/models. Costs the seconds of audio once per step.',
    }),
    keepIntermediate: z
      .boolean()
      .optional()
      .openapi({ description: 'An addition, with `chain`: also keep the stems later steps split (default: only the stems no step split).' }),
    webhookUrl: httpUrl.optional(),
  })
  .strict()
  .superRefine((body, ctx) => {
    const problem = chainRequestProblem(body) ?? splitRequestProblem(body);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  })
  .openapi('SplitRequest');

/** A chain replaces the model fields, and its steps follow the recipe's rules (chains/recipe.ts). */
function chainRequestProblem(body: {
  preset?: string | undefined;
  model?: string | undefined;
  models?: string[] | undefined;
  ensemble?: string | undefined;
  ensembleWeights?: number[] | undefined;
  twoStems?: string | undefined;
  chain?: RecipeStep[] | undefined;
  keepIntermediate?: boolean | undefined;
}): string | undefined {
  if (body.chain === undefined) return body.keepIntermediate !== undefined ? 'keepIntermediate applies to a chain' : undefined;
  const given = (['model', 'models', 'preset', 'ensemble', 'ensembleWeights', 'twoStems'] as const).filter((field) => body[field] !== undefined);
  if (given.length > 0) return `chain names each step's model; leave out ${given.join(', ')}`;
  const problem = recipeProblem(body.chain);
  return problem === undefined ? undefined : `chain: ${problem}`;
}

/** The rules between a split request's fields, in a sentence: the fields alone are checked by their schemas. */
function splitRequestProblem(body: {
  preset?: string | undefined;
  model?: string | undefined;
  models?: string[] | undefined;
  ensemble?: string | undefined;
  ensembleWeights?: number[] | undefined;
  outputFormat: StemFormat;
  bitDepth?: number | undefined;
  bitrateKbps?: number | undefined;
}): string | undefined {
  if (body.model !== undefined && body.models !== undefined) return 'give either model or models (an ensemble), not both';
  const presetClash = (['model', 'models', 'ensemble', 'ensembleWeights'] as const).filter((field) => body.preset !== undefined && body[field] !== undefined);
  if (presetClash.length > 0) return `preset names its models and how they combine; drop ${presetClash.join(', ')}`;
  if (body.models === undefined && (body.ensemble !== undefined || body.ensembleWeights !== undefined))
    return 'ensemble and ensembleWeights combine the models of `models`; name them there';
  if (body.models !== undefined && body.ensembleWeights !== undefined) {
    if (body.ensembleWeights.length !== body.models.length)
      return `ensembleWeights needs one weight per model (${body.models.length}), got ${body.ensembleWeights.length}`;
    const algorithm = body.ensemble ?? 'avg_wave';
    if (algorithm !== 'avg_wave' && algorithm !== 'avg_fft') return `ensembleWeights apply to avg_wave and avg_fft only (${algorithm} ignores weights)`;
    if (body.ensembleWeights.every((weight) => weight === 0)) return 'ensembleWeights must not all be 0';
  }
  if (body.bitDepth !== undefined && !holdsDepth(body.outputFormat, body.bitDepth as BitDepth)) {
    return body.bitDepth === 32
      ? `bitDepth 32 (float) applies to outputFormat ${formatsHolding(32).join(', ')} only`
      : `bitDepth applies to outputFormat ${formatsHolding(16).join(', ')}`;
  }
  if (body.bitrateKbps !== undefined) return bitrateProblem(body.outputFormat, body.bitrateKbps, 'bitrateKbps');
  return undefined;
}

export type SplitRequestBody = z.infer<typeof SplitRequest>;

export const SplitCreated = z
  .object({
    id: z.string().regex(/^split_/),
    status: z.literal('queued'),
    creditsUsed: count,
    createdAt: isoTime,
  })
  .strict()
  .openapi('SplitCreated');

export const SplitDeleted = z
  .object({
    id: z.string().regex(/^split_/),
    deleted: z.literal(true),
  })
  .strict()
  .openapi('SplitDeleted');

export const JobError = z.object({ code: z.enum(JOB_ERROR_CODES), message: z.string() }).strict();

export const AudioSplit = z
  .object({
    id: z.string().regex(/^split_/),
    status: z.enum(['queued', 'processing', 'succeeded', 'failed']),
    stemModel: StemModel,
    model: z.string().openapi({ description: "The model that ran, e.g. htdemucs or stemsplit-small-4s; an ensemble's members joined by +." }),
    ensemble: z.enum(ENSEMBLE_ALGORITHMS).nullable().openapi({ description: "An addition: how an ensemble's stems were combined; null for one model." }),
    twoStems: z.string().nullable().openapi({ description: 'An addition: the stem the job wrote beside no_<stem>, or null.' }),
    outputFormat: z.enum(STEM_FORMATS).openapi({ description: "An addition: the stems' file format." }),
    bitDepth: z.union([BitDepthSchema, z.null()]).openapi({ description: "An addition: the depth asked for (lossless formats), or null: the source's." }),
    bitrateKbps: z.int().nullable().openapi({ description: "An addition: the bitrate asked for (lossy formats), or null: the format's default." }),
    clipMode: z.enum(CLIP_MODES).openapi({ description: 'An addition: how stems that would clip were written (see SplitRequest.clipMode).' }),
    normalize: z.number().nullable().openapi({ description: 'An addition: the peak louder stems were scaled down to, or null.' }),
    filename: z.string(),
    durationSeconds: count,
    creditsUsed: count,
    progress: z.int().min(0).max(100),
    device: z.string().nullable().openapi({
      description: 'An addition: what ran the job, "CPU" or "GPU: <adapter> (<API>)", e.g. "GPU: NVIDIA H200 (Vulkan)"; null until its model has loaded.',
    }),
    queuePosition: z.int().min(1).optional().openapi({
      description:
        "An addition, in GET /v1/audio/splits/{id} of a queued job: its place in the server's queue (1: the next to start), every account's jobs counted.",
    }),
    chainStep: z.int().min(1).nullable().openapi({
      description:
        'An addition, for a chain: the step running now (1-based; from its progress, each step an equal share), the last step once done; null for one model.',
    }),
    createdAt: isoTime,
    updatedAt: isoTime,
    sourceUrl: z.string().optional().openapi({
      format: 'uri',
      description: 'Present with stems (an addition): a signed URL of the source they came from, kept as long as they are, for comparing.',
    }),
    models: z.array(z.string()).openapi({ description: 'An addition: every model that ran (one, or each member of an ensemble).' }),
    ensembleWeights: z.array(z.number()).nullable().openapi({ description: "An addition: the ensemble's weights as asked, or null (equal)." }),
    modelOptions: ModelOptions.nullable().openapi({ description: 'An addition: the family settings the job asked for, or null.' }),
    chain: z.array(ChainStep).nullable().openapi({ description: 'An addition: the chain the job runs, as asked, or null for one model or ensemble.' }),
    mixStems: z.array(z.string()).optional().openapi({
      description:
        'An addition, present with stems: the stems that add up to the mix, each part of the song once (play or sum these, not every stem: an ensemble of a 4-stem and a vocals/instrumental model writes no_vocals too, which is drums + bass + other again). Empty when the job wrote one stem; absent for jobs made before stemsplit kept it.',
    }),
    stems: z
      .record(z.string(), z.string().openapi({ format: 'uri' }))
      .optional()
      .openapi({
        description:
          'Present on succeeded jobs: stem name to a signed download URL, valid 24 h, issued afresh on each GET. 4s and 6s write vocals, drums, bass, other (and guitar, piano); other models write their own stems (e.g. instrumental, no_vocals, noreverb).',
      }),
    error: JobError.nullable(),
  })
  .strict()
  .openapi('AudioSplit');

/** GET /audio/splits?limit&cursor */
export const ListSplitsQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  cursor: z
    .string()
    .regex(/^[0-9A-Za-z_]{1,64}$/)
    .optional()
    .openapi({ description: 'The nextCursor of the previous page.' }),
});

export const SplitPage = z
  .object({ nextCursor: z.string().nullable(), items: z.array(AudioSplit) })
  .strict()
  .openapi('SplitPage');

export const CreditBalance = z
  .object({ balance: count, unit: z.literal('seconds') })
  .strict()
  .openapi('CreditBalance');

export const ModelInfo = z
  .object({
    name: z.string(),
    family: z.string().openapi({
      description: 'How the model runs: demucs; bs_roformer, mel_band_roformer, scnet or mdx23c (MSST checkpoints); mdx (UVR MDX-Net); vr (UVR VR); bundled.',
    }),
    origin: z.enum(['bundled', 'pulled', 'library', 'available']).openapi({
      description:
        'bundled: shipped inside stemsplit; pulled: fetched with `stemsplit models pull`; library: added with `stemsplit models add`; available: can be pulled.',
    }),
    installed: z.boolean(),
    allowed: z.boolean().openapi({ description: "Whether API keys may run it (the operator's serve --models; all installed models by default)." }),
    task: z
      .enum(TASKS)
      .openapi({ description: 'What it is for: four-stems, six-stems, vocals, instrumental, karaoke, dereverb, deecho, denoise, drum-parts or other.' }),
    aliases: z.array(StemModel).openapi({ description: 'The stemModel values that run this model now.' }),
    secondsPerMinute: z
      .number()
      .nullable()
      .openapi({ description: 'Seconds this server took per minute of audio, over the jobs that ran it; null until one has.' }),
    options: z.array(z.string()).openapi({ description: 'The modelOptions names its family takes (e.g. mdxSegmentSize).' }),
    int8Refused: z
      .string()
      .nullable()
      .openapi({ description: 'Why it runs in fp32 only, so a server started with --precision int8 refuses its jobs (422); null where it computes in int8.' }),
    sources: z.array(z.string()).openapi({ description: 'The stems it writes, lower-case.' }),
    description: z.string(),
    terms: z.string().openapi({ description: 'The licence or terms of the weights as their publisher states them, or "not stated".' }),
    scores: z.array(z.object({ sdr: z.record(z.string(), z.number()), source: z.string() }).strict()).openapi({
      description:
        "An addition: per-stem SDR (dB) as its publishers state them (python-audio-separator's models-scores.json, MSST's tables), each set with its source; empty where none is published.",
    }),
  })
  .strict()
  .openapi('ModelInfo');

export const ListModelsQuery = z.object({
  task: z.enum(TASKS).optional().openapi({ description: 'Only the models for this task.' }),
  sort: z.enum(['sdr']).optional().openapi({
    description:
      "sdr: best published SDR first (of the task's stem: vocals for vocals and karaoke, instrumental for instrumental; else the mean of the scored stems), unscored last.",
  }),
});

export const ModelList = z
  .object({
    items: z.array(ModelInfo),
    ensembleAlgorithms: z.array(z.enum(ENSEMBLE_ALGORITHMS)).openapi({ description: 'The values `ensemble` takes; the first is the default.' }),
    defaults: z
      .object(Object.fromEntries(STEM_MODEL_ALIASES.map((alias) => [alias, z.string().nullable()])) as Record<StemModelAlias, z.ZodNullable<z.ZodString>>)
      .strict()
      .openapi({ description: 'The model (or A+B ensemble) each stemModel runs now; null: none installed.' }),
    devices: z.array(z.string()).openapi({
      description:
        'What this server runs jobs on, in the order a job is offered them, e.g. ["GPU: NVIDIA H200 (Vulkan)", "CPU"] (serve --device); empty where this node runs no jobs (serve --workers 0). A job\'s own `device` says what ran it.',
    }),
  })
  .strict()
  .openapi('ModelList');

export const PresetInfo = z
  .object({
    id: z.string().openapi({ description: "What a split request's `preset` takes, e.g. vocal_balanced." }),
    name: z.string(),
    description: z.string(),
    origin: z.enum(['builtin', 'user']).openapi({ description: "builtin: python-audio-separator's curated presets; user: the operator's presets.json." }),
    source: z.string().openapi({ description: 'Where it is defined.' }),
    algorithm: z.enum(ENSEMBLE_ALGORITHMS),
    weights: z.array(z.number()).nullable().openapi({ description: 'One per member; null: equal.' }),
    installed: z.boolean().openapi({ description: 'Whether every member is installed on this server.' }),
    members: z.array(
      z
        .object({
          given: z.string().openapi({ description: 'As the preset names it (python-audio-separator names models by file).' }),
          model: z.string().openapi({ description: 'The model name it runs as (GET /v1/models), where this server knows it.' }),
          installed: z.boolean(),
          catalog: z.string().nullable().openapi({ description: 'The catalog model the operator can pull for it, or null.' }),
          terms: z.string().nullable().openapi({ description: 'The terms of its weights as stated, or null where this server knows nothing of it.' }),
        })
        .strict(),
    ),
  })
  .strict()
  .openapi('PresetInfo');

export const PresetList = z
  .object({ items: z.array(PresetInfo) })
  .strict()
  .openapi('PresetList');

export const Health = z
  .object({ status: z.literal('ok'), version: z.string() })
  .strict()
  .openapi('Health');

export const WebhookEvent = z
  .object({ event: z.literal('audio.split.completed'), data: AudioSplit })
  .strict()
  .openapi('WebhookEvent');

/** The success envelope around `data`. */
export function envelopeOf<T extends z.ZodType>(data: T) {
  return z.object({ success: z.literal(true), data }).strict();
}
