/**
 * `models pull` and `models remove`: a catalog model's files fetched (net/download.ts: resumable,
 * hash-checked) or copied from disk (`--file`) into its family's folder of the cache, then the
 * family's own install steps (a Demucs bag's yaml, UVR's model data), as its record says
 * (contract/family.ts). One pull or remove at a time per cache dir.
 */
import { copyFile, mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { sha256File } from '../model-files/sha256.js';
import { StemsplitError } from '../errors.js';
import { checkedUrl, downloadVerified, fileUrl, sizeOf, writeAtomically, type DownloadOptions, type DownloadResult } from '../net/download.js';
import { takeProcessLock } from '../process-lock.js';
import type { CatalogModel } from './catalog.js';
import { pullStepsOf } from './pulled.js';

export type { DownloadProgress, DownloadResult } from '../net/download.js';

export interface PullOptions extends DownloadOptions {
  readonly cacheDir: string;
  /** Folder URL the checkpoint files are fetched from (default: the official release). */
  readonly baseUrl?: string | undefined;
  /** Told before each file: its position, and whether it is already installed. */
  readonly onFile?: ((file: string, index: number, count: number, alreadyInstalled: boolean) => void) | undefined;
  /** Files already on disk to install instead of downloading them (`models pull --file`), by the catalog file each stands for. */
  readonly localFiles?: ReadonlyMap<string, string> | undefined;
}

export interface PullResult {
  readonly name: string;
  /** The model's entry point: its `.th`, or the bag `.yaml`. */
  readonly path: string;
  readonly downloaded: readonly DownloadResult[];
  /** Files that were already installed and not fetched again. */
  readonly present: readonly string[];
}

/**
 * `models pull --file`: a file already on disk, copied to `<file>.partial` and held to the same
 * hash as a download of it before it is renamed into place (the original is left as it is).
 */
export async function installVerified(source: string, destination: string, expectedSha: string | undefined): Promise<DownloadResult> {
  const file = basename(destination);
  const partial = `${destination}.partial`;
  try {
    await copyFile(source, partial);
  } catch (error) {
    throw new StemsplitError(
      'IO_ERROR',
      `cannot read ${source}: ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (error as Error).message}`,
      { cause: error },
    );
  }
  const actual = await sha256File(partial);
  if (expectedSha !== undefined && !actual.startsWith(expectedSha)) {
    await rm(partial, { force: true });
    throw new StemsplitError(
      'MODEL_INVALID',
      `${source} has SHA-256 ${actual.slice(0, 8)}…, not ${expectedSha.slice(0, 8)}… (the catalog's ${file}); nothing was installed`,
    );
  }
  if (expectedSha === undefined) await writeAtomically(`${destination}.sha256`, `${actual}  ${file}\n`);
  await rename(partial, destination);
  const bytes = (await stat(destination)).size;
  return { path: destination, bytes, contentType: undefined, filename: basename(source), resumedFrom: 0, sha256: actual };
}

/** Which catalog file each `--file` stands for: the one of the same name, else the next file not yet given. */
export function matchLocalFiles(model: CatalogModel, paths: readonly string[]): Map<string, string> {
  const matched = new Map<string, string>();
  const unnamed: string[] = [];
  for (const path of paths) {
    const file = model.files.find((candidate) => candidate === basename(path));
    if (file !== undefined && !matched.has(file)) matched.set(file, path);
    else unnamed.push(path);
  }
  for (const path of unnamed) {
    const file = model.files.find((candidate) => !matched.has(candidate));
    if (file === undefined)
      throw new StemsplitError('USAGE', `--file ${path}: ${model.name} has ${model.files.length} file(s) (${model.files.join(', ')}), all given already`);
    matched.set(file, path);
  }
  return matched;
}

/**
 * One pull or remove at a time per cache dir. Two pulls of one file write the same `.partial`:
 * one could truncate the other's, or, resuming, append to the inode the other had already
 * verified and renamed into place, so an installed checkpoint could outgrow its checked hash.
 */
async function withModelsLock<T>(cacheDir: string, work: () => Promise<T>): Promise<T> {
  const lock = takeProcessLock(
    join(cacheDir, 'models.lock'),
    `another "stemsplit models pull" or "models remove" is working in ${cacheDir}; let it finish, then run this again`,
  );
  try {
    return await work();
  } finally {
    lock.release();
  }
}

/** Fetches every missing file of a catalog model, then (for a bag) writes its yaml last. */
export async function pullModel(model: CatalogModel, options: PullOptions): Promise<PullResult> {
  return withModelsLock(options.cacheDir, () => pullUnlocked(model, options));
}

async function pullUnlocked(model: CatalogModel, options: PullOptions): Promise<PullResult> {
  const steps = pullStepsOf(model.family);
  const dir = steps.dir(options.cacheDir);
  await mkdir(dir, { recursive: true });
  const downloaded: DownloadResult[] = [];
  const present: string[] = [];
  for (const [index, file] of model.files.entries()) {
    const destination = join(dir, file);
    const installed = (await sizeOf(destination)) > 0;
    options.onFile?.(file, index, model.files.length, installed);
    if (installed) {
      present.push(file);
      continue;
    }
    const source = sourceOf(model, file, options.baseUrl);
    const local = options.localFiles?.get(file);
    downloaded.push(
      local === undefined ? await downloadVerified(source.url, destination, source.sha256, options) : await installVerified(local, destination, source.sha256),
    );
  }
  const path = steps.install ? await steps.install(model, dir, downloaded.length > 0) : join(dir, model.files[0] as string);
  return { name: model.name, path, downloaded, present };
}

/** Where a catalog file comes from and the hash it must have: its own address (a mirror's, with --base-url), or its family's (Demucs' release folder, the hash prefix in the name). */
function sourceOf(model: CatalogModel, file: string, baseUrl: string | undefined): { url: string; sha256: string | undefined } {
  const download = model.downloads?.find((d) => d.file === file);
  if (download === undefined) {
    const steps = pullStepsOf(model.family);
    if (!steps.defaultUrl) throw new StemsplitError('MODEL_INVALID', `the catalog gives no address for ${model.name}'s ${file}`);
    return { url: checkedUrl(steps.defaultUrl(file, baseUrl)).href, sha256: steps.expectedSha?.(file) };
  }
  return { url: baseUrl === undefined ? download.url : fileUrl(baseUrl, file), sha256: download.sha256 };
}

/** Deletes a pulled model: its bag yaml, checkpoints, partial downloads and converted graphs. Returns the paths removed. */
export async function removeModel(model: CatalogModel, cacheDir: string): Promise<string[]> {
  return withModelsLock(cacheDir, () => removeUnlocked(model, cacheDir));
}

async function removeUnlocked(model: CatalogModel, cacheDir: string): Promise<string[]> {
  const steps = pullStepsOf(model.family);
  const dir = steps.dir(cacheDir);
  let entries: string[];
  try {
    entries = await readdir(dir);
  } catch {
    return [];
  }
  const conversions = (await steps.conversions?.(model, dir, cacheDir)) ?? [];
  const extra = steps.extraFiles?.(model) ?? [];
  const doomed = entries.filter(
    (entry) => extra.includes(entry) || model.files.some((file) => entry === file || entry === `${file}.partial` || entry === `${file}.sha256`),
  );
  // What the install wrote goes first (a bag's yaml), so an interrupted removal never leaves a model that looks installed.
  doomed.sort((a, b) => Number(extra.includes(b)) - Number(extra.includes(a)));
  const removed: string[] = [];
  for (const path of [...doomed.map((entry) => join(dir, entry)), ...conversions]) {
    await rm(path, { recursive: true, force: true });
    removed.push(path);
  }
  return removed;
}
