/**
 * Which models exist, which are installed, and which one a name means.
 *
 * A model is named by the user as an API alias (`4s`, `6s`), a model name (`bundled-4s`,
 * `htdemucs`, a library name), or a path, which the family records (families.ts) claim in
 * turn. Loading is the families' own, so this module never touches ONNX itself.
 */
import { existsSync, readdirSync } from 'node:fs';
import { basename, extname, join, resolve } from 'node:path';
import { ensembleMembers } from '../config.js';
import { StemsplitError } from '../errors.js';
import { refuseLinkLoop, refuseSpecialFile } from '../model-files/regular.js';
import { isStemModelAlias, STEM_MODEL_ALIASES, type StemModelAlias } from './aliases.js';
import { MODEL_CATALOG, type CatalogModel } from './catalog.js';
import { MODEL_FAMILIES } from './families.js';
import type { ClaimedFile, FamilyOptions, ModelFamilyRecord } from '../contract/family.js';
import { pullStepsOf } from './pulled.js';
import {
  ensembleOf,
  int8Refusal,
  isEnsembleRef,
  listedFamily,
  type EnsembleRef,
  type ModelChoice,
  type ModelListing,
  type ModelOrigin,
  type ModelRef,
} from './refs.js';
import { libraryDir, libraryModels, type LibraryModel } from './library.js';
import { taskOf } from './tasks.js';
import { publishedScores } from './scores.js';

export type { StemModelAlias };
export type { FamilyOptions };
export {
  allocatorOf,
  allModelsOf,
  ensembleOf,
  int8Refusal,
  isEnsembleRef,
  listedFamily,
  type EnsembleRef,
  type ListedFamily,
  type ModelChoice,
  type ModelKind,
  type ModelListing,
  type ModelLoader,
  type ModelOrigin,
  type ModelRef,
} from './refs.js';
export { modelDir, pullStepsOf } from './pulled.js';
export { ModelCache } from './model-cache.js';

export interface RegistryOptions {
  readonly bundledDir: string;
  /** Where pulled Demucs checkpoints live: `<cacheDir>/demucs`. */
  readonly cacheDir: string;
  /** The data dir's model library (`models add`): `<dataDir>/models`; absent, none. */
  readonly libraryDir?: string;
  readonly aliases: Readonly<Record<StemModelAlias, readonly string[]>>;
}

/** The registry a resolved config describes (the same for `serve`, `split` and `models`). */
export function registryFor(config: {
  readonly bundledModelsDir: string;
  readonly cacheDir: string;
  readonly dataDir: string;
  readonly modelAliases: RegistryOptions['aliases'];
}): ModelRegistry {
  return new ModelRegistry({
    bundledDir: config.bundledModelsDir,
    cacheDir: config.cacheDir,
    libraryDir: libraryDir(config.dataDir),
    aliases: config.modelAliases,
  });
}

const UNKNOWN_TERMS = 'not stated';

export class ModelRegistry {
  readonly #options: RegistryOptions;

  constructor(options: RegistryOptions) {
    this.#options = options;
  }

