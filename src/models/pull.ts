/**
 * `models pull` and `models remove`: a catalog model's files fetched into its family's folder of
 * the cache, then the family's own install steps (a Demucs bag's yaml, UVR's model data), as its
 * record says (models/family.ts).
 *
 * A download goes to `<file>.partial`; an interrupted one resumes from that file's size with
 * `Range: bytes=N-`. The complete file must hash to the SHA-256 prefix in its name
 * (`<signature>-<sha8>.th`) before it is renamed into place, so a present `.th` is always whole
 * and genuine. Files come through the shared outbound client (src/net) in its trusted mode: the
 * URL is configuration (the catalog, or the operator's mirror, which may be on the LAN), not
 * user input, so only its scheme is checked.
 */
import { createHash } from 'node:crypto';
import { copyFile, mkdir, open, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { basename, dirname, join } from 'node:path';
import { sha256File } from '../onnx/cache.js';
import { StemsplitError } from '../errors.js';
import { filenameOf, guardedRequest, TRUSTED, type DownloadResult } from '../net/fetch.js';
import { takeProcessLock } from '../process-lock.js';
import type { CatalogModel } from './catalog.js';
import { pullStepsOf } from './registry.js';

export interface DownloadProgress {
  readonly file: string;
  /** Bytes of the file on disk so far, a resumed part included. */
  readonly received: number;
  /** The file's full size, when the server says it. */
  readonly total: number | undefined;
}

export interface DownloadOptions {
  readonly onProgress?: ((progress: DownloadProgress) => void) | undefined;
  /** A connection silent this long is given up (the partial file stays for a resume). */
  readonly idleTimeoutMs?: number | undefined;
}

export type { DownloadResult } from '../net/fetch.js';

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

const MAX_REDIRECTS = 5;
const DEFAULT_IDLE_TIMEOUT_MS = 30_000;
function failed(message: string, cause?: unknown): StemsplitError {
  return new StemsplitError('DOWNLOAD_FAILED', message, cause === undefined ? {} : { cause });
}

async function writeAtomically(path: string, text: string): Promise<void> {
  const temporary = `${path}.tmp-${process.pid}`;
  await writeFile(temporary, text);
  await rename(temporary, path);
}

async function sizeOf(path: string): Promise<number> {
  try {
    return (await stat(path)).size;
  } catch {
    return 0;
  }
}

function checkedUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw failed(`not a URL: ${raw}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw failed(`only http and https downloads are allowed, got ${url.protocol} (${raw})`);
  return url;
}

/** The URL of `file` under a folder URL (a missing trailing slash is added). */
export function fileUrl(baseUrl: string, file: string): string {
  const folder = checkedUrl(baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`);
  return new URL(file, folder).href;
}

/** One GET through the shared client in its trusted mode (the catalog's hosts or the operator's mirror), redirects followed. */
async function get(rawUrl: string, headers: Record<string, string>, idleTimeoutMs: number): Promise<IncomingMessage> {
  checkedUrl(rawUrl);
  try {
    return await guardedRequest(rawUrl, { ...TRUSTED, headers, idleTimeoutMs, maxRedirects: MAX_REDIRECTS });
  } catch (error) {
    throw failed(`cannot fetch ${rawUrl}: ${(error as Error).message}`, error);
  }
}

interface Continuation {
  /** Where the body starts in the file: the resume offset, or 0 when the server sent it all. */
  readonly start: number;
  readonly total: number | undefined;
}

/** Reads what a response means for a download that asked to resume at `offset`. */
function continuation(response: IncomingMessage, offset: number, url: string): Continuation {
  const status = response.statusCode ?? 0;
  const length = Number(response.headers['content-length'] ?? Number.NaN);
  if (status === 200) return { start: 0, total: Number.isFinite(length) ? length : undefined };
  if (status === 206) {
    const range = /^bytes (\d+)-\d+\/(\d+|\*)$/.exec(response.headers['content-range'] ?? '');
    if (!range || Number(range[1]) !== offset) {
      throw failed(`${url} answered a range other than bytes=${offset}- (${response.headers['content-range'] ?? 'no Content-Range'})`);
    }
    return { start: offset, total: range[2] === '*' ? undefined : Number(range[2]) };
  }
  throw failed(`HTTP ${status} ${response.statusMessage ?? ''} fetching ${url}`);
}

