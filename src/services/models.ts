/**
 * The model library as the API offers it: every model the server knows (catalog, library,
 * bundled), which are installed and which API keys may run, how fast each ran here, and what
 * a job's model choice resolves to.
 */
import { ENSEMBLE_ALGORITHMS } from '../ensemble/algorithms.js';
import { StemsplitError, describeError } from '../errors.js';
import { isEnsembleRef, type ModelChoice, type ModelListing, type ModelRegistry, type StemModelAlias } from '../models/registry.js';
import type { Task } from '../models/tasks.js';
import type { ModelTimings } from '../store/model-timings.js';

export interface ModelInfo {
  readonly name: string;
  /** demucs, bs_roformer, mel_band_roformer, scnet, mdx23c (MSST), mdx (MDX-Net) or bundled. */
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
  readonly sources: string[];
  readonly description: string;
  /** The weights' licence or terms as published, or "not stated". */
  readonly terms: string;
}

export interface ModelCatalogView {
  readonly items: ModelInfo[];
  readonly ensembleAlgorithms: (typeof ENSEMBLE_ALGORITHMS)[number][];
  readonly defaults: Record<StemModelAlias, string | null>;
}

export class ModelService {
  readonly #registry: ModelRegistry;
  readonly #timings: ModelTimings;
  /** Model names API keys may run (`serve --models`); undefined: every installed model. */
  readonly #allowed: ReadonlySet<string> | undefined;

  constructor(registry: ModelRegistry, timings: ModelTimings, allowed?: readonly string[]) {
    this.#registry = registry;
    this.#timings = timings;
    this.#allowed = allowed === undefined ? undefined : new Set(allowed);
  }

  async list(): Promise<ModelCatalogView> {
    const timings = await this.#timings.secondsPerMinute();
    const items = this.#registry.listing().map((model) => ({
      name: model.name,
      family: model.family,
      origin: model.origin,
      installed: model.installed,
      allowed: model.installed && this.#isAllowed(model.name, model.aliases),
      task: model.task,
      aliases: [...model.aliases],
      secondsPerMinute: timings.get(model.name) ?? null,
      sources: [...model.sources],
      description: model.description,
      terms: model.terms,
    }));
    return { items, ensembleAlgorithms: [...ENSEMBLE_ALGORITHMS], defaults: { '4s': this.#aliasModel('4s'), '6s': this.#aliasModel('6s') } };
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
      if (request.model === '4s' || request.model === '6s') return this.#alias(request.model);
      return this.#resolve(request.model, request.model.split('+'), 'model');
    }
    return this.#alias(request.stemModel);
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

function invalid(message: string): StemsplitError {
  return new StemsplitError('VALIDATION_ERROR', message);
}
