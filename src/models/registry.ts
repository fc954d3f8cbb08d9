/**
 * Which models exist, which are installed, and which one a name means.
 *
 * A model is named by the user as an API alias (`4s`, `6s`), a model name (`bundled-4s`,
 * `htdemucs`), or a path (a `.th` checkpoint, a bag `.yaml`, a `model.json` or its folder).
 * Loading is delegated to injected loaders, so this module never touches ONNX itself.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, extname, join, resolve } from 'node:path';
import { ensembleMembers } from '../config.js';
import { StemsplitError } from '../errors.js';
import type { SeparationModel } from '../separation/model.js';
import { configBeside, type MsstModelType } from '../msst/config.js';
import { refuseSpecialFile } from '../model-files/regular.js';
import type { MdxOptions } from '../mdx/options.js';
import { MODEL_CATALOG, type CatalogModel, type ModelFamily } from './catalog.js';
import { libraryDir, libraryModels, type LibraryModel } from './library.js';
import { taskOf, type Task } from './tasks.js';

export type StemModelAlias = '4s' | '6s';
/** `onnx`: a stemsplit model.json (the bundled models); the rest: the families of catalog.ts. */
export type ModelKind = 'onnx' | ModelFamily;

/** A family's settings for one run, as the user gave them; each reaches only its own family's loader. */
export interface FamilyOptions {
  /** MSST checkpoints: the model type, where the yaml alone does not tell (MSST's `--model_type`). */
  readonly modelType?: MsstModelType;
  /** MDX-Net `.onnx` models: python-audio-separator's settings (defaults in mdx/options.ts). */
  readonly mdx?: Partial<MdxOptions>;
}

