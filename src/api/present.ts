/**
 * The public shapes of a split job. Field order matters to some clients (one SDK parses JSON
 * naively): scalar fields first, nested objects (`stems`, `error`) last, and no nested key
 * repeats a top-level name.
 */
import type { z } from '@hono/zod-openapi';
import { parseJobOptions, type Split } from '../store/index.js';
import type { AudioSplit } from './split-schemas.js';
import type { StemUrlSigner } from './stem-urls.js';
import { ensembleMembers } from '../config.js';
import { DEFAULT_CLIP_MODE } from '../audio/levels.js';
import { DEFAULT_ENSEMBLE_ALGORITHM } from '../ensemble/algorithms.js';
import { chainStepAt } from '../chains/recipe.js';

/** A job as the API shows it: the type of its schema (schemas.ts), declared there once. */
export type AudioSplitResource = z.output<typeof AudioSplit>;

/**
 * `apiKeyId`: the key its stem URLs are issued to (the key that asked; for a webhook, the key that
 * made the job), so that revoking that key ends them. `queuePosition`: a queued job's place, where the
 * caller looked it up.
 */
export function presentSplit(
  split: Split,
  signer: StemUrlSigner,
  baseUrl: string,
  nowMs: number,
  apiKeyId: string,
  queuePosition?: number,
): AudioSplitResource {
  const options = parseJobOptions(split.jobOptions);
  const resource: AudioSplitResource = {
    id: split.id,
    status: split.status,
    // The column holds only what the request schema accepted.
    stemModel: split.stemModel as AudioSplitResource['stemModel'],
    model: split.modelName,
    ensemble: null,
    twoStems: options.twoStems ?? null,
    outputFormat: split.outputFormat,
    bitDepth: options.bitDepth ?? null,
    bitrateKbps: options.bitrateKbps ?? null,
    clipMode: options.clipMode ?? DEFAULT_CLIP_MODE,
    normalize: options.normalize ?? null,
    filename: split.filename,
    durationSeconds: split.durationSeconds,
    creditsUsed: split.creditsUsed,
    progress: split.progress,
    device: split.device ?? null,
    ...(queuePosition !== undefined ? { queuePosition } : {}),
    chainStep: options.chain ? chainStepAt(split.progress, options.chain.length) : null,
    createdAt: split.createdAt,
    updatedAt: split.updatedAt,
    models: options.chain ? options.chain.flatMap((step) => step.models ?? [step.model as string]) : ensembleMembers(split.modelName),
    ensembleWeights: options.ensembleWeights ? [...options.ensembleWeights] : null,
    modelOptions: options.modelOptions ? { ...options.modelOptions } : null,
    chain: options.chain ? (options.chain.map((step) => ({ ...step })) as AudioSplitResource['chain']) : null,
    error: null,
  };
  if (resource.models.length > 1 && !options.chain) resource.ensemble = (options.ensemble ?? DEFAULT_ENSEMBLE_ALGORITHM) as AudioSplitResource['ensemble'];
  if (split.status === 'succeeded' && split.stemNames && split.purgedAt === null) {
    const stems: Record<string, string> = {};
    for (const stem of JSON.parse(split.stemNames) as string[]) stems[stem] = signer.url(baseUrl, split.id, stem, split.outputFormat, nowMs, apiKeyId);
    resource.sourceUrl = signer.sourceUrl(baseUrl, split.id, nowMs, apiKeyId);
    if (split.mixStems !== null) resource.mixStems = JSON.parse(split.mixStems) as string[];
    resource.stems = stems;
  }
  // `error` goes last, after `stems`, so re-insert it.
  delete (resource as Partial<AudioSplitResource>).error;
  resource.error = split.status === 'failed' ? { code: split.errorCode ?? 'INTERNAL_ERROR', message: split.errorMessage ?? '' } : null;
  return resource;
}
