/** Validates real responses against the OpenAPI document the server itself serves. */
import assert from 'node:assert/strict';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { TestServer } from './server.js';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => void;

interface Operation {
  security?: unknown[];
  responses: Record<string, { content?: Record<string, { schema: unknown }> }>;
}

export interface OpenApiDocument {
  openapi: string;
  security?: unknown[];
  paths: Record<string, Record<string, Operation>>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  components: { schemas: Record<string, any> };
}

export interface ServedOpenApi {
  readonly document: OpenApiDocument;
  /** Asserts that `body` matches the documented response of `method path` for `status`. */
  assertMatches(method: string, path: string, status: number, body: unknown): void;
}

/** `GET /v1/openapi.json` of `server` (in process), ready to check responses against. */
export async function servedOpenApi(server: TestServer): Promise<ServedOpenApi> {
  const response = await server.server.app.request('/v1/openapi.json');
  assert.equal(response.status, 200);
  const document = (await response.json()) as OpenApiDocument;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema({ $id: 'openapi', components: document.components }, 'openapi');
  return {
    document,
    assertMatches(method, path, status, body) {
      const operation = document.paths[path]?.[method.toLowerCase()];
      assert.ok(operation, `OpenAPI has no ${method} ${path}`);
      const response = operation.responses[String(status)];
      assert.ok(response, `OpenAPI documents no ${status} for ${method} ${path}`);
      const schema = response.content?.['application/json']?.schema;
      assert.ok(schema, `OpenAPI documents no JSON body for ${status} of ${method} ${path}`);
      const rewritten = JSON.parse(JSON.stringify(schema).replaceAll('"#/components', '"openapi#/components'));
      const validate = ajv.compile(rewritten);
      assert.ok(validate(body), `${method} ${path} ${status} does not match OpenAPI: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(body)}`);
    },
  };
}