export interface ModelRef {
  readonly name: string;
  readonly kind: ModelKind;
  /** `model.json` for onnx models; a `.th` or bag `.yaml` for demucs; a `.ckpt`/`.pth` for msst; a `.onnx` for mdx. */
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

/**
 * A model's family as `models list` and GET /v1/models name it: an MSST checkpoint by its model
 * type (bs_roformer, mel_band_roformer, scnet, mdx23c; `msst` where only its yaml will tell),
 * `bundled` for the models shipped inside stemsplit.
 */
export type ListedFamily = 'bundled' | 'demucs' | 'mdx' | 'msst' | MsstModelType;

export function listedFamily(ref: Pick<ModelRef, 'kind' | 'options'>): ListedFamily {
  if (ref.kind === 'onnx') return 'bundled';
  if (ref.kind === 'msst') return ref.options?.modelType ?? 'msst';
  return ref.kind;
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

/** The ensemble of `members` (already resolved), named and described by them. */
export function ensembleOf(members: readonly ModelRef[]): EnsembleRef {
  return {
    name: members.map((member) => member.name).join('+'),
    members,
    terms: members.map((member) => `${member.name}: ${member.terms}`).join('; '),
    description: `an ensemble of ${members.map((member) => member.name).join(', ')}`,
  };
}

/** One loader per kind, each handed the whole reference (path, config, options). */
export type ModelLoaders = Readonly<Record<ModelKind, (ref: ModelRef) => Promise<SeparationModel>>>;

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
  return new ModelRegistry({ bundledDir: config.bundledModelsDir, cacheDir: config.cacheDir, libraryDir: libraryDir(config.dataDir), aliases: config.modelAliases });
}

export function demucsDir(cacheDir: string): string {
  return join(cacheDir, 'demucs');
}

/**
 * Where pulled models of a family live (converted graphs sit elsewhere in the cache). MSST
 * checkpoints keep the folder they had when RoFormer was the only MSST family, so pulls made
 * then are still found.
 */
export function modelDir(cacheDir: string, family: ModelFamily): string {
  if (family === 'demucs') return demucsDir(cacheDir);
  return family === 'msst' ? join(cacheDir, 'roformer', 'checkpoints') : join(cacheDir, 'mdx');
}

const UNKNOWN_TERMS = 'not stated';

interface ManifestHead {
  name?: unknown;
  sources?: unknown;
  description?: unknown;
  terms?: unknown;
}

function readManifestRef(manifestPath: string): ModelRef {
  let head: ManifestHead;
  try {
    head = JSON.parse(readFileSync(manifestPath, 'utf8')) as ManifestHead;
  } catch (error) {
    throw new StemsplitError('MODEL_INVALID', `cannot read ${manifestPath}: ${(error as Error).message}`);
  }
  if (typeof head.name !== 'string' || !Array.isArray(head.sources)) {
    throw new StemsplitError('MODEL_INVALID', `${manifestPath} lacks a name or sources`);
  }
  const cardPath = join(dirname(manifestPath), 'MODEL_CARD.md');
  const card = existsSync(cardPath) ? cardPath : undefined;
  return {
    name: head.name,
    kind: 'onnx',
    path: manifestPath,
    sources: head.sources.map(String),
    description: typeof head.description === 'string' ? head.description : '',
    terms: typeof head.terms === 'string' ? withCardPath(head.terms, manifestPath) : UNKNOWN_TERMS,
    ...(card ? { card } : {}),
  };
}

/**
 * A manifest names a card as the repository lays it out (`models/<name>/MODEL_CARD.md`: its own, or a
 * sibling's where two models share weights), which is true only inside a clone: the card's real path
 * among the manifest's sibling folders is named instead (beside the executable's unpacked models, or
 * wherever the package is installed).
 */
function withCardPath(terms: string, manifestPath: string): string {
  const modelsDir = dirname(dirname(manifestPath));
  return terms.replace(/\bmodels\/([\w.-]+)\/MODEL_CARD\.md\b/g, (_named, model: string) => {
    const card = join(modelsDir, model, 'MODEL_CARD.md');
    return existsSync(card) ? card : 'its model card';
  });
}

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
      .map(readManifestRef)
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  /** The entry point file of a pulled catalog model, or undefined when not (fully) installed. */
  installedPath(model: CatalogModel): string | undefined {
    const dir = modelDir(this.#options.cacheDir, model.family);
    if (!model.files.every((file) => existsSync(join(dir, file)))) return undefined;
    if (model.files.length === 1 || model.family !== 'demucs') return join(dir, model.files[0] as string);
    const bag = join(dir, `${model.name}.yaml`);
    return existsSync(bag) ? bag : undefined;
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
    const ref = this.#resolvePath(model.path, false);
    return {
      ...ref,
      name: model.name,
      sources: model.stems,
      ...(model.configPath ? { configPath: model.configPath } : {}),
      ...(model.modelType ? { options: { modelType: model.modelType } } : {}),
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
    throw new StemsplitError(
      'MODEL_NOT_FOUND',
      `no installed model for ${alias} (tried ${this.#options.aliases[alias].join(', ')})`,
    );
  }

  /**
   * Resolves an alias, a model name or a path to a model; `configPath` names an MSST
   * checkpoint's yaml, `options` the family's settings for this run.
   */
  resolve(spec: string, configPath?: string, options?: FamilyOptions): ModelChoice {
    const members = ensembleMembers(spec);
    if (members.length > 1) return this.resolveEnsemble(members, options);
    if (spec === '4s' || spec === '6s') return this.resolveAlias(spec);
    return this.resolveModel(spec, configPath, options);
  }

  /**
   * The ensemble of the models `specs` name (each a name or a path, not an alias nor an
   * ensemble); `options` reach each member as its own (a family's settings reach that family).
   */
  resolveEnsemble(specs: readonly string[], options?: FamilyOptions): EnsembleRef {
    if (options?.modelType !== undefined) {
      throw new StemsplitError('USAGE', '--model-type applies to a single MSST checkpoint; in an ensemble, put each checkpoint\'s .yaml beside it');
    }
    const members = specs.map((spec) => {
      if (spec === '4s' || spec === '6s') throw new StemsplitError('USAGE', `an ensemble names its models, not the alias ${spec}`);
      return this.resolveModel(spec, undefined, options);
    });
    return ensembleOf(members);
  }

  /** One model by name or path (an alias gives its single model; an ensemble is refused here). */
  resolveModel(spec: string, configPath?: string, options?: FamilyOptions): ModelRef {
    const ref = this.#resolveSpec(spec, configPath);
    if (options?.modelType !== undefined && ref.kind !== 'msst') {
      throw new StemsplitError('USAGE', `--model-type applies to MSST checkpoints (.ckpt, .pth) only, not to ${ref.name}`);
    }
    const given = options && Object.values(options).some((value) => value !== undefined) ? options : undefined;
    return given ? { ...ref, options: { ...ref.options, ...given } } : ref;
  }

  #resolveSpec(spec: string, configPath: string | undefined): ModelRef {
    if (spec === '4s' || spec === '6s') {
      const choice = this.resolveAlias(spec);
      if (isEnsembleRef(choice)) throw new StemsplitError('USAGE', `${spec} is the ensemble ${choice.name} here; name its models one by one`);
      return choice;
    }
    const byName = this.installed().find((m) => m.name === spec) ?? this.#aliasFile(spec);
    if (byName) return byName;
    if (configPath !== undefined && !MSST_CHECKPOINT.test(spec)) {
      throw new StemsplitError('USAGE', '--model-config applies to an MSST checkpoint (.ckpt or .pth) only');
    }
    if (configPath !== undefined) {
      if (!existsSync(configPath)) throw new StemsplitError('MODEL_NOT_FOUND', `cannot read the model config ${configPath}`);
      return { ...this.#resolvePath(spec, false), configPath: resolve(configPath) };
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

  /** `withConfig` false: the caller names a RoFormer's config itself. */
  #resolvePath(spec: string, withConfig = true): ModelRef {
    const path = resolve(spec);
    if (!existsSync(path)) {
      throw new StemsplitError('MODEL_NOT_FOUND', isPathSpec(spec) ? `${spec}: no such file` : `unknown model "${spec}" (see: stemsplit models list)`);
    }
    refuseSpecialFile(path);
    if (statSync(path).isDirectory()) {
      const manifest = join(path, 'model.json');
      if (existsSync(manifest)) return readManifestRef(manifest);
      throw new StemsplitError('MODEL_NOT_FOUND', `${spec} is a folder without model.json`);
    }
    const ext = extname(path).toLowerCase();
    if (ext === '.json') return readManifestRef(path);
    if (ext === '.yaml' || ext === '.yml') refuseMsstConfig(path);
    if (ext === '.th' || ext === '.yaml' || ext === '.yml') {
      return { name: basename(path, ext), kind: 'demucs', path, sources: [], description: `Demucs checkpoint ${path}`, terms: UNKNOWN_TERMS };
    }
    if (MSST_CHECKPOINT.test(path)) {
      const ref: ModelRef = { name: basename(path, ext), kind: 'msst', path, sources: [], description: `MSST checkpoint ${path}`, terms: UNKNOWN_TERMS };
      return withConfig === false ? ref : { ...ref, configPath: configBeside(path) };
    }
    if (ext === '.onnx') {
      return { name: basename(path, ext), kind: 'mdx', path, sources: [], description: `MDX-Net model ${path}`, terms: UNKNOWN_TERMS };
    }
    throw new StemsplitError('MODEL_NOT_FOUND', `${spec}: expected a Demucs .th or bag .yaml, an MSST .ckpt/.pth (RoFormer, SCNet, MDX23C), an MDX-Net .onnx or a model.json`);
  }

  /** Everything `models list` shows: installed models and the catalog's models not yet pulled. */
  listing(): ModelListing[] {
    // A model an alias runs as a member of its ensemble counts as that alias's model too.
    const aliasesOf = (name: string): StemModelAlias[] =>
      (['4s', '6s'] as const).filter((alias) => {
        try {
          const choice = this.resolveAlias(alias);
          return isEnsembleRef(choice) ? choice.members.some((member) => member.name === name) : choice.name === name;
        } catch {
          return false;
        }
      });
    const row = (ref: ModelRef, path: string | null, origin: ModelOrigin): ModelListing => ({
      ...ref,
      family: listedFamily(ref),
      task: taskOf(ref.name, ref.sources, ref.task),
      path,
      installed: path !== null,
      origin,
      aliases: aliasesOf(ref.name),
    });
    const rows: ModelListing[] = [];
    for (const model of MODEL_CATALOG) {
      const path = this.installedPath(model) ?? null;
      rows.push(row(catalogRef(model, ''), path, path ? 'pulled' : 'available'));
    }
    for (const ref of this.library()) rows.push(row(ref, ref.path, 'library'));
    for (const ref of this.bundled()) rows.push(row(ref, ref.path, 'bundled'));
    return rows;
  }
}

function catalogRef(model: CatalogModel, path: string): ModelRef {
  return {
    name: model.name,
    kind: model.family,
    path,
    sources: model.sources,
    description: model.description,
    terms: model.terms,
    ...(model.modelType ? { options: { modelType: model.modelType } } : {}),
  };
}

/** A pulled MSST checkpoint's yaml, pulled beside it. */
function configOf(model: CatalogModel, cacheDir: string): { configPath?: string } {
  return model.family === 'msst' ? { configPath: join(modelDir(cacheDir, model.family), model.files[1] as string) } : {};
}

/** An MSST yaml's top-level sections; a Demucs bag has `models:` instead. */
const MSST_CONFIG_SECTION = /^(audio|model|training|inference)\s*:/m;
/** More than any bag or MSST yaml holds: a bigger file is neither, and is not read whole to find out. */
const MAX_YAML_PEEK_BYTES = 1 << 20;

/** A `.yaml` given as a model that is an MSST checkpoint's config: point to the checkpoint beside it. */
function refuseMsstConfig(path: string): void {
  if (statSync(path).size > MAX_YAML_PEEK_BYTES) return;
  const text = readFileSync(path, 'utf8');
  if (/^models\s*:/m.test(text) || !MSST_CONFIG_SECTION.test(text)) return;
  const stem = path.slice(0, -extname(path).length);
  const checkpoint = MSST_CHECKPOINT_EXTENSIONS.map((ext) => stem + ext).find((candidate) => existsSync(candidate));
  const hint = checkpoint ? `run its checkpoint: --model ${checkpoint}` : 'give its checkpoint (.ckpt or .pth) as --model, with --model-config for the yaml where it is not beside it';
  throw new StemsplitError('USAGE', `${path} is an MSST model config, not a model: ${hint}`);
}

/** MSST checkpoints as their trainers save them. */
const MSST_CHECKPOINT_EXTENSIONS = ['.ckpt', '.pth', '.pt', '.chpt'] as const;
const MSST_CHECKPOINT = new RegExp(`(${MSST_CHECKPOINT_EXTENSIONS.map((ext) => `\\${ext}`).join('|')})$`, 'i');

/** A spec that names a file rather than a model (an alias list may hold either). */
export function isPathSpec(spec: string): boolean {
  return spec.includes('/') || spec.includes('\\') || /\.[a-z0-9]+$/i.test(spec);
}

/** Loads models once and keeps them: loading converts and allocates, splitting reuses. */
export class ModelCache {
  readonly #loaders: ModelLoaders;
  readonly #loaded = new Map<string, Promise<SeparationModel>>();

  constructor(loaders: ModelLoaders) {
    this.#loaders = loaders;
  }

  load(ref: ModelRef): Promise<SeparationModel> {
    const key = `${ref.kind}:${ref.path}:${ref.configPath ?? ''}:${JSON.stringify(ref.options ?? {})}`;
    let model = this.#loaded.get(key);
    if (!model) {
      model = this.#loaders[ref.kind](ref);
      model.catch(() => this.#loaded.delete(key));
      this.#loaded.set(key, model);
    }
    return model;
  }

  async disposeAll(): Promise<void> {
    const models = [...this.#loaded.values()];
    this.#loaded.clear();
    await Promise.all(models.map(async (m) => (await m.catch(() => undefined))?.dispose()));
  }
}

