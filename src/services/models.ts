/**
 * The model library as the API offers it: every model the server knows (catalog, library,
 * bundled), which are installed and which API keys may run, how fast each ran here, and what
 * a job's model choice resolves to.
 */
import { ENSEMBLE_ALGORITHMS } from '../ensemble/algorithms.js';
import { StemsplitError, describeError } from '../errors.js';
import { isStemModelAlias, STEM_MODEL_ALIASES, type StemModelAlias } from '../models/aliases.js';
import { int8Refusal, isEnsembleRef, type ModelChoice, type ModelListing, type ModelRegistry } from '../models/registry.js';
import type { Precision } from '../onnx/quantize.js';
import { familyOptionNames, familyOptionsFrom, MODEL_FAMILIES } from '../models/families.js';
import { flagAttribute, type FamilyOptions } from '../contract/family.js';
import type { Task } from '../models/tasks.js';
import type { ModelTimings } from '../store/model-timings.js';
import { sortBySdr, type PublishedScores } from '../models/scores.js';
import { findPreset, missingMembersLine, presetListings, presetMembers, type PresetListing } from '../presets/presets.js';

export interface ModelInfo {
  readonly name: string;
  /** How it runs, as its family lists it (`listedFamiliesInWords`: one of MODEL_FAMILIES' names). */
  readonly family: ModelListing['family'];
  readonly origin: ModelListing['origin'];
  readonly installed: boolean;
  /** Whether API keys may run it (`serve --models`). */
  readonly allowed: boolean;
  readonly task: Task;
  /** The API aliases (`4s`, `6s`) that resolve to it now. */
  readonly aliases: ModelListing['aliases'][number][];
  /** Seconds of processing per minute of audio on this deployment, from its jobs; null until one ran. */
  readonly secondsPerMinute: number | null;
  /** The `modelOptions` names its family takes. */
  readonly options: string[];
  /** Why a server started with `--precision int8` refuses it (one line, with the measured figure); null where it runs in int8. */
  readonly int8Refused: string | null;
  readonly sources: string[];
  readonly description: string;
  /** The weights' licence or terms as published, or "not stated". */
  readonly terms: string;
  /** Per-stem SDR as its publishers state them, each set with its source; empty where none is published. */
  readonly scores: PublishedScores[];
}

export interface ModelCatalogView {
  readonly items: ModelInfo[];
  readonly ensembleAlgorithms: (typeof ENSEMBLE_ALGORITHMS)[number][];
  readonly defaults: Record<StemModelAlias, string | null>;
  readonly devices: string[];
}

export class ModelService {
  readonly #registry: ModelRegistry;
  readonly #timings: ModelTimings;
  /** Model names API keys may run (`serve --models`); undefined: every installed model. */
  readonly #allowed: ReadonlySet<string> | undefined;
  /** What this server's models compute in (`serve --precision`). */
  readonly #precision: Precision;

  /** What this server's jobs run on, in the order a job is offered them (`serve --device`). */
  readonly #devices: readonly string[];

  /** Where the operator's own presets are (`<data-dir>/presets.json`); undefined: the built-in ones only. */
  readonly #dataDir: string | undefined;

  constructor(
    registry: ModelRegistry,
    timings: ModelTimings,
    allowed?: readonly string[],
    precision: Precision = 'fp32',
    devices: readonly string[] = [],
    dataDir?: string,
  ) {
    this.#devices = devices;
    this.#dataDir = dataDir;
    this.#registry = registry;
    this.#timings = timings;
    this.#allowed = allowed === undefined ? undefined : new Set(allowed);
    this.#precision = precision;
  }

