/**
 * What a preset is, and the presets file's shape: python-audio-separator's `ensemble_presets.json`
 * (`{"version": 1, "presets": {ID: {name, description, models, algorithm, weights}}}`), so a user's
 * file and theirs read the same way.
 */
import { z } from 'zod';
import { ENSEMBLE_ALGORITHMS, ensembleWeightsProblem, type EnsembleAlgorithm } from '../ensemble/algorithms.js';
import { MAX_ENSEMBLE_MEMBERS, PRESET_ID } from '../split-request/split-request.js';

/** A preset as recorded: its members by name or file, how their stems combine, and words for people. */
export interface PresetDefinition {
  /** The name people read, e.g. "Vocal Balanced"; the id is what commands take. */
  readonly name: string;
  readonly description: string;
  /** Each member: a model name (`models list`), the file name python-audio-separator uses for it, or a path. */
  readonly models: readonly string[];
  readonly algorithm: EnsembleAlgorithm;
  /** One per member (avg_wave and avg_fft only); null: equal. */
  readonly weights: readonly number[] | null;
}

/** Ids users type and URLs carry: as a library model's name (no `/`, no `+`). */
export { PRESET_ID };
/** An ensemble is two models or more; 8 bounds a job's work, as a split request's `models` does. */
export const MAX_PRESET_MEMBERS = MAX_ENSEMBLE_MEMBERS;

const Definition = z
  .object({
    name: z.string().min(1).max(100).optional(),
    description: z.string().max(500).optional(),
    models: z.array(z.string().min(1).max(1000)).min(2).max(MAX_PRESET_MEMBERS),
    algorithm: z.enum(ENSEMBLE_ALGORITHMS),
    weights: z.array(z.number().finite().min(0)).nullable().optional(),
    contributor: z.string().max(200).optional(),
  })
  .strict()
  .superRefine((preset, ctx) => {
    // The rules a split request's ensembleWeights follow (split-request/); null: equal weights.
    const problem = preset.weights ? ensembleWeightsProblem(preset.algorithm, preset.weights, preset.models.length) : undefined;
    if (problem !== undefined) ctx.addIssue({ code: 'custom', path: ['weights'], message: problem });
    const twice = preset.models.find((model, index) => preset.models.indexOf(model) !== index);
    if (twice !== undefined) ctx.addIssue({ code: 'custom', path: ['models'], message: `names ${twice} twice` });
  });

export const PresetsFile = z
  .object({
    version: z.literal(1).optional(),
    presets: z.record(z.string().regex(PRESET_ID, 'a preset id is 1-64 letters, digits, ".", "_" or "-"'), Definition),
  })
  .strict();

/** A parsed file's entry in the shape the built-in ones have. */
export function definitionOf(id: string, entry: z.infer<typeof Definition>): PresetDefinition {
  return { name: entry.name ?? id, description: entry.description ?? '', models: entry.models, algorithm: entry.algorithm, weights: entry.weights ?? null };
}

/** A zod failure in one line: the first issue, with where it is. */
export function firstIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (issue === undefined) return 'not a presets file';
  const where = issue.path.map(String).join('.');
  return where ? `${where}: ${issue.message}` : issue.message;
}
