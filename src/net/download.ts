/**
 * A resumable, verified download of one file: it goes to `<file>.partial`, an interrupted one
 * resumes from that file's size with `Range: bytes=N-`, and the complete file must hash to the
 * SHA-256 (or the published prefix of it) it is expected to have before it is renamed into
 * place, so a present file is always whole and genuine. Through the shared outbound client in
 * its trusted mode: the URL is configuration (a catalog, or the operator's mirror, which may be
 * on the LAN), not user input, so only its scheme is checked.
 */
import { open, rename, rm, stat, writeFile } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { basename } from 'node:path';
import { StemsplitError } from '../errors.js';
import { sha256File } from '../model-files/sha256.js';
import { filenameOf, guardedRequest, TRUSTED, type DownloadResult } from './fetch.js';

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

export type { DownloadResult } from './fetch.js';

const MAX_REDIRECTS = 5;
const DEFAULT_IDLE_TIMEOUT_MS = 30_000;
function failed(message: string, cause?: unknown): StemsplitError {
  return new StemsplitError('DOWNLOAD_FAILED', message, cause === undefined ? {} : { cause });
}

export async function writeAtomically(path: string, text: string): Promise<void> {
  const temporary = `${path}.tmp-${process.pid}`;
  await writeFile(temporary, text);
  await rename(temporary, path);
}

export async function sizeOf(path: string): Promise<number> {
  try {
    return (await stat(path)).size;
  } catch {
    return 0;
  }
}

export function checkedUrl(raw: string): URL {
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
export async function downloadVerified(
  url: string,
  destination: string,
  expectedSha: string | undefined,
  options: DownloadOptions = {},
): Promise<DownloadResult> {
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
