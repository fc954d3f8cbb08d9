/**
 * What the registry hands out: a model reference (a file its family runs, with its config,
 * options, stems and terms), an ensemble of several, and a row of the listing.
 */
import { DEFAULT_ALLOCATOR, type AllocatorProfile } from '../onnx/process-env.js';
import type { SeparationModel } from '../separation/model.js';
import type { StemModelAlias } from './aliases.js';
import { familyById } from './families.js';
import type { FamilyOptions } from '../contract/family.js';
import type { PublishedScores } from './scores.js';
import type { Task } from './tasks.js';

/** The id of the family record that runs a model (families.ts). */
export type ModelKind = string;

export interface ModelRef {
  readonly name: string;
  readonly kind: ModelKind;
  /** The file its family runs it from (a `model.json`, a `.th` or bag `.yaml`, a `.ckpt`, an `.onnx`, …). */
  readonly path: string;
  /** MSST: the yaml (default: beside the checkpoint). */
  readonly configPath?: string;
  readonly options?: FamilyOptions;
  readonly sources: readonly string[];
  readonly description: string;
  /** The weights' licence or terms as published, or "not stated". */
  readonly terms: string;
  /** A bundled model's card (MODEL_CARD.md beside its model.json): architecture, training data and their licences, scores. */
  readonly card?: string;
  /** What the model is for, where its catalog entry or its library entry says (otherwise told from its stems: tasks.ts). */
  readonly task?: Task;
}

/** A model's family as `models list` and GET /v1/models name it, as its record says (an MSST checkpoint by its model type). */
export type ListedFamily = string;

export function listedFamily(ref: Pick<ModelRef, 'kind' | 'options'>): ListedFamily {
  return familyById(ref.kind).listedName(ref);
}

/** Why `--precision int8` is refused for this model, in one line; undefined where it computes in int8. */
export function int8Refusal(ref: Pick<ModelRef, 'kind' | 'name' | 'path' | 'configPath' | 'options'>): string | undefined {
  const answer = familyById(ref.kind).int8?.(ref) ?? 'int8 is not implemented for its family';
  return answer === true ? undefined : answer;
}

export type ModelOrigin = 'bundled' | 'pulled' | 'library' | 'available';

export interface ModelListing extends Omit<ModelRef, 'path' | 'task'> {
  readonly family: ListedFamily;
  readonly task: Task;
  readonly path: string | null;
  readonly installed: boolean;
  /** bundled: shipped inside stemsplit; pulled: `models pull`; library: `models add`; available: can be pulled. */
  readonly origin: ModelOrigin;
  /** API aliases that currently resolve to this model. */
  readonly aliases: readonly StemModelAlias[];
  /** Why `--precision int8` is refused for it (one line, with the measured figure); null where it computes in int8. */
  readonly int8Refused:
    | string
    | null /** Per-stem SDR as its publishers state them, each set with its source (models/scores.ts); empty where none is published. */;
  readonly scores: readonly PublishedScores[];
}

/**
 * Several models whose stems are combined (`A+B` in a model spec, `split --model A --model B`):
 * the ensemble's name joins its members' names with `+`.
 */
export interface EnsembleRef {
  readonly name: string;
  readonly members: readonly ModelRef[];
  /** Every member's terms, each after its name. */
  readonly terms: string;
  readonly description: string;
}

/** What a model spec names: one model, or an ensemble of several. */
export type ModelChoice = ModelRef | EnsembleRef;

export function isEnsembleRef(choice: ModelChoice): choice is EnsembleRef {
  return 'members' in choice;
}

/** The allocator settings of the worker that runs `choice`: its families', where they agree. */
export function allocatorOf(choice: ModelChoice): AllocatorProfile {
  const profiles = new Set((isEnsembleRef(choice) ? choice.members : [choice]).map((ref) => familyById(ref.kind).allocator?.(ref) ?? DEFAULT_ALLOCATOR));
  return profiles.size === 1 ? ([...profiles][0] as AllocatorProfile) : DEFAULT_ALLOCATOR;
}

/** The ensemble of `members` (already resolved), named and described by them. */
export function ensembleOf(members: readonly ModelRef[]): EnsembleRef {
  return {
    name: members.map((member) => member.name).join('+'),
    members,
    terms: members.map((member) => `${member.name}: ${member.terms}`).join('; '),
    description: `an ensemble of ${members.map((member) => member.name).join(', ')}`,
  };
}

/** Every model several choices run (a chain's steps), as one ensemble's members: checked together as an ensemble's are. */
export function allModelsOf(choices: readonly ModelChoice[]): EnsembleRef {
  return ensembleOf(choices.flatMap((choice) => (isEnsembleRef(choice) ? choice.members : [choice])));
}

/** Loads a model the way its family does (models/loaders.ts). */
export type ModelLoader = (ref: ModelRef) => Promise<SeparationModel>;
