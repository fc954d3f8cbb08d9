/**
 * The OpenAPI 3.1 description of what this server implements, generated from the route
 * declarations below and the zod schemas the routes validate with (schemas.ts). Tests validate
 * real responses against it, so a route whose answers drift from its schema fails the suite.
 */
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { STEM_CONTENT_TYPES, STEM_FORMATS } from '../audio/formats.js';
import { MAX_UPLOAD_BYTES } from '../limits.js';
import { VERSION } from '../version.js';
import { UPLOAD_TOKEN_HEADER } from './paths.js';
import {
  AudioSplit,
  CreditBalance,
  envelopeOf,
  ErrorEnvelope,
  Health,
  ListSplitsQuery,
  ModelList,
  SplitCreated,
  SplitPage,
  ServerLimits,
  SplitRequest,
  uploadRequestSchema,
  UploadReservation,
  UploadResult,
  WebhookEvent,
} from './schemas.js';

const json = <T extends z.ZodType>(schema: T) => ({ 'application/json': { schema } });
const ok = <T extends z.ZodType>(description: string, data: T) => ({ description, content: json(envelopeOf(data)) });
const failure = (description: string) => ({ description, content: json(ErrorEnvelope) });
const binary = z.string().openapi({ format: 'binary' });
const integerHeader = (description: string) => ({ schema: { type: 'integer' as const }, description });

/** The reservation route of a server taking uploads of at most `maxUploadBytes`. */
function reserveUploadRoute(maxUploadBytes: number) {
  return createRoute({
    method: 'post',
    path: '/audio/uploads',
    operationId: 'reserveUpload',
    request: { body: { required: true, content: json(uploadRequestSchema(maxUploadBytes)) } },
    responses: {
      200: ok('Reservation created; send the bytes to uploadUrl with uploadHeaders.', UploadReservation),
      401: failure('Missing or invalid API key.'),
      422: failure('Invalid request body, or a contentLength over this server\'s limit.'),
      507: failure('The server has no disk room for a file of this size.'),
    },
  });
}

export const uploadBytesRoute = createRoute({
  method: 'post',
  path: '/uploads/{uploadId}',
  operationId: 'uploadBytes',
  description: "The uploadUrl of a reservation. Authenticated by the reservation's one-time upload token header, not an API key. PUT is accepted too.",
  security: [],
  request: {
    params: z.object({ uploadId: z.string() }),
    headers: z.object({ [UPLOAD_TOKEN_HEADER]: z.string() }),
    body: { required: true, content: { 'application/octet-stream': { schema: binary } } },
  },
  responses: {
    200: ok('The file was received in full.', UploadResult),
    401: failure('Missing or wrong upload token.'),
    404: failure('No such reservation.'),
    422: failure('Expired, already uploaded, or a length other than contentLength.'),
    507: failure('The server ran out of disk space; nothing was kept.'),
  },
});

export const createSplitRoute = createRoute({
  method: 'post',
  path: '/audio/splits',
  operationId: 'createSplit',
  request: {
    headers: z.object({ 'Idempotency-Key': z.string().min(1).max(128).optional() }),
    body: { required: true, content: json(SplitRequest) },
  },
  responses: {
    200: {
      ...ok('Job created (or replayed for a repeated Idempotency-Key).', SplitCreated),
      headers: {
        'RateLimit-Limit': integerHeader('Requests allowed per minute for this API key.'),
        'RateLimit-Remaining': integerHeader('Requests left in the current window.'),
        'RateLimit-Reset': integerHeader('Seconds until the window resets.'),
      },
    },
    401: failure('Missing or invalid API key.'),
    402: failure('The account does not have enough credits.'),
    422: failure('Invalid request body or audio source.'),
    429: failure('Rate limit exceeded; see Retry-After.'),
  },
});

export const listSplitsRoute = createRoute({
  method: 'get',
  path: '/audio/splits',
  operationId: 'listSplits',
  description: "The calling API key's jobs, newest first (an addition to the v1 spec).",
  request: { query: ListSplitsQuery },
  responses: {
    200: ok('A page of jobs.', SplitPage),
    401: failure('Missing or invalid API key.'),
    422: failure('Invalid limit or cursor.'),
  },
});

export const getSplitRoute = createRoute({
  method: 'get',
  path: '/audio/splits/{splitId}',
  operationId: 'getSplit',
  request: { params: z.object({ splitId: z.string() }) },
  responses: {
    200: ok('The job.', AudioSplit),
    401: failure('Missing or invalid API key.'),
    404: failure('No such job for this account.'),
  },
});

