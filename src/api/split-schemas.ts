/**
 * A split's request and resource in the v1 API. The request is what a split asks for
 * (split-request/split-request.ts: its fields and the rules between them, declared once for the
 * CLI, the service, the store and the worker too), with the source and the webhook around it and
 * each field documented for GET /v1/openapi.json; the resource is the job as GET shows it.
 */
import { z } from '@hono/zod-openapi';
import { JOB_ERROR_CODES } from '../errors.js';
import { BIT_DEPTHS, STEM_FORMATS } from '../audio/formats.js';
import { CLIP_MODES, DEFAULT_NORMALIZE_PEAK } from '../audio/levels.js';
import { parseHttpUrl } from '../net/fetch.js';
import { ENSEMBLE_ALGORITHMS } from '../ensemble/algorithms.js';
import { MAX_CHAIN_STEPS } from '../chains/recipe.js';
import { API_DEFAULT_ALIAS } from '../models/aliases.js';
import {
  chainStepFields,
  MAX_ENSEMBLE_MEMBERS,
  ModelOptions,
  splitRequestFields,
  splitRequestProblem,
  type SplitField,
} from '../split-request/split-request.js';
import { count, isoTime, StemModel, text } from './schemas.js';

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

/** A model as a job over the API names it: a name from GET /v1/models or an alias (checked against the library when the job is made), never a path. */
const ModelName = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._+-]*$/, 'must be a model name from GET /v1/models');
const ModelNames = z.array(ModelName).min(2).max(MAX_ENSEMBLE_MEMBERS);

/** A chain's step (chains/recipe.ts): its model as a job names one, and from the second step on the stem it splits. */
export const ChainStep = z
  .object({
    ...chainStepFields,
    input: chainStepFields.input.meta({
      description: 'The stem an earlier step made that this step splits; absent on the first step. Its stems are named `<input>-<stem>`.',
    }),
    model: ModelName.optional(),
    models: ModelNames.optional(),
  })
  .strict()
  .openapi('ChainStep');

/**
 * The fields of split-request.ts, each as the API documents it (every one of them: `satisfies` holds
 * the two together). Documented with zod's own `.meta()`, which the OpenAPI generator reads: those
 * plain-zod schemas may be made before @hono/zod-openapi adds `.openapi()` to zod's.
 */
const f = splitRequestFields;
const requestFields = {
  model: ModelName.optional().openapi({ description: 'An addition: the model to run, a name from GET /v1/models (or 4s/6s). Overrides stemModel.' }),
  models: ModelNames.optional().openapi({ description: 'An addition: several models whose stems are combined (an ensemble), names from GET /v1/models.' }),
  ensemble: f.ensemble.meta({ description: 'An addition, with `models`: how their stems combine (default avg_wave).' }),
  ensembleWeights: f.ensembleWeights.meta({ description: 'An addition, with `models` and avg_wave or avg_fft: one weight per model.' }),
  preset: f.preset.meta({
    description:
      'An addition: a named ensemble from GET /v1/presets (its models, algorithm and weights), instead of model, models, ensemble and ensembleWeights.',
  }),
  twoStems: f.twoStems.meta({ description: "An addition: write this stem and no_<stem> (the rest), as the CLI's --two-stems." }),
  outputFormat: f.outputFormat.meta({
    description:
      "`mp3` as in the spec; the others are additions of this server: lossless `wav`, `flac`, `aiff` and `alac` (Apple Lossless, .m4a), at the source's depth; lossy `ogg` (Vorbis), `opus` and `m4a` (AAC).",
  }),
  bitDepth: f.bitDepth.meta({
    description: "An addition, for the lossless formats: 16, 24, or 32 (32-bit float, wav only); default the source's depth.",
  }),
  bitrateKbps: f.bitrateKbps.meta({
    description:
      'An addition, for the lossy formats: kb/s (mp3 32–320, default 320; ogg 45–500, default 320; opus 6–512, default 256; m4a 32–512, default 256).',
  }),
  clipMode: f.clipMode.meta({
    description:
      "An addition, as demucs' --clip-mode: `rescale` divides a stem that would clip by 1.01 × its peak, `clamp` clips it at ±1; default `none` (integer formats clip, float and lossy ones keep it).",
  }),
  normalize: f.normalize.meta({
    description: `An addition: scale each stem whose peak exceeds this level (0–1) down to it; \`true\` is ${DEFAULT_NORMALIZE_PEAK}, as python-audio-separator's --normalization.`,
  }),
  modelOptions: f.modelOptions.meta({
    description:
      'An addition: the model family\'s own settings, as the CLI\'s flags name them (e.g. {"mdxSegmentSize": 512, "vrAggression": 10}); GET /v1/models lists each model\'s.',
  }),
  chain: z.array(ChainStep).min(1).max(MAX_CHAIN_STEPS).optional().openapi({
    description:
      'An addition: models run one after another, each later step splitting a stem an earlier one made, e.g. [{"model": "A"}, {"input": "vocals", "model": "B"}]; replaces model/models. Costs the seconds of audio once per step.',
  }),
  keepIntermediate: f.keepIntermediate.meta({
    description: 'An addition, with `chain`: also keep the stems later steps split (default: only the stems no step split).',
  }),
} satisfies Record<SplitField, z.ZodType>;

export const SplitRequest = z
  .object({
    input: z.discriminatedUnion('type', [DirectUrlInput, UploadedFileInput], {
      error: (issue) =>
        typeof issue.input === 'object' && issue.input !== null && !Array.isArray(issue.input)
          ? 'input.type must be "direct_url" or "uploaded_file"'
          : 'input is required and must be an object',
    }),
    stemModel: StemModel.default(API_DEFAULT_ALIAS),
    ...requestFields,
    webhookUrl: httpUrl.optional(),
  })
  .strict()
  .superRefine((body, ctx) => {
    const problem = splitRequestProblem(body);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  })
  .openapi('SplitRequest');

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
    bitDepth: z
      .union([z.literal(BIT_DEPTHS), z.null()])
      .openapi({ description: "An addition: the depth asked for (lossless formats), or null: the source's." }),
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

export const WebhookEvent = z
  .object({ event: z.literal('audio.split.completed'), data: AudioSplit })
  .strict()
  .openapi('WebhookEvent');