  /** Every model, or `task`'s; `sort: 'sdr'` orders them best published SDR first (models/scores.ts). */
  async list(query: { readonly task?: Task | undefined; readonly sort?: 'sdr' | undefined } = {}): Promise<ModelCatalogView> {
    const timings = await this.#timings.secondsPerMinute();
    const listing = this.#registry.listing().filter((model) => query.task === undefined || model.task === query.task);
    if (query.sort === 'sdr') sortBySdr(listing, query.task);
    const items = listing.map((model) => ({
      name: model.name,
      family: model.family,
      origin: model.origin,
      installed: model.installed,
      allowed: model.installed && this.#isAllowed(model.name, model.aliases),
      task: model.task,
      aliases: [...model.aliases],
      secondsPerMinute: timings.get(model.name) ?? null,
      options: optionNamesOf(model.kind),
      int8Refused: model.int8Refused,
      sources: [...model.sources],
      description: model.description,
      terms: model.terms,
      scores: [...model.scores],
    }));
    const defaults = Object.fromEntries(STEM_MODEL_ALIASES.map((alias) => [alias, this.#aliasModel(alias)])) as Record<StemModelAlias, string | null>;
    return { items, ensembleAlgorithms: [...ENSEMBLE_ALGORITHMS], defaults, devices: [...this.#devices] };
  }

  #aliasModel(alias: StemModelAlias): string | null {
    try {
      return this.#registry.resolveAlias(alias).name;
    } catch {
      return null;
    }
  }

  /** A model an alias runs is the operator's own choice, so always allowed. */
  #isAllowed(name: string, aliases: readonly StemModelAlias[]): boolean {
    return this.#allowed === undefined || this.#allowed.has(name) || aliases.length > 0;
  }

  /**
   * What a job asks to run: its stemModel alias, or the model or ensemble members it names,
   * each installed and allowed. A refusal is a 422 that names the model.
   */
  choose(request: { readonly stemModel: StemModelAlias; readonly model?: string | undefined; readonly models?: readonly string[] | undefined }): ModelChoice {
    if (request.models !== undefined) return this.#resolve(request.models.join('+'), request.models, 'models');
    if (request.model !== undefined) {
      if (isStemModelAlias(request.model)) return this.#alias(request.model);
      return this.#resolve(request.model, request.model.split('+'), 'model');
    }
    return this.#alias(request.stemModel);
  }

  /**
   * A job's `modelOptions`: each a setting of a family among the models it runs, checked by that
   * family (its message names the option as the API does, not as the CLI's flag).
   */
  checkModelOptions(model: ModelChoice, values: Readonly<Record<string, unknown>>): void {
    const names = familyOptionNames();
    const refs = isEnsembleRef(model) ? model.members : [model];
    for (const name of Object.keys(values)) {
      const families = names.get(name);
      if (families === undefined) throw invalid(`modelOptions.${name} is not an option of any model family here (they are ${[...names.keys()].join(', ')})`);
      if (!refs.some((ref) => families.some((family) => ref.kind === family.id))) {
        throw invalid(
          `modelOptions.${name} applies to ${families.map((family) => family.takers).join(', ')}, and ${model.name} ${refs.length > 1 ? 'has none' : 'is not one'}`,
        );
      }
    }
    try {
      familyOptionsFrom(values);
    } catch (error) {
      const message = describeError(error).replace(
        /--([a-z0-9-]+)/g,
        (_flag, long: string) => `modelOptions.${long.replace(/-([a-z0-9])/g, (_dash, letter: string) => letter.toUpperCase())}`,
      );
      throw invalid(message);
    }
  }

  /**
   * On a server started with `--precision int8`, a job whose model (with its `modelOptions`: an
   * MSST model type) runs in fp32 only is refused saying why, as `split --precision int8` is.
   */
  checkPrecision(model: ModelChoice, values: Readonly<Record<string, unknown>> | undefined): void {
    if (this.#precision !== 'int8') return;
    const options = values === undefined ? {} : familyOptionsFrom(values);
    for (const ref of isEnsembleRef(model) ? model.members : [model]) {
      const why = int8Refusal({ ...ref, options: { ...ref.options, ...options } });
      if (why !== undefined) throw invalid(`${ref.name} runs in fp32 only and this server computes in int8 (serve --precision int8): ${why}`);
    }
  }

  /** The presets (python-audio-separator's and the operator's), with their members as this server has them. */
  presets(): Array<Omit<PresetListing, 'weights' | 'members'> & { weights: number[] | null; members: PresetListing['members'][number][] }> {
    return presetListings(this.#dataDir, this.#registry).map((preset) => ({
      ...preset,
      weights: preset.weights ? [...preset.weights] : null,
      members: [...preset.members],
    }));
  }

  /**
   * A job's `preset` as the `models`, `ensemble` and `ensembleWeights` it stands for (choose() then
   * checks each member as it checks `models`); a preset with a member missing is a 422 saying how to get it.
   */
  expandPreset<Request extends { readonly preset?: string | undefined }>(
    request: Request,
  ): Request & { readonly models?: readonly string[]; readonly ensemble?: PresetListing['algorithm']; readonly ensembleWeights?: readonly number[] } {
    if (request.preset === undefined) return request;
    let preset;
    try {
      preset = findPreset(this.#dataDir, request.preset);
    } catch (error) {
      throw invalid(`preset: ${describeError(error).replace(/; stemsplit presets list\)$/, '; GET /v1/presets lists them)')}`);
    }
    const members = presetMembers(preset, this.#registry);
    const missing = members.filter((member) => !member.installed);
    if (missing.length > 0) throw invalid(`preset: ${missingMembersLine(preset.id, missing)} (on this server: its operator can run that)`);
    return {
      ...request,
      models: members.map((member) => member.model),
      ensemble: preset.algorithm,
      ...(preset.weights ? { ensembleWeights: preset.weights } : {}),
    };
  }

  #alias(alias: StemModelAlias): ModelChoice {
    try {
      return this.#registry.resolveAlias(alias);
    } catch (error) {
      throw new StemsplitError('SERVER_ERROR', `no model is installed for ${alias}`, { cause: error });
    }
  }

  #resolve(spec: string, names: readonly string[], field: string): ModelChoice {
    const listing = this.#registry.listing();
    for (const name of names) {
      const model = listing.find((row) => row.name === name);
      if (!model) throw invalid(`${field}: "${name}" is not a model of this server (GET /v1/models lists them)`);
      if (!model.installed) throw invalid(`${field}: ${name} is not installed on this server (its operator can run: stemsplit models pull ${name})`);
      if (!this.#isAllowed(name, model.aliases)) throw invalid(`${field}: ${name} is not offered to API keys on this server (serve --models)`);
      if (names.length > 1 && names.indexOf(name) !== names.lastIndexOf(name)) throw invalid(`${field}: ${name} is named twice`);
    }
    try {
      const choice = this.#registry.resolve(spec);
      if (isEnsembleRef(choice) && choice.members.length !== names.length) throw new Error('an alias inside an ensemble');
      return choice;
    } catch (error) {
      throw invalid(`${field}: ${describeError(error)}`);
    }
  }
}

/** The `modelOptions` names a family takes: its table's flags' attributes, in its table's order. */
function optionNamesOf(kind: string): string[] {
  const family = MODEL_FAMILIES.find((record) => record.id === kind);
  return [...new Set(family?.optionTable.map((row) => flagAttribute(row.flags)) ?? [])];
}

function invalid(message: string): StemsplitError {
  return new StemsplitError('VALIDATION_ERROR', message);
}

/**
 * The family names a listing shows, from MODEL_FAMILIES (each record's name for its models, by its
 * catalog's rows where they differ: an MSST checkpoint by its model type), with what each runs, for help
 * and the API's documentation: `bundled: stemsplit model.json models; vr: UVR VR .pth models; …`.
 */
export function listedFamiliesInWords(): string {
  return MODEL_FAMILIES.map((family) => {
    const byRow = [...new Set((family.catalog ?? []).map((row) => family.listedName(row as { readonly options?: FamilyOptions })))];
    const listed = byRow.length > 0 ? byRow : [family.listedName({})];
    return `${listed.join(', ')}: ${family.takers}`;
  }).join('; ');
}
