/**
 * The API's routing, validation and envelopes, in process (`app.request`, no socket): every bad body gets one readable sentence naming
 * the field, in the v1 envelope, as the OpenAPI document (generated from the routes and schemas
 * that serve) describes it; every operation the served document lists is routed, behind the key
 * where it says so. Part of the quick tier (`npm run test:quick`).
 *
 * @tier quick
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { API_ERROR_CODES } from '../src/errors.js';
import { MAX_UPLOAD_BYTES } from '../src/limits.js';
import { startTestServer, type TestServer } from './support/server.js';
import { servedOpenApi, type ServedOpenApi } from './support/openapi.js';

let t: TestServer;
/** The description the server serves: the routes it lists are the ones checked here. */
let openapi: ServedOpenApi;
before(async () => {
  t = await startTestServer();
  openapi = await servedOpenApi(t);
});
after(async () => {
  await t.close();
});

/** `method path` without a body, with `key` or none; `json` is absent when the answer is not JSON. */
async function send(method: string, path: string, key: string | null): Promise<{ status: number; text: string; json: any }> {
  const response = await t.server.app.request(`/v1${path}`, { method, headers: key === null ? {} : { authorization: `Bearer ${key}` } });
  const text = await response.text();
  return { status: response.status, text, json: response.headers.get('content-type')?.includes('json') ? JSON.parse(text) : undefined };
}

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
  [{ input: { type: 'direct_url', url }, outputFormat: 'wma' }, 'outputFormat must be one of "mp3", "wav", "flac", "ogg", "opus", "m4a", "aiff", "alac"'],
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
      openapi.assertMatches('POST', '/audio/splits', 422, response.json);
    });
  }
});

const uploadCases: Array<[unknown, string]> = [
  [{}, 'filename is required and must be a string'],
  [
    { filename: 'a.ogg', contentType: 'audio/ogg', contentLength: 10 },
    'contentType must be one of "audio/mpeg", "audio/wav", "audio/flac", "audio/mp4", "audio/x-m4a", "audio/x-wav", "audio/webm"',
  ],
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
      openapi.assertMatches('POST', '/audio/uploads', 422, response.json);
    });
  }
});

test('a good reservation answers 200 in the envelope, as documented, with the file name cut to its last segment', async () => {
  const response = await post('/audio/uploads', { filename: '../x/song.wav', contentType: 'audio/wav', contentLength: 10 });
  assert.equal(response.status, 200);
  openapi.assertMatches('POST', '/audio/uploads', 200, response.json);
  const listed = await t.server.app.request('/v1/audio/splits', { headers: { authorization: `Bearer ${t.key}` } });
  openapi.assertMatches('GET', '/audio/splits', 200, await listed.json());
});

test('the OpenAPI document is generated from the schemas: the error codes and limits are the declared ones', () => {
  const schemas = openapi.document.components.schemas;
  assert.deepEqual(schemas['ErrorEnvelope'].properties.error.properties.code.enum, [...API_ERROR_CODES]);
  assert.equal(schemas['UploadRequest'].properties.contentLength.maximum, MAX_UPLOAD_BYTES);
  assert.equal(schemas['UploadRequest'].properties.contentLength.type, 'integer');
  assert.equal(schemas['SplitRequest'].additionalProperties, false);
});

/** A request path of a documented path: each `{param}` filled with its name (no such id or stem). */
const filled = (path: string) => path.replaceAll(/{(\w+)}/g, '$1');

/** Every operation the document lists, and whether it takes the bearer key. */
function documentedOperations(): Array<{ method: string; path: string; url: string; bearer: boolean }> {
  const document = openapi.document;
  return Object.entries(document.paths).flatMap(([path, operations]) =>
    Object.entries(operations).map(([method, operation]) => ({
      method: method.toUpperCase(),
      path,
      url: filled(path),
      // An operation's own `security: []` makes it public; the rest take the document's bearer key.
      bearer: (operation.security ?? document.security ?? []).length > 0,
    })),
  );
}

describe('every documented operation is served as documented', () => {
  test('the document lists operations, public and behind the bearer key', () => {
    const operations = documentedOperations();
    assert.ok(operations.some((operation) => operation.bearer));
    assert.ok(operations.some((operation) => !operation.bearer));
  });

  test('without an API key: a bearer operation answers 401, a public one reaches its route and answers a documented status', async () => {
    for (const { method, path, url, bearer } of documentedOperations()) {
      const response = await send(method, url, null);
      const name = `${method} ${path} (${url}): ${response.status} ${response.text.slice(0, 200)}`;
      if (bearer) {
        assert.equal(response.status, 401, name);
        assert.equal(response.json.error.code, 'UNAUTHORIZED', name);
      } else {
        assert.notEqual(response.json?.error?.message, 'no such endpoint', name);
      }
      assert.ok(openapi.document.paths[path]?.[method.toLowerCase()]?.responses[String(response.status)], `documents the answer of ${name}`);
      if (response.json !== undefined) openapi.assertMatches(method, path, response.status, response.json);
    }
  });

  test('a documented path answers 404 in the envelope to a method it does not document', async () => {
    for (const [path, operations] of Object.entries(openapi.document.paths)) {
      for (const method of ['DELETE', 'PATCH'].filter((method) => !(method.toLowerCase() in operations))) {
        const response = await send(method, filled(path), t.key);
        assert.equal(response.status, 404, `${method} ${path}`);
        assert.deepEqual(response.json, { success: false, error: { code: 'NOT_FOUND', message: 'no such endpoint' } }, `${method} ${path}`);
      }
    }
  });
});

test('an unknown route and a missing key answer in the envelope', async () => {
  const missing = await t.server.app.request('/v1/nothing', { headers: { authorization: `Bearer ${t.key}` } });
  assert.equal(missing.status, 404);
  assert.equal(((await missing.json()) as any).error.code, 'NOT_FOUND');
  const anonymous = await t.server.app.request('/v1/credits');
  assert.equal(anonymous.status, 401);
  openapi.assertMatches('GET', '/credits', 401, await anonymous.json());
});
