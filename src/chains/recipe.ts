/**
 * A chain's recipe: models run one after another in one job, each later step splitting a stem an
 * earlier one made (UVR's "Vocal Splitter" and secondary models; python-audio-separator #12).
 * One shape for the CLI's `--then INPUT=MODEL` and `--chain FILE`, the API's `chain` and the page:
 *
 *   [{ "model": A }, { "input": "vocals", "model": B }, { "input": "vocals-vocals", "model": C }]
 *
 * A step's model is anything a job's model can be: a name, a path, `A+B`, or `models` with an
 * `ensemble` algorithm and `ensembleWeights`. A later step's stems are named `<input>-<stem>`, so
 * every name says where it came from. Plain data and rules only: resolving names to models is the
 * caller's (the CLI's registry, the API's model service), running it is split-worker/chain.ts's.
 */

/** More steps than this is a recipe gone wrong, not a workflow (UVR's longest chains have three or four). */
export const MAX_CHAIN_STEPS = 8;

export interface RecipeStep {
  /** The stem an earlier step made that this step splits; absent on the first step, which splits the track. */
  readonly input?: string | undefined;
  readonly model?: string | undefined;
  /** An ensemble's members, instead of `model`. */
  readonly models?: readonly string[] | undefined;
  /** How an ensemble's stems combine (ensemble/algorithms.ts names), and their weights. */
  readonly ensemble?: string | undefined;
  readonly ensembleWeights?: readonly number[] | undefined;
}

export type Recipe = readonly RecipeStep[];

/** What is wrong with a recipe's shape, in words naming the step (1-based), or undefined. Stems are checked once the models are known (`chainStemsProblem`). */
export function recipeProblem(recipe: Recipe): string | undefined {
  if (recipe.length === 0) return 'a chain needs at least one step';
  if (recipe.length > MAX_CHAIN_STEPS) return `a chain has at most ${MAX_CHAIN_STEPS} steps, this one has ${recipe.length}`;
  for (const [index, step] of recipe.entries()) {
    const where = `step ${index + 1}`;
    if ((step.model === undefined) === (step.models === undefined)) return `${where} names its model with either "model" or "models"`;
    if (step.models !== undefined && step.models.length < 2) return `${where}: "models" lists an ensemble's two or more models`;
    if (index === 0 && step.input !== undefined) return 'step 1 splits the track itself: it takes no "input"';
    if (index > 0 && (step.input === undefined || step.input === '')) return `${where} needs an "input": the stem of an earlier step it splits`;
  }
  return undefined;
}

/** The name a step's stem gets: the first step's as its model names it, a later step's prefixed with the stem it split. */
export function chainStemName(input: string | undefined, stem: string): string {
  return input === undefined ? stem : `${input}-${stem}`;
}

/** A chain's name, as jobs, logs and output folders show it (words, not symbols: it may name a folder anywhere). */
export function chainName(stepNames: readonly string[]): string {
  return stepNames.join(' then ');
}

export interface ChainStems {
  /** Every stem the chain makes, in the order its steps make them. */
  readonly produced: readonly string[];
  /** The stems a later step splits. */
  readonly consumed: ReadonlySet<string>;
}

/**
 * The stems a chain makes from each step's own stem names (in step order), or a problem naming
 * the step whose input no earlier step makes. A step's own names may be unknown (`undefined`:
 * a model whose listing does not say) until it is loaded: then nothing after it is checked yet.
 */
export function chainStems(
  inputs: readonly (string | undefined)[],
  stepStems: readonly (readonly string[] | undefined)[],
): ChainStems | { readonly problem: string } {
  const produced: string[] = [];
  const consumed = new Set<string>();
  for (const [index, own] of stepStems.entries()) {
    const input = inputs[index];
    if (input !== undefined) {
      if (!produced.includes(input)) return { problem: `step ${index + 1} splits "${input}", which no earlier step makes (they make ${produced.join(', ')})` };
      if (consumed.has(input)) return { problem: `step ${index + 1} splits "${input}", which an earlier step already split` };
      consumed.add(input);
    }
    if (own === undefined) break;
    produced.push(...own.map((stem) => chainStemName(input, stem)));
  }
  return { produced, consumed };
}

/** The stems a chain writes: every stem it makes but those a later step split, unless they are kept too. */
export function writtenStems(stems: ChainStems, keepIntermediate: boolean): string[] {
  return keepIntermediate ? [...stems.produced] : stems.produced.filter((stem) => !stems.consumed.has(stem));
}

/**
 * What a chain costs: each step runs its model over the whole track (a stem is as long as the
 * song), as much work as a job of its own, so a chain of n steps costs n times the seconds of
 * audio, as the n jobs it replaces would. (An ensemble is one step: one job's stems.)
 */
export function chainCredits(seconds: number, steps: number): number {
  return Math.ceil(seconds) * Math.max(1, steps);
}

/** The share of a chain's progress (0–100) its steps take, each an equal part; the last stretch encodes the stems it writes. */
export const CHAIN_STEPS_SHARE = 95;

/** The step (1-based) a chain's job is at, from its progress: what the API and the page show. */
export function chainStepAt(percent: number, steps: number): number {
  return Math.min(steps, Math.floor((percent * steps) / CHAIN_STEPS_SHARE) + 1);
}

/** `--then vocals=karaoke.ckpt` (or `vocals=A+B`, an ensemble): one step, its model as `--model` takes it. */
export function parseThen(value: string): RecipeStep | { readonly problem: string } {
  const at = value.indexOf('=');
  if (at <= 0 || at === value.length - 1) return { problem: `--then takes INPUT=MODEL (e.g. vocals=karaoke.ckpt), got "${value}"` };
  return { input: value.slice(0, at), model: value.slice(at + 1) };
}

const STEP_KEYS = new Set(['input', 'model', 'models', 'ensemble', 'ensembleWeights']);

/** A recipe read from a file or a request body (any JSON or YAML value), checked for its shape and rules. */
export function recipeFrom(value: unknown): Recipe | { readonly problem: string } {
  if (!Array.isArray(value)) return { problem: 'a chain is a list of steps, e.g. [{"model": "A"}, {"input": "vocals", "model": "B"}]' };
  const steps: RecipeStep[] = [];
  for (const [index, raw] of value.entries()) {
    const where = `step ${index + 1}`;
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
      return { problem: `${where} is not a mapping of input, model, models, ensemble, ensembleWeights` };
    const step = raw as Record<string, unknown>;
    const unknown = Object.keys(step).find((key) => !STEP_KEYS.has(key));
    if (unknown !== undefined) return { problem: `${where}: unknown key "${unknown}" (a step has input, model, models, ensemble, ensembleWeights)` };
    for (const key of ['input', 'model', 'ensemble'] as const) {
      if (step[key] !== undefined && typeof step[key] !== 'string') return { problem: `${where}: "${key}" is a string` };
    }
    if (step['models'] !== undefined && !(Array.isArray(step['models']) && step['models'].every((name) => typeof name === 'string')))
      return { problem: `${where}: "models" is a list of model names` };
    const weights = step['ensembleWeights'];
    if (weights !== undefined && !(Array.isArray(weights) && weights.every((weight) => typeof weight === 'number')))
      return { problem: `${where}: "ensembleWeights" is a list of numbers` };
    steps.push(step as RecipeStep);
  }
  const problem = recipeProblem(steps);
  return problem === undefined ? steps : { problem };
}
