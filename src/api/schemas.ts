/**
 * Every request and response of the v1 API, declared once with zod. The routes validate their
 * input with these schemas and `GET /v1/openapi.json` is generated from the same route
 * declarations (routes/, openapi.ts), so the two cannot drift apart.
 *
 * Objects are strict (unknown fields are refused, and documented as `additionalProperties:
 * false`), numbers are integers, and each resource lists its scalar fields before nested ones,
 * in the order the server writes them. A split's request and resource: split-schemas.ts; a studio's
 * people: people-schemas.ts.
 */
import { z } from '@hono/zod-openapi';
import { API_ERROR_CODES } from '../errors.js';
import { ALLOWED_CONTENT_TYPES, MAX_UPLOAD_BYTES } from '../limits.js';
import { ENSEMBLE_ALGORITHMS } from '../ensemble/algorithms.js';
import { STEM_MODEL_ALIASES, type StemModelAlias } from '../models/aliases.js';
import { TASKS } from '../models/tasks.js';
import { listedFamiliesInWords } from '../services/models.js';

export const text = (maxLength: number) => z.string().min(1).max(maxLength);
export const isoTime = z.string().openapi({ format: 'date-time' });
export const count = z.int().min(0);

export const StemModel = z.enum(STEM_MODEL_ALIASES);

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

export const CreditBalance = z
  .object({ balance: count, unit: z.literal('seconds') })
  .strict()
  .openapi('CreditBalance');

export const ModelInfo = z
  .object({
    name: z.string(),
    family: z.string().openapi({
      description: `How the model runs, as its family lists it: ${listedFamiliesInWords()}.`,
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

/** The success envelope around `data`. */
export function envelopeOf<T extends z.ZodType>(data: T) {
  return z.object({ success: z.literal(true), data }).strict();
}
