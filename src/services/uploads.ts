/**
 * Upload reservations and the transfer of their bytes. The bytes stream to a `.partial` file,
 * counted against the reserved length; only a transfer of exactly that length is renamed into
 * place and marked complete, so no partial file is ever accepted.
 */
import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { diskSize, freeBytesAt } from '../disk-space.js';
import { StemsplitError } from '../errors.js';
import type { DataStore, Principal, Upload } from '../store/index.js';

export interface ReserveInput {
  readonly filename: string;
  readonly contentType: string;
  readonly contentLength: number;
}

export interface Reservation {
  readonly upload: Upload;
  readonly token: string;
}

export class UploadService {
  readonly #data: DataStore;
  readonly #ttlSeconds: number;

  constructor(data: DataStore, ttlSeconds: number) {
    this.#data = data;
    this.#ttlSeconds = ttlSeconds;
  }

  /** Refuses (507) a file the disk cannot hold now, whatever the upload limit allows. */
  async reserve(principal: Principal, input: ReserveInput): Promise<Reservation> {
    const free = await freeBytesAt(this.#data.layout.absolute('uploads'));
    if (free && free.bytes < input.contentLength) {
      throw new StemsplitError(
        'STORAGE_FAILED',
        `the server has no room for this file: it is ${diskSize(input.contentLength)} and ${free.at} has ${diskSize(free.bytes)} free`,
      );
    }
    return this.#data.uploads.create({ ...principal, ...input, ttlSeconds: this.#ttlSeconds });
  }

  /**
   * Receives the bytes of a reservation. Throws VALIDATION_ERROR (422) for an unknown or
   * expired reservation, a wrong token, a transfer already done or in progress, or a length
   * other than the reserved one; NOT_FOUND when the id is not a reservation at all.
   */
  async receive(uploadId: string, token: string | undefined, body: Readable, declaredLength: number | undefined): Promise<Upload> {
    const upload = await this.#data.uploads.get(uploadId);
    if (!upload) throw new StemsplitError('NOT_FOUND', `no upload reservation ${uploadId}`);
    if (!token || !this.#data.uploads.tokenMatches(upload, token)) {
      throw new StemsplitError('UNAUTHORIZED', `missing or wrong upload token for ${uploadId}`);
    }
    if (this.#data.uploads.isExpired(upload)) throw new StemsplitError('VALIDATION_ERROR', `upload reservation ${uploadId} has expired`);
    if (declaredLength !== undefined && declaredLength !== upload.contentLength) {
      throw new StemsplitError('VALIDATION_ERROR', `Content-Length ${declaredLength} does not match the reserved contentLength ${upload.contentLength}`);
    }
    if (!(await this.#data.uploads.beginTransfer(uploadId))) {
      throw new StemsplitError('VALIDATION_ERROR', `upload ${uploadId} was already received or is being received`);
    }
    const destination = this.#data.layout.absolute(this.#data.layout.uploadFile(uploadId));
    const partial = `${destination}.partial`;
    try {
      const received = await writeCapped(body, partial, upload.contentLength);
      if (received !== upload.contentLength) {
        throw new StemsplitError('VALIDATION_ERROR', `received ${received} bytes, expected contentLength ${upload.contentLength}`);
      }
      await rename(partial, destination);
      await this.#data.uploads.completeTransfer(uploadId);
      return { ...upload, status: 'complete' };
    } catch (error) {
      await rm(partial, { force: true });
      await this.#data.uploads.abortTransfer(uploadId).catch(() => undefined);
      throw toUploadError(error);
    }
  }
}

class TooLarge extends Error {}

async function writeCapped(body: Readable, path: string, limit: number): Promise<number> {
  let received = 0;
  const counted = async function* (source: AsyncIterable<Buffer>) {
    for await (const chunk of source) {
      received += chunk.length;
      if (received > limit) throw new TooLarge();
      yield chunk;
    }
  };
  await pipeline(body, counted, createWriteStream(path, { flags: 'w' }));
  return received;
}

function toUploadError(error: unknown): StemsplitError {
  if (error instanceof StemsplitError) return error;
  if (error instanceof TooLarge) return new StemsplitError('VALIDATION_ERROR', 'the upload is larger than the reserved contentLength');
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'ENOSPC' || code === 'EDQUOT') {
    return new StemsplitError('STORAGE_FAILED', 'the server ran out of disk space while receiving the upload; nothing was kept');
  }
  return new StemsplitError('VALIDATION_ERROR', `the upload was interrupted: ${(error as Error).message}`);
}
