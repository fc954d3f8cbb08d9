/**
 * What a preset is, and the presets file's shape: python-audio-separator's `ensemble_presets.json`
 * (`{"version": 1, "presets": {ID: {name, description, models, algorithm, weights}}}`), so a user's
 * file and theirs read the same way.
 */
import { z } from 'zod';
import { ENSEMBLE_ALGORITHMS, takesWeights, type EnsembleAlgorithm } from '../ensemble/algorithms.js';

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
export const PRESET_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
/** An ensemble is two models or more; 8 bounds a job's work, as the API's `models` does. */
export const MAX_PRESET_MEMBERS = 8;

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
    const problem = weightsProblem(preset.algorithm, preset.weights ?? null, preset.models.length);
    if (problem !== undefined) ctx.addIssue({ code: 'custom', path: ['weights'], message: problem });
    const twice = preset.models.find((model, index) => preset.models.indexOf(model) !== index);
    if (twice !== undefined) ctx.addIssue({ code: 'custom', path: ['models'], message: `names ${twice} twice` });
  });

/** The rules `--ensemble-weights` follows (ensemble/algorithms.ts), for a preset's weights. */
function weightsProblem(algorithm: EnsembleAlgorithm, weights: readonly number[] | null, members: number): string | undefined {
  if (weights === null) return undefined;
  if (!takesWeights(algorithm)) return `apply to avg_wave and avg_fft only (${algorithm} ignores weights); use null`;
  if (weights.length !== members) return `needs one weight per model (${members}), got ${weights.length}`;
  if (weights.every((weight) => weight === 0)) return 'must not all be 0';
  return undefined;
}

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
