/**
 * A job's choices beyond its model name, as the `jobOptions` column keeps them (JSON): how an
 * ensemble combines, two stems, the depth, bitrate and levels, the family settings, a chain. The
 * service writes them once, when the job is made; the runner hands them to the split; GET shows
 * them. The schema is their one declaration: a row is checked against it when read back, so a
 * value no version of stemsplit wrote (a hand-edited row, a downgrade) fails the job in words
 * instead of reaching the worker.
 */
import { z } from 'zod';
import { BIT_DEPTHS } from '../audio/formats.js';
import { CLIP_MODES } from '../audio/levels.js';
import { ENSEMBLE_ALGORITHMS } from '../ensemble/algorithms.js';
import { StemsplitError } from '../errors.js';

const RecipeStepSchema = z
  .object({
    input: z.string().optional(),
    model: z.string().optional(),
    models: z.array(z.string()).readonly().optional(),
    ensemble: z.string().optional(),
    ensembleWeights: z.array(z.number()).readonly().optional(),
  })
  .strict();

const JobOptionsSchema = z
  .object({
    /** An ensemble's algorithm, for a job that named its members. */
    ensemble: z.enum(ENSEMBLE_ALGORITHMS).optional(),
    ensembleWeights: z.array(z.number()).readonly().optional(),
    /** Write this stem and `no_<stem>`. */
    twoStems: z.string().optional(),
    /** Lossless formats' depth (audio/formats.ts: 32 is float); absent, the source's. */
    bitDepth: z.literal(BIT_DEPTHS).optional(),
    /** A lossy format's kb/s; absent, the format's default. */
    bitrateKbps: z.number().optional(),
    /** audio/levels.ts: how a stem that would clip is written; absent, 'none'. */
    clipMode: z.enum(CLIP_MODES).optional(),
    /** audio/levels.ts: the peak a louder stem is scaled down to; absent, none. */
    normalize: z.number().optional(),
    /** The families' own settings as the job named them (`mdxSegmentSize`, …), checked when it was made. */
    modelOptions: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).optional(),
    /** A chain's steps (chains/recipe.ts), each by the model it resolved to; the job's model name is the chain's. */
    chain: z.array(RecipeStepSchema).readonly().optional(),
    /** A chain keeps the stems its later steps split too. */
    keepIntermediate: z.boolean().optional(),
  })
  .strict();

export type JobOptions = Readonly<z.infer<typeof JobOptionsSchema>>;

export function serializeJobOptions(options: JobOptions): string | null {
  return Object.keys(options).length === 0 ? null : JSON.stringify(options);
}

/** The options a row holds, checked; a row from before they existed holds none. */
export function parseJobOptions(column: string | null): JobOptions {
  if (column === null) return {};
  let value: unknown;
  try {
    value = JSON.parse(column);
  } catch {
    throw new StemsplitError('INTERNAL_ERROR', "the job's recorded options are not JSON");
  }
  const parsed = JobOptionsSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new StemsplitError(
      'INTERNAL_ERROR',
      `the job's recorded options are not what stemsplit writes: ${issue?.path.join('.') || 'the record'}: ${issue?.message ?? 'invalid'}`,
    );
  }
  return parsed.data;
}
