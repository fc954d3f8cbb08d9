/**
 * `models add`: a user's model file into the library. The registry tells its family from the
 * file (as `split --model FILE` would), its companion files are gathered, and the staged copy
 * is loaded once with the real loader (the graph converted and cached, its weights' shapes
 * checked) before it is put in place, so a model that cannot run is refused at once, in one line.
 */
import { basename, dirname, join } from 'node:path';
import { isStemsplitError, StemsplitError } from '../errors.js';
import { familyById } from './families.js';
import { addToLibrary, checkPlainFile, defaultModelName, type AddedFiles, type LibraryModel, type VerifiedModel } from './library.js';
import type { ModelLoader, ModelRef, ModelRegistry } from './registry.js';
import type { Task } from './tasks.js';

export interface AddModelOptions {
  readonly name?: string | undefined;
  readonly config?: string | undefined;
  readonly terms?: string | undefined;
  readonly task?: Task | undefined;
  readonly link?: boolean | undefined;
}

export async function addModel(registry: ModelRegistry, libraryDir: string, file: string, options: AddModelOptions, load: ModelLoader): Promise<LibraryModel> {
  checkPlainFile(file, 'model file');
  if (options.config !== undefined) checkPlainFile(options.config, '--config');
  const ref = refOf(registry, file, options.config);
  const added = companionsOf(ref);
  return addToLibrary(
    libraryDir,
    added,
    {
      name: options.name ?? defaultModelName(file),
      terms: options.terms ?? 'not stated',
      ...(options.task ? { task: options.task } : {}),
      link: options.link === true,
      now: new Date(),
    },
    (staged) => verify(registry, staged, load, added.files),
  );
}

/** The file as a model reference; `--config` names an MSST checkpoint's yaml, and nothing else takes one. */
function refOf(registry: ModelRegistry, file: string, config: string | undefined): ModelRef {
  try {
    return registry.resolveModel(file, config);
  } catch (error) {
    if (isStemsplitError(error)) throw new StemsplitError(error.code, error.message.replace('--model-config', '--config'), { cause: error });
    throw error;
  }
}

/**
 * The files `file`'s model runs with besides itself (its config, a Demucs bag's members), or none
 * where the registry does not take it as a model: what `models add FOLDER` does not add as models of their own.
 */
export function companionFilesOf(registry: ModelRegistry, file: string): readonly string[] {
  try {
    return companionsOf(registry.resolveModel(file)).files.slice(1);
  } catch {
    return [];
  }
}

/** The model file first, then what it runs with: its config, and what its family names (UVR's `NAME.json`, a Demucs bag's members). */
function companionsOf(ref: ModelRef): AddedFiles {
  const files = [ref.path];
  if (ref.configPath !== undefined) files.push(ref.configPath);
  for (const file of familyById(ref.kind).companions(ref)) if (!files.includes(file)) files.push(file);
  const names = files.map((path) => basename(path));
  const clash = names.find((name, index) => names.indexOf(name) !== index);
  if (clash !== undefined) throw new StemsplitError('USAGE', `two of the model's files are named ${clash}; rename one`);
  return { files, ...(ref.configPath !== undefined ? { config: ref.configPath } : {}) };
}

/** Loads the staged copy with the real loader: the stems it writes. A refusal names the user's files (`originals`), not their staged copies. */
async function verify(registry: ModelRegistry, staged: LibraryModel, load: ModelLoader, originals: readonly string[]): Promise<VerifiedModel> {
  let model;
  try {
    model = await load(registry.resolveModel(staged.path, staged.configPath));
  } catch (error) {
    const told = isStemsplitError(error)
      ? error
      : new StemsplitError('MODEL_INVALID', `${basename(staged.path)} cannot be run: ${(error as Error).message}`, { cause: error });
    throw new StemsplitError(told.code, namingOriginals(told.message, dirname(staged.path), originals), { cause: error });
  }
  const stems = model.sources.map((stem) => stem.toLowerCase());
  await model.dispose();
  return { stems };
}

/** `message` with each staged copy's path (in `staging`, under the original's name) replaced by the original's: the staging folder is gone once the add is refused. */
function namingOriginals(message: string, staging: string, originals: readonly string[]): string {
  return originals.reduce((told, original) => told.split(join(staging, basename(original))).join(original), message);
}
