/**
 * A job's choices beyond its model name, as the `jobOptions` column keeps them (JSON): how an
 * ensemble combines, two stems, the depth, bitrate and levels, the family settings, a chain. The
 * service writes them once, when the job is made; the runner hands them to the split; GET shows
 * them. The schema is their one declaration: a row is checked against it when read back, so a
 * value no version of stemsplit wrote (a hand-edited row, a downgrade) fails the job in words
 * instead of reaching the worker.
 */
import { z } from 'zod';
import { StemsplitError } from '../errors.js';
import { normalizePeakOf, NormalizePeak, splitRequestFields, type SplitRequest } from '../split-request/split-request.js';

const fields = splitRequestFields;
/** What a split asks for (split-request/), less what the row keeps in columns of its own (the model's name, the format). */
const JobOptionsSchema = z
  .object({
    /** An ensemble's algorithm, for a job that named its members or an alias's ensemble (decided when the job was made). */
    ensemble: fields.ensemble,
    ensembleWeights: fields.ensembleWeights,
    twoStems: fields.twoStems,
    /** audio/formats.ts: 32 is float; absent, the source's. */
    bitDepth: fields.bitDepth,
    bitrateKbps: fields.bitrateKbps,
    clipMode: fields.clipMode,
    /** The peak a louder stem is scaled down to (a request's `true` is kept as the peak it stands for). */
    normalize: NormalizePeak.optional(),
    modelOptions: fields.modelOptions,
    /** A chain's steps, each by the model it resolved to; the job's model name is the chain's. */
    chain: fields.chain,
    keepIntermediate: fields.keepIntermediate,
  })
  .strict();

export type JobOptions = Pick<SplitRequest, Exclude<keyof z.output<typeof JobOptionsSchema>, 'normalize'>> & { readonly normalize?: number | undefined };

/**
 * What the store keeps of a split request: its fields beside the model's name and the format (which
 * have columns), `normalize` as the peak it stands for, no empty modelOptions, keepIntermediate only
 * with a chain.
 */
export function jobOptionsOf(request: SplitRequest): JobOptions {
  const peak = normalizePeakOf(request.normalize);
  const kept = Object.entries(request).filter(
    ([field, value]) =>
      value !== undefined && field in JobOptionsSchema.shape && field !== 'normalize' && field !== 'keepIntermediate' && field !== 'modelOptions',
  );
  return {
    ...(Object.fromEntries(kept) as JobOptions),
    ...(peak !== undefined ? { normalize: peak } : {}),
    ...(request.modelOptions !== undefined && Object.keys(request.modelOptions).length > 0 ? { modelOptions: request.modelOptions } : {}),
    ...(request.chain !== undefined && request.keepIntermediate ? { keepIntermediate: true } : {}),
  };
}

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
