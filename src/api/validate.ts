/**
 * Request bodies are checked here, by hand, into precise types. Each failure is a 422
 * VALIDATION_ERROR whose message names the field.
 */
import type { Context } from 'hono';
import { StemsplitError } from '../errors.js';
import type { CreateSplitRequest, SplitInput } from '../jobs/split-service.js';
import { ALLOWED_CONTENT_TYPES, MAX_UPLOAD_BYTES, type ReserveInput } from '../jobs/upload-service.js';
import { parseHttpUrl } from '../net/fetch.js';

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

function requireString(obj: Json, field: string, path: string, maxLength = 2048): string {
  const value = obj[field];
  if (typeof value !== 'string' || value.length === 0) throw invalid(`${path}${field} is required and must be a non-empty string`);
  if (value.length > maxLength) throw invalid(`${path}${field} must be at most ${maxLength} characters`);
  return value;
}

function optionalString(obj: Json, field: string, path = '', maxLength = 2048): string | undefined {
  if (obj[field] === undefined || obj[field] === null) return undefined;
  return requireString(obj, field, path, maxLength);
}

function requireUrl(obj: Json, field: string, path: string): string {
  const value = requireString(obj, field, path);
  try {
    parseHttpUrl(value);
  } catch (error) {
    throw invalid(`${path}${field}: ${(error as Error).message}`);
  }
  return value;
}

function rejectUnknown(obj: Json, allowed: readonly string[], path: string): void {
  const unknown = Object.keys(obj).filter((k) => !allowed.includes(k));
  if (unknown.length > 0) throw invalid(`unknown field ${path}${unknown[0]}`);
}

export function parseReserveUpload(body: Json): ReserveInput {
  rejectUnknown(body, ['filename', 'contentType', 'contentLength'], '');
  const filename = requireString(body, 'filename', '', 255);
  if (/[\u0000-\u001f\u007f]/.test(filename)) throw invalid('filename must not contain control characters');
  const contentType = requireString(body, 'contentType', '', 100);
  if (!ALLOWED_CONTENT_TYPES.includes(contentType)) {
    throw invalid(`contentType must be one of ${ALLOWED_CONTENT_TYPES.join(', ')}`);
  }
  const contentLength = body['contentLength'];
  if (typeof contentLength !== 'number' || !Number.isInteger(contentLength) || contentLength < 1 || contentLength > MAX_UPLOAD_BYTES) {
    throw invalid(`contentLength must be an integer from 1 to ${MAX_UPLOAD_BYTES}`);
  }
  return { filename: baseName(filename), contentType, contentLength };
}

/** A client's file name is only ever shown back, never used as a path: keep its last segment. */
function baseName(filename: string): string {
  const last = filename.split(/[\\/]/).pop() ?? '';
  return last.trim() || 'audio';
}

function parseInput(value: unknown): SplitInput {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid('input is required and must be an object');
  const input = value as Json;
  if (input['type'] === 'direct_url') {
    rejectUnknown(input, ['type', 'url'], 'input.');
    return { type: 'direct_url', url: requireUrl(input, 'url', 'input.') };
  }
  if (input['type'] === 'uploaded_file') {
    rejectUnknown(input, ['type', 'uploadId', 'fileUrl', 'storageKey'], 'input.');
    return {
      type: 'uploaded_file',
      uploadId: requireString(input, 'uploadId', 'input.', 64),
      fileUrl: requireString(input, 'fileUrl', 'input.'),
      storageKey: requireString(input, 'storageKey', 'input.', 128),
    };
  }
  throw invalid('input.type must be "direct_url" or "uploaded_file"');
}

export function parseCreateSplit(body: Json): CreateSplitRequest {
  rejectUnknown(body, ['input', 'stemModel', 'outputFormat', 'webhookUrl'], '');
  const input = parseInput(body['input']);
  const stemModel = body['stemModel'] ?? '6s';
  if (stemModel !== '4s' && stemModel !== '6s') throw invalid('stemModel must be "4s" or "6s"');
  const outputFormat = body['outputFormat'] ?? 'mp3';
  if (outputFormat !== 'mp3') throw invalid('outputFormat must be "mp3"');
  const webhookUrl = optionalString(body, 'webhookUrl');
  if (webhookUrl !== undefined) requireUrl(body, 'webhookUrl', '');
  return { input, stemModel, outputFormat, webhookUrl };
}

export function parseIdempotencyKey(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  if (header.length === 0 || header.length > 128) throw invalid('Idempotency-Key must be 1 to 128 characters');
  return header;
}
