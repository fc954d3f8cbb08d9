/**
 * What the schemas (schemas.ts) cannot say: reading a bounded JSON body, the Idempotency-Key
 * header, and the cross-field checks of an uploaded_file input. Each failure is a 422
 * VALIDATION_ERROR whose message names the field.
 */
import type { Context } from 'hono';
import { StemsplitError } from '../errors.js';
import { storageKeyOf, uploadPath } from './paths.js';

type Json = Record<string, unknown>;

function invalid(message: string): StemsplitError {
  return new StemsplitError('VALIDATION_ERROR', message);
}

/** Reads the body as JSON, at most `maxBytes`, and requires an object. */
export async function readJsonObject(c: Context, maxBytes: number): Promise<{ value: Json; raw: string }> {
  const declared = Number(c.req.header('content-length') ?? NaN);
  if (declared > maxBytes) throw invalid(`request body is larger than ${maxBytes} bytes`);
  const body = c.req.raw.body;
  if (!body) throw invalid('request body must be a JSON object');
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > maxBytes) throw invalid(`request body is larger than ${maxBytes} bytes`);
    chunks.push(chunk);
  }
  const raw = Buffer.concat(chunks).toString('utf8');
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw invalid('request body is not valid JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid('request body must be a JSON object');
  return { value: value as Json, raw };
}

/** A client's file name is only ever shown back, never used as a path: keep its last segment. */
export function baseName(filename: string): string {
  const last = filename.split(/[\\/]/).pop() ?? '';
  return last.trim() || 'audio';
}

/**
 * An uploaded_file input names its upload three ways; the URL and key must be the ones this
 * server handed out for that id (any origin and prefix: clients may come through a proxy).
 */
export function checkUploadReference(input: { uploadId: string; fileUrl: string; storageKey: string }): void {
  const invalid = (why: string) => new StemsplitError('VALIDATION_ERROR', `input.uploadId ${input.uploadId}: ${why}`);
  if (input.storageKey !== storageKeyOf(input.uploadId)) throw invalid(`storageKey does not match (expected ${storageKeyOf(input.uploadId)})`);
  if (!urlPath(input.fileUrl)?.endsWith(uploadPath(input.uploadId))) throw invalid('fileUrl does not match the upload');
}

function urlPath(raw: string): string | undefined {
  try {
    return new URL(raw).pathname;
  } catch {
    return undefined;
  }
}

export function parseIdempotencyKey(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  if (header.length === 0 || header.length > 128) throw invalid('Idempotency-Key must be 1 to 128 characters');
  return header;
}