/** A 416 saying `bytes *\/N` where N is what we hold: the partial file is already complete. */
function alreadyComplete(response: IncomingMessage, offset: number): boolean {
  const total = /^bytes \*\/(\d+)$/.exec(response.headers['content-range'] ?? '');
  return total !== null && Number(total[1]) === offset;
}

async function appendBody(response: IncomingMessage, partial: string, from: Continuation, file: string, options: DownloadOptions): Promise<number> {
  const handle = await open(partial, from.start === 0 ? 'w' : 'a');
  let received = from.start;
  try {
    for await (const chunk of response) {
      await handle.write(chunk as Buffer);
      received += (chunk as Buffer).length;
      options.onProgress?.({ file, received, total: from.total });
    }
  } catch (error) {
    throw failed(`download of ${file} interrupted after ${received} bytes (${(error as Error).message}); run the command again to resume`, error);
  } finally {
    await handle.close();
  }
  if (from.total !== undefined && received !== from.total) {
    throw failed(`download of ${file} ended after ${received} of ${from.total} bytes; run the command again to resume`);
  }
  return received;
}

/**
 * Downloads `url` to `destination`, resuming `<destination>.partial` when one is there, and
 * renames it into place once its SHA-256 starts with `expectedSha` (a full hash or the 8-digit
 * prefix Demucs names carry; undefined where none is published: the hash is only recorded).
 * A mismatching file is deleted, so the next attempt starts afresh.
 */
export async function downloadVerified(url: string, destination: string, expectedSha: string | undefined, options: DownloadOptions = {}): Promise<DownloadResult> {
  const file = basename(destination);
  const partial = `${destination}.partial`;
  const offset = await sizeOf(partial);
  const response = await get(url, offset > 0 ? { range: `bytes=${offset}-` } : {}, options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS);
  let resumedFrom = offset;
  let bytes = offset;
  const contentType = response.headers['content-type'];
  if (offset > 0 && response.statusCode === 416) {
    response.resume();
    if (!alreadyComplete(response, offset)) {
      // The partial file is longer than the file now served: it is not a prefix of it.
      await rm(partial, { force: true });
      return downloadVerified(url, destination, expectedSha, options);
    }
  } else {
    let from: Continuation;
    try {
      from = continuation(response, offset, url);
    } catch (error) {
      response.resume();
      throw error;
    }
    resumedFrom = from.start;
    bytes = await appendBody(response, partial, from, file, options);
  }
  const actual = await sha256File(partial);
  if (expectedSha !== undefined && !actual.startsWith(expectedSha)) {
    await rm(partial, { force: true });
    throw failed(`${file} from ${url} has SHA-256 ${actual.slice(0, 8)}…, expected ${expectedSha.slice(0, 8)}…; the file was deleted`);
  }
  if (expectedSha === undefined) await writeAtomically(`${destination}.sha256`, `${actual}  ${file}\n`);
  await rename(partial, destination);
  return { path: destination, bytes, contentType, filename: filenameOf(url), resumedFrom, sha256: actual };
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
    throw new StemsplitError('IO_ERROR', `cannot read ${source}: ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (error as Error).message}`, { cause: error });
  }
  const actual = await sha256File(partial);
  if (expectedSha !== undefined && !actual.startsWith(expectedSha)) {
    await rm(partial, { force: true });
    throw new StemsplitError('MODEL_INVALID', `${source} has SHA-256 ${actual.slice(0, 8)}…, not ${expectedSha.slice(0, 8)}… (the catalog's ${file}); nothing was installed`);
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
    if (file === undefined) throw new StemsplitError('USAGE', `--file ${path}: ${model.name} has ${model.files.length} file(s) (${model.files.join(', ')}), all given already`);
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
    downloaded.push(local === undefined ? await downloadVerified(source.url, destination, source.sha256, options) : await installVerified(local, destination, source.sha256));
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
  const doomed = entries.filter((entry) => extra.includes(entry) || model.files.some((file) => entry === file || entry === `${file}.partial` || entry === `${file}.sha256`));
  // What the install wrote goes first (a bag's yaml), so an interrupted removal never leaves a model that looks installed.
  doomed.sort((a, b) => Number(extra.includes(b)) - Number(extra.includes(a)));
  const removed: string[] = [];
  for (const path of [...doomed.map((entry) => join(dir, entry)), ...conversions]) {
    await rm(path, { recursive: true, force: true });
    removed.push(path);
  }
  return removed;
}
