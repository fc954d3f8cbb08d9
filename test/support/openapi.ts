/** Validates real responses against the server's own OpenAPI document. */
import assert from 'node:assert/strict';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { openApiDocument } from '../../src/api/openapi.js';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => void;
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema({ $id: 'openapi', components: openApiDocument.components }, 'openapi');

type Doc = { paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: unknown }> }> }>> };

/** Asserts that `body` matches the documented response of `method path` for `status`. */
export function assertMatchesOpenApi(method: string, path: string, status: number, body: unknown): void {
  const operation = (openApiDocument as unknown as Doc).paths[path]?.[method.toLowerCase()];
  assert.ok(operation, `OpenAPI has no ${method} ${path}`);
  const response = operation.responses[String(status)];
  assert.ok(response, `OpenAPI documents no ${status} for ${method} ${path}`);
  const schema = response.content?.['application/json']?.schema;
  assert.ok(schema, `OpenAPI documents no JSON body for ${status} of ${method} ${path}`);
  const rewritten = JSON.parse(JSON.stringify(schema).replaceAll('"#/components', '"openapi#/components'));
  const validate = ajv.compile(rewritten);
  assert.ok(validate(body), `${method} ${path} ${status} does not match OpenAPI: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(body)}`);
}