  /** Models shipped with stemsplit: every `<bundledDir>/<name>/model.json`. */
  bundled(): ModelRef[] {
    if (!existsSync(this.#options.bundledDir)) return [];
    return readdirSync(this.#options.bundledDir)
      .map((entry) => join(this.#options.bundledDir, entry, 'model.json'))
      .filter((path) => existsSync(path))
      .map((path) => this.#resolvePath(path))
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  /** The entry point file of a pulled catalog model, or undefined when not (fully) installed. */
  installedPath(model: CatalogModel): string | undefined {
    const steps = pullStepsOf(model.family);
    return steps.entry(model, steps.dir(this.#options.cacheDir));
  }

  pulled(): ModelRef[] {
    const refs: ModelRef[] = [];
    for (const model of MODEL_CATALOG) {
      const path = this.installedPath(model);
      if (path) refs.push({ ...catalogRef(model, path), ...configOf(model, this.#options.cacheDir) });
    }
    return refs;
  }

  /** Models users added to the data dir's library (`models add`), as their files say. */
  library(): ModelRef[] {
    return this.#options.libraryDir === undefined ? [] : libraryModels(this.#options.libraryDir).map((model) => this.#libraryRef(model));
  }

  #libraryRef(model: LibraryModel): ModelRef {
    const ref = this.#resolvePath(model.path, model.configPath);
    return {
      ...ref,
      name: model.name,
      sources: model.stems,
      ...(model.configPath ? { configPath: model.configPath } : {}),
      description: `${ref.description.replace(model.path, model.file)}, added from ${model.from} (${model.installedBy === 'link' ? 'hard-linked' : 'copied'} ${model.addedAt.slice(0, 10)})`,
      terms: model.terms,
      ...(model.task ? { task: model.task } : {}),
    };
  }

  installed(): ModelRef[] {
    return [...this.pulled(), ...this.library(), ...this.bundled()];
  }

  /**
   * What `4s` or `6s` means right now: the first entry of its alias list whose models are all
   * installed (an entry is a model name or file, or several joined by `+`: an ensemble).
   */
  resolveAlias(alias: StemModelAlias): ModelChoice {
    const installed = this.installed();
    const find = (name: string) => installed.find((m) => m.name === name) ?? (isPathSpec(name) && existsSync(name) ? this.#resolvePath(name) : undefined);
    for (const entry of this.#options.aliases[alias]) {
      const members = ensembleMembers(entry).map(find);
      if (members.every((member) => member !== undefined)) return members.length === 1 ? (members[0] as ModelRef) : ensembleOf(members as ModelRef[]);
    }
    throw new StemsplitError('MODEL_NOT_FOUND', `no installed model for ${alias} (tried ${this.#options.aliases[alias].join(', ')})`);
  }

  /**
   * Resolves an alias, a model name or a path to a model; `configPath` names an MSST
   * checkpoint's yaml, `options` the family's settings for this run.
   */
  resolve(spec: string, configPath?: string, options?: FamilyOptions): ModelChoice {
    const members = ensembleMembers(spec);
    if (members.length > 1) return this.resolveEnsemble(members, options);
    if (isStemModelAlias(spec)) return this.resolveAlias(spec);
    return this.resolveModel(spec, configPath, options);
  }

  /**
   * The ensemble of the models `specs` name (each a name or a path, not an alias nor an
   * ensemble); `options` reach each member as its own (a family's settings reach that family).
   */
  resolveEnsemble(specs: readonly string[], options?: FamilyOptions): EnsembleRef {
    const members = specs.map((spec) => {
      if (isStemModelAlias(spec)) throw new StemsplitError('USAGE', `an ensemble names its models, not the alias ${spec}`);
      return this.resolveModel(spec, undefined, options);
    });
    return ensembleOf(members);
  }

  /** One model by name or path (an alias gives its single model; an ensemble is refused here). */
  resolveModel(spec: string, configPath?: string, options?: FamilyOptions): ModelRef {
    const ref = this.#resolveSpec(spec, configPath);
    const given = options && Object.values(options).some((value) => value !== undefined) ? options : undefined;
    return given ? { ...ref, options: { ...ref.options, ...given } } : ref;
  }

  #resolveSpec(spec: string, configPath: string | undefined): ModelRef {
    if (isStemModelAlias(spec)) {
      const choice = this.resolveAlias(spec);
      if (isEnsembleRef(choice)) throw new StemsplitError('USAGE', `${spec} is the ensemble ${choice.name} here; name its models one by one`);
      return choice;
    }
    const byName = this.installed().find((m) => m.name === spec) ?? this.#aliasFile(spec);
    if (byName) {
      if (configPath !== undefined) throw new StemsplitError('USAGE', `--model-config names the config of a checkpoint given by its path, not of ${spec}`);
      return byName;
    }
    if (configPath !== undefined) {
      if (!existsSync(configPath)) throw new StemsplitError('MODEL_NOT_FOUND', `cannot read the model config ${configPath}`);
      return this.#resolvePath(spec, configPath);
    }
    if (MODEL_CATALOG.some((m) => m.name === spec)) {
      throw new StemsplitError('MODEL_NOT_FOUND', `model ${spec} is not installed; run: stemsplit models pull ${spec}`);
    }
    return this.#resolvePath(spec);
  }

  /**
   * A model file an alias list names, by the name it goes by (its file name without the
   * extension): the name a job records, resolved again when the job runs.
   */
  #aliasFile(name: string): ModelRef | undefined {
    for (const entry of Object.values(this.#options.aliases).flat()) {
      for (const member of ensembleMembers(entry)) {
        if (!isPathSpec(member) || !existsSync(member)) continue;
        const ref = this.#resolvePath(member);
        if (ref.name === name) return ref;
      }
    }
    return undefined;
  }

  /** Whether some family takes the file for its own (a damaged one of its kind included): in a folder of models, the other files are not models. */
  isModelFile(path: string): boolean {
    return MODEL_FAMILIES.some((family) => {
      try {
        return family.claim(resolve(path)) !== undefined;
      } catch {
        return true;
      }
    });
  }

  /** A file as the first family record that claims it names it; `configPath`: the config the user named for it. */
  #resolvePath(spec: string, configPath?: string): ModelRef {
    const path = resolve(spec);
    if (!existsSync(path)) {
      refuseLinkLoop(path);
      throw new StemsplitError('MODEL_NOT_FOUND', isPathSpec(spec) ? `${spec}: no such file` : `unknown model "${spec}" (see: stemsplit models list)`);
    }
    refuseSpecialFile(path, 'model file');
    for (const family of MODEL_FAMILIES) {
      const claimed = family.claim(path, family.takesConfig ? configPath : undefined);
      if (claimed === undefined) continue;
      if (configPath !== undefined && !family.takesConfig) {
        throw new StemsplitError(
          'USAGE',
          `--model-config applies to ${MODEL_FAMILIES.filter((f) => f.takesConfig)
            .map((f) => f.takers)
            .join(', ')}; ${spec} is one of the ${family.takers}`,
        );
      }
      return refOf(family, claimed);
    }
    throw new StemsplitError('MODEL_NOT_FOUND', `${spec}: expected ${listOf(MODEL_FAMILIES.map((family) => family.files))}`);
  }

  /** Everything `models list` shows: installed models and the catalog's models not yet pulled. */
  listing(): ModelListing[] {
    // A model an alias runs as a member of its ensemble counts as that alias's model too.
    const aliasesOf = (name: string): StemModelAlias[] =>
      STEM_MODEL_ALIASES.filter((alias) => {
        try {
          const choice = this.resolveAlias(alias);
          return isEnsembleRef(choice) ? choice.members.some((member) => member.name === name) : choice.name === name;
        } catch {
          return false;
        }
      });
    // Scores are published per model file (python-audio-separator names a Demucs model by its bag's NAME.yaml).
    const row = (ref: ModelRef, path: string | null, origin: ModelOrigin, files: readonly string[] = []): ModelListing => ({
      ...ref,
      family: listedFamily(ref),
      task: taskOf(ref.name, ref.sources, ref.task),
      path,
      installed: path !== null,
      origin,
      aliases: aliasesOf(ref.name),
      int8Refused: int8Refusal(ref) ?? null,
      scores: publishedScores(files),
    });
    const rows: ModelListing[] = [];
    for (const model of MODEL_CATALOG) {
      const path = this.installedPath(model) ?? null;
      rows.push(row(catalogRef(model, ''), path, path ? 'pulled' : 'available', [...model.files, `${model.name}.yaml`]));
    }
    for (const ref of this.library()) rows.push(row(ref, ref.path, 'library', [basename(ref.path)]));
    for (const ref of this.bundled()) rows.push(row(ref, ref.path, 'bundled'));
    return rows;
  }
}

/** A claimed file as a model reference: named as the file names itself, else by its file name. */
function refOf(family: ModelFamilyRecord, claimed: ClaimedFile): ModelRef {
  return {
    name: claimed.name ?? basename(claimed.path, extname(claimed.path)),
    kind: family.id,
    path: claimed.path,
    ...(claimed.configPath !== undefined ? { configPath: claimed.configPath } : {}),
    ...(claimed.options !== undefined ? { options: claimed.options } : {}),
    sources: claimed.sources ?? [],
    description: claimed.description,
    terms: claimed.terms ?? UNKNOWN_TERMS,
    ...(claimed.card !== undefined ? { card: claimed.card } : {}),
  };
}

/** `a, b or c` */
function listOf(items: readonly string[]): string {
  return items.length <= 1 ? items.join('') : `${items.slice(0, -1).join(', ')} or ${items.at(-1) as string}`;
}

function catalogRef(model: CatalogModel, path: string): ModelRef {
  return {
    name: model.name,
    kind: model.family,
    path,
    sources: model.sources,
    description: model.description,
    terms: model.terms,
    ...(model.options ? { options: model.options } : {}),
  };
}

/** A pulled model's config, where its family keeps one (an MSST checkpoint's yaml, pulled beside it). */
function configOf(model: CatalogModel, cacheDir: string): { configPath?: string } {
  const steps = pullStepsOf(model.family);
  const configPath = steps.configPath?.(model, steps.dir(cacheDir));
  return configPath === undefined ? {} : { configPath };
}

/** A spec that names a file rather than a model (an alias list may hold either). */
export function isPathSpec(spec: string): boolean {
  return spec.includes('/') || spec.includes('\\') || /\.[a-z0-9]+$/i.test(spec);
}
