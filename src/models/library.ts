/**
 * The data dir's model library: checkpoints users bring (`stemsplit models add FILE`), each kept
 * under a name in `<data-dir>/models/<name>/` with its companion files (an MSST yaml, UVR's
 * `NAME.json`, a Demucs bag's members) and `library.json`, which records where it came from,
 * how it was installed and its terms. The registry lists these beside the catalog's and the
 * bundled models, so `split --model NAME`, `serve` and the API all run them by name.
 *
 * A file is copied, or with `link` hard-linked: a hard link is the same file under a second
 * name, so the original may move or be deleted and the library's copy stays whole (but editing
 * the original in place changes it too). A symlink would break when the original moves.
 */
import { copyFileSync, existsSync, linkSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, extname, join } from 'node:path';
import { StemsplitError } from '../errors.js';
import { isStemModelAlias } from './aliases.js';
import { TASKS, type Task } from './tasks.js';

/** What `library.json` records of one added model. */
export interface LibraryEntry {
  readonly name: string;
  /** The file the model is run from, inside its folder. */
  readonly file: string;
  /** An MSST checkpoint's yaml, inside its folder. */
  readonly config?: string;
  /** Every file that was added, inside its folder (the model file first). */
  readonly files: readonly string[];
  /** The stems it writes, as loading it found them when it was added. */
  readonly stems: readonly string[];
  readonly terms: string;
  /** Set by `models add --task`; otherwise told from the stems. */
  readonly task?: Task;
  /** Where the files came from (absolute), and whether they were copied or hard-linked. */
  readonly from: string;
  readonly installedBy: 'copy' | 'link';
  readonly addedAt: string;
}

/** A library entry with the absolute paths the registry resolves. */
export interface LibraryModel extends LibraryEntry {
  readonly dir: string;
  readonly path: string;
  readonly configPath?: string;
}

const ENTRY_FILE = 'library.json';
/** Names users type and URLs carry: no separators, no `+` (it joins an ensemble), not an alias. */
const LIBRARY_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export function libraryDir(dataDir: string): string {
  return join(dataDir, 'models');
}

export function checkLibraryName(name: string): string {
  if (!LIBRARY_NAME.test(name) || isStemModelAlias(name)) {
    throw new StemsplitError(
      'USAGE',
      `"${name}" cannot name a model: use 1-64 letters, digits, ".", "_" or "-" (not 4s or 6s), starting with a letter or digit`,
    );
  }
  return name;
}

/** Every model in the library, by name; a folder whose `library.json` is unreadable is skipped (it is being written, or was damaged). */
export function libraryModels(dir: string): LibraryModel[] {
  if (!existsSync(dir)) return [];
  const models: LibraryModel[] = [];
  for (const name of readdirSync(dir).sort()) {
    const model = readEntry(join(dir, name));
    if (model) models.push(model);
  }
  return models;
}

function readEntry(folder: string): LibraryModel | undefined {
  let entry: LibraryEntry;
  try {
    entry = JSON.parse(readFileSync(join(folder, ENTRY_FILE), 'utf8')) as LibraryEntry;
  } catch {
    return undefined;
  }
  if (typeof entry.name !== 'string' || typeof entry.file !== 'string' || basename(entry.file) !== entry.file) return undefined;
  if (entry.config !== undefined && basename(entry.config) !== entry.config) return undefined;
  const task = entry.task !== undefined && TASKS.includes(entry.task) ? { task: entry.task } : {};
  return {
    ...entry,
    ...task,
    stems: Array.isArray(entry.stems) ? entry.stems.map(String) : [],
    terms: typeof entry.terms === 'string' ? entry.terms : 'not stated',
    dir: folder,
    path: join(folder, entry.file),
    ...(entry.config ? { configPath: join(folder, entry.config) } : {}),
  };
}

export interface AddedFiles {
  /** The model file, then its companions (yaml, model data, bag members), as absolute paths. */
  readonly files: readonly string[];
  /** Which of `files` is the MSST yaml, if any. */
  readonly config?: string;
}

export interface AddOptions {
  readonly name: string;
  readonly terms: string;
  readonly task?: Task;
  readonly link: boolean;
  readonly now: Date;
}

/** What loading a staged model found out, recorded in its entry. */
export interface VerifiedModel {
  readonly stems: readonly string[];
}

/**
 * Puts the files into `<dir>/.<name>.adding-<pid>/`, then renames it into place, so a library
 * never shows a half-copied model. `verify` runs on the staged copy (it loads the model); a
 * refusal leaves nothing behind.
 */
export async function addToLibrary(
  dir: string,
  added: AddedFiles,
  options: AddOptions,
  verify: (model: LibraryModel) => Promise<VerifiedModel>,
): Promise<LibraryModel> {
  const name = checkLibraryName(options.name);
  const target = join(dir, name);
  if (existsSync(target))
    throw new StemsplitError(
      'USAGE',
      `the library already has a model named ${name}; remove it first (stemsplit models remove ${name}) or add this one with --name`,
    );
  const staging = join(dir, `.${name}.adding-${process.pid}`);
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  try {
    for (const file of added.files) install(file, join(staging, basename(file)), options.link);
    const main = basename(added.files[0] as string);
    const entry: LibraryEntry = {
      name,
      file: main,
      ...(added.config ? { config: basename(added.config) } : {}),
      files: added.files.map((file) => basename(file)),
      stems: [],
      terms: options.terms,
      ...(options.task ? { task: options.task } : {}),
      from: dirname(added.files[0] as string),
      installedBy: options.link ? 'link' : 'copy',
      addedAt: options.now.toISOString(),
    };
    const entryPath = join(staging, ENTRY_FILE);
    writeFileSync(entryPath, `${JSON.stringify(entry, null, 2)}\n`);
    const verified = await verify(readEntry(staging) as LibraryModel);
    writeFileSync(entryPath, `${JSON.stringify({ ...entry, ...verified }, null, 2)}\n`);
    renameSync(staging, target);
    return readEntry(target) as LibraryModel;
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

function install(from: string, to: string, link: boolean): void {
  if (!link) {
    copyFileSync(from, to);
    return;
  }
  try {
    linkSync(from, to);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === 'EXDEV' ? 'it is on another file system than the data dir' : `the file system refused (${code ?? 'unknown error'})`;
    throw new StemsplitError('IO_ERROR', `cannot hard-link ${from}: ${why}; add it without --link to copy it`, { cause: error });
  }
}

/** Removes a library model's folder; false when the library has no such model. */
export function removeFromLibrary(dir: string, name: string): boolean {
  const folder = join(dir, name);
  if (!LIBRARY_NAME.test(name) || !existsSync(join(folder, ENTRY_FILE))) return false;
  rmSync(folder, { recursive: true, force: true });
  return true;
}

/** The name a file goes by when `--name` is not given: its file name without the extension. */
export function defaultModelName(file: string): string {
  return basename(file, extname(file));
}

/** Refuses what is not a plain file before anything opens it (a FIFO would block, a device never end). */
export function checkPlainFile(path: string, what: string): void {
  let stats;
  try {
    stats = statSync(path);
  } catch {
    throw new StemsplitError('MODEL_NOT_FOUND', `${what} ${path}: no such file`);
  }
  if (!stats.isFile()) throw new StemsplitError('MODEL_INVALID', `${what} ${path} is not a regular file`);
}