export const getCreditsRoute = createRoute({
  method: 'get',
  path: '/credits',
  operationId: 'getCredits',
  responses: { 200: ok('The balance.', CreditBalance), 401: failure('Missing or invalid API key.') },
});

export const listModelsRoute = createRoute({
  method: 'get',
  path: '/models',
  operationId: 'listModels',
  description: 'The models this server has and can pull, which stemModel runs which, and the terms of their weights (an addition to the v1 spec).',
  responses: { 200: ok('The models.', ModelList), 401: failure('Missing or invalid API key.') },
});

export const healthRoute = createRoute({
  method: 'get',
  path: '/health',
  operationId: 'health',
  security: [],
  responses: { 200: ok('The server is up.', Health) },
});

export const limitsRoute = createRoute({
  method: 'get',
  path: '/limits',
  operationId: 'getLimits',
  description: 'What this server accepts and how long it keeps what it makes: its upload size limit, stem retention, accepted content types, stem URL lifetime (an addition to the v1 spec).',
  security: [],
  responses: { 200: ok("The server's limits.", ServerLimits) },
});

/** A stem's body in each format a job may ask for. */
const stemContent = Object.fromEntries(STEM_FORMATS.map((format) => [STEM_CONTENT_TYPES[format], { schema: binary }]));

export const downloadStemRoute = createRoute({
  method: 'get',
  path: '/files/{splitId}/{stem}.{format}',
  operationId: 'downloadStem',
  description: "Signed, expiring stem download (the URLs in AudioSplit.stems), in the job's outputFormat. Supports Range.",
  security: [],
  request: {
    params: z.object({ splitId: z.string(), stem: z.string(), format: z.enum(STEM_FORMATS) }),
    query: z.object({ expires: z.string().openapi({ type: 'integer' }), signature: z.string() }),
  },
  responses: {
    200: { description: 'The stem.', content: stemContent },
    206: { description: 'Part of the stem.', content: stemContent },
    401: failure('Invalid or expired signature.'),
    404: failure('No such stem, or it is past retention.'),
  },
});

const WEBHOOK_DESCRIPTION =
  "Sent when a job reaches succeeded or failed. Header Stemsplit-Signature: t=<unix>,v1=<hex HMAC-SHA256 of \"<t>.<raw body>\"> keyed with the account's webhook signing secret; Stemsplit-Delivery: a delivery id (the same on retries). Retried with exponential backoff until a 2xx, for about 24 hours.";

function buildDocument(maxUploadBytes: number) {
  const app = new OpenAPIHono();
  const registry = app.openAPIRegistry;
  registry.registerComponent('securitySchemes', 'bearer', { type: 'http', scheme: 'bearer' });
  for (const route of [reserveUploadRoute(maxUploadBytes), uploadBytesRoute, createSplitRoute, listSplitsRoute, getSplitRoute, getCreditsRoute, listModelsRoute, limitsRoute, healthRoute, downloadStemRoute]) {
    registry.registerPath(route);
  }
  registry.registerWebhook({
    method: 'post',
    path: 'audio.split.completed',
    description: WEBHOOK_DESCRIPTION,
    request: { body: { content: json(WebhookEvent) } },
    responses: { 200: { description: 'Any 2xx acknowledges the delivery.' } },
  });
  return app.getOpenAPI31Document({
    openapi: '3.1.0',
    info: { title: 'stemsplit stem-splitting API', version: VERSION, description: 'The v1 stem-splitting API served by a self-hosted stemsplit. v1 is stable.' },
    servers: [{ url: '/v1' }],
    security: [{ bearer: [] }],
  });
}

type OpenApiDocument = ReturnType<typeof buildDocument>;
const documents = new Map<number, Readonly<OpenApiDocument>>();

/** The description of a server taking uploads of at most `maxUploadBytes` (built once per limit). */
export function openApiDocumentFor(maxUploadBytes: number): Readonly<OpenApiDocument> {
  let document = documents.get(maxUploadBytes);
  if (!document) {
    document = Object.freeze(buildDocument(maxUploadBytes));
    documents.set(maxUploadBytes, document);
  }
  return document;
}

/** The description of a server on the default limits (the spec's). */
export const openApiDocument = openApiDocumentFor(MAX_UPLOAD_BYTES);
