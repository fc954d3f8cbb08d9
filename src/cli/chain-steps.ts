/**
 * `split --then INPUT=MODEL` and `split --chain FILE`: a chain's recipe (chains/recipe.ts) from
 * the command line or a JSON/YAML file, its models resolved as `--model` resolves them. A model
 * path in a recipe file is taken from the file's folder, so a recipe travels with its models.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { parse } from 'yaml';
import { chainStems, parseThen, recipeFrom, type Recipe, type RecipeStep } from '../chains/recipe.js';
import { parseEnsembleMethod, type EnsembleMethod } from '../ensemble/algorithms.js';
import { describeError, StemsplitError } from '../errors.js';
import type { FamilyOptions } from '../contract/family.js';
import { isEnsembleRef, type ModelChoice, type ModelRegistry } from '../models/registry.js';
import type { ChainStepRef } from '../split-worker/worker-pool.js';

/** A recipe file is a few lines; anything near this is not one. */
const MAX_RECIPE_BYTES = 64 * 1024;

export interface ChainFlags {
  /** Each `--then` given. */
  readonly then: readonly string[];
  readonly chain?: string | undefined;
}

/** A step resolved: its model (or ensemble) and how an ensemble combines. */
export interface ResolvedStep {
  readonly input?: string | undefined;
  readonly ref: ModelChoice;
  readonly ensemble: EnsembleMethod | undefined;
}

/** The recipe in `--chain FILE`, checked; a USAGE error naming the file otherwise. */
export function readRecipeFile(file: string): Recipe {
  const fail = (why: string) => new StemsplitError('USAGE', `--chain ${file}: ${why}`);
  let text: string;
  try {
    if (statSync(file).size > MAX_RECIPE_BYTES) throw fail(`a recipe is at most ${MAX_RECIPE_BYTES / 1024} KiB`);
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if (error instanceof StemsplitError) throw error;
    throw new StemsplitError('NOT_FOUND', `--chain ${file}: cannot read it (${describeError(error)})`);
  }
  let value: unknown;
  try {
    value = parse(text, { maxAliasCount: 10 });
  } catch (error) {
    throw fail(`not JSON or YAML (${describeError(error).split('\n')[0]})`);
  }
  const recipe = recipeFrom(value);
  if ('problem' in recipe) throw fail(recipe.problem);
  return recipe;
}

/** `--then` values as the steps after the first, or a USAGE error naming the one that is wrong. */
export function thenSteps(values: readonly string[]): RecipeStep[] {
  return values.map((value) => {
    const step = parseThen(value);
    if ('problem' in step) throw new StemsplitError('USAGE', step.problem);
    return step;
  });
}

/**
 * Resolves a recipe's steps from `from` on (the CLI resolves `--then`'s first model as `--model`),
 * each as `--model` would be; `base` is the folder relative paths in a recipe file start from.
 */
export function resolveSteps(registry: ModelRegistry, steps: readonly RecipeStep[], options: FamilyOptions | undefined, base?: string): ResolvedStep[] {
  return steps.map((step, index) => {
    const where = step.input === undefined ? "the chain's first step" : `the step that splits ${step.input}`;
    const specs = step.models ?? [step.model as string];
    const located = specs.map((spec) => (base !== undefined && !isAbsolute(spec) && existsSync(resolve(base, spec)) ? resolve(base, spec) : spec));
    const ref = located.length === 1 ? registry.resolve(located[0] as string, undefined, options) : registry.resolveEnsemble(located, options);
    const named = step.ensemble !== undefined || step.ensembleWeights !== undefined;
    if (named && !isEnsembleRef(ref))
      throw new StemsplitError('USAGE', `${where} (step ${index + 1}): ensemble and ensembleWeights combine two or more models`);
    const ensemble = isEnsembleRef(ref) ? parseEnsembleMethod(step.ensemble, step.ensembleWeights?.join(','), ref.members.length) : undefined;
    return { input: step.input, ref, ensemble };
  });
}

/** The chain's stems checked before anything loads, where each step's listing names its stems; the worker checks again once they are loaded. */
export function checkChainStems(steps: readonly ResolvedStep[]): void {
  const known = steps.map((step) => (!isEnsembleRef(step.ref) && step.ref.sources.length > 0 ? step.ref.sources : undefined));
  const stems = chainStems(
    steps.map((step) => step.input),
    known,
  );
  if ('problem' in stems) throw new StemsplitError('USAGE', `the chain: ${stems.problem}`);
}

/** The steps after the first, as a split job carries them to its worker. */
export function laterSteps(steps: readonly ResolvedStep[]): ChainStepRef[] {
  return steps.slice(1).map((step) => ({ input: step.input as string, model: step.ref, ...(step.ensemble ? { ensemble: step.ensemble } : {}) }));
}

/** The folder a recipe file's relative model paths start from. */
export function recipeBase(file: string): string {
  return dirname(resolve(file));
}
