/**
 * The API's routing, validation and envelopes, in process (`app.request`, no socket): every bad
 * body gets one readable sentence naming the field, in the v1 envelope, as the OpenAPI document
 * (generated from the same schemas) describes it. Part of the quick tier (`npm run test:quick`).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { openApiDocument } from '../src/api/openapi.js';
import { API_ERROR_CODES } from '../src/errors.js';
import { MAX_UPLOAD_BYTES } from '../src/limits.js';
import { startTestServer, type TestServer } from './support/server.js';
import { assertMatchesOpenApi } from './support/openapi.js';

let t: TestServer;
before(async () => {
  t = await startTestServer();
});
after(async () => {
  await t.close();
});

async function post(path: string, body: unknown): Promise<{ status: number; json: any }> {
  const response = await t.server.app.request(`/v1${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${t.key}`, 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: response.status, json: await response.json() };
}

const url = 'http://example.test/a.mp3';
const splitCases: Array<[unknown, string]> = [
  ['{"input": ', 'request body is not valid JSON'],
  [[], 'request body must be a JSON object'],
  [{}, 'input is required and must be an object'],
  [{ input: { type: 'ftp', url } }, 'input.type must be "direct_url" or "uploaded_file"'],
  [{ input: { type: 'direct_url', url: 42 } }, 'input.url must be a string'],
  [{ input: { type: 'direct_url', url: 'file:///etc/passwd' } }, 'input.url: only http and https URLs are allowed, got file:'],
  [{ input: { type: 'direct_url', url }, stemModel: '5s' }, 'stemModel must be "4s" or "6s"'],
  [{ input: { type: 'direct_url', url }, outputFormat: 'ogg' }, 'outputFormat must be one of "mp3", "wav", "flac"'],
  [{ input: { type: 'direct_url', url }, colour: 'red' }, 'unknown field colour'],
  [{ input: { type: 'direct_url', url, extra: 1 } }, 'unknown field input.extra'],
  [{ input: { type: 'uploaded_file', uploadId: 'upl_x' } }, 'input.fileUrl is required and must be a string'],
];

describe('POST /v1/audio/splits refuses a bad body with one sentence naming the field', () => {
  for (const [body, message] of splitCases) {
    test(message, async () => {
      const response = await post('/audio/splits', body);
      assert.equal(response.status, 422);
      assert.deepEqual(response.json, { success: false, error: { code: 'VALIDATION_ERROR', message } });
      assertMatchesOpenApi('POST', '/audio/splits', 422, response.json);
    });
  }
});

const uploadCases: Array<[unknown, string]> = [
  [{}, 'filename is required and must be a string'],
  [{ filename: 'a.ogg', contentType: 'audio/ogg', contentLength: 10 }, 'contentType must be one of "audio/mpeg", "audio/wav", "audio/flac", "audio/mp4", "audio/x-m4a", "audio/x-wav", "audio/webm"'],
  [{ filename: 'a.wav', contentType: 'audio/wav', contentLength: 0 }, 'contentLength must be an integer at least 1'],
  [{ filename: 'a.wav', contentType: 'audio/wav', contentLength: MAX_UPLOAD_BYTES + 1 }, `contentLength must be an integer at most ${MAX_UPLOAD_BYTES}`],
  [{ filename: 'a.wav', contentType: 'audio/wav', contentLength: 1.5 }, 'contentLength must be an integer'],
  [{ filename: 'a.wav', contentType: 'audio/wav', contentLength: '10' }, 'contentLength must be an integer'],
  [{ filename: 'a\u0001.wav', contentType: 'audio/wav', contentLength: 10 }, 'filename must not contain control characters'],
];

describe('POST /v1/audio/uploads refuses a bad body with one sentence naming the field', () => {
  for (const [body, message] of uploadCases) {
    test(message, async () => {
      const response = await post('/audio/uploads', body);
      assert.equal(response.status, 422);
      assert.deepEqual(response.json, { success: false, error: { code: 'VALIDATION_ERROR', message } });
      assertMatchesOpenApi('POST', '/audio/uploads', 422, response.json);
    });
  }
});

test('a good reservation answers 200 in the envelope, as documented, with the file name cut to its last segment', async () => {
  const response = await post('/audio/uploads', { filename: '../x/song.wav', contentType: 'audio/wav', contentLength: 10 });
  assert.equal(response.status, 200);
  assertMatchesOpenApi('POST', '/audio/uploads', 200, response.json);
  const listed = await t.server.app.request('/v1/audio/splits', { headers: { authorization: `Bearer ${t.key}` } });
  assertMatchesOpenApi('GET', '/audio/splits', 200, await listed.json());
});

test('the OpenAPI document is generated from the schemas: the error codes and limits are the declared ones', () => {
  const schemas = openApiDocument.components?.schemas as Record<string, any>;
  assert.deepEqual(schemas['ErrorEnvelope'].properties.error.properties.code.enum, [...API_ERROR_CODES]);
  assert.equal(schemas['UploadRequest'].properties.contentLength.maximum, MAX_UPLOAD_BYTES);
  assert.equal(schemas['UploadRequest'].properties.contentLength.type, 'integer');
  assert.equal(schemas['SplitRequest'].additionalProperties, false);
  for (const path of ['/audio/uploads', '/uploads/{uploadId}', '/audio/splits', '/audio/splits/{splitId}', '/credits', '/files/{splitId}/{stem}.{format}']) {
    assert.ok((openApiDocument.paths as Record<string, unknown>)[path], `documents ${path}`);
  }
});

test('an unknown route and a missing key answer in the envelope', async () => {
  const missing = await t.server.app.request('/v1/nothing', { headers: { authorization: `Bearer ${t.key}` } });
  assert.equal(missing.status, 404);
  assert.equal(((await missing.json()) as any).error.code, 'NOT_FOUND');
  const anonymous = await t.server.app.request('/v1/credits');
  assert.equal(anonymous.status, 401);
  assertMatchesOpenApi('GET', '/credits', 401, await anonymous.json());
});
