/**
 * The OpenAPI 3.1 description of what this server implements. Tests validate real responses
 * against these schemas, so a change to a route that is not made here fails the suite.
 */
import { ALLOWED_CONTENT_TYPES, MAX_UPLOAD_BYTES, UPLOAD_TOKEN_HEADER } from '../jobs/upload-service.js';

const errorCodes = ['UNAUTHORIZED', 'INSUFFICIENT_CREDITS', 'VALIDATION_ERROR', 'RATE_LIMITED', 'NOT_FOUND', 'SERVER_ERROR'];
const jobErrorCodes = ['SOURCE_FETCH_FAILED', 'AUDIO_DECODE_FAILED', 'SEPARATION_FAILED', 'ENCODE_FAILED', 'STORAGE_FAILED', 'INTERNAL_ERROR'];

const envelope = (data: object) => ({
  type: 'object',
  required: ['success', 'data'],
  additionalProperties: false,
  properties: { success: { const: true }, data },
});

const errorResponse = (description: string) => ({
  description,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorEnvelope' } } },
});

const ok = (description: string, schemaRef: string) => ({
  description,
  content: { 'application/json': { schema: envelope({ $ref: `#/components/schemas/${schemaRef}` }) } },
});

const rateLimitHeaders = {
  'RateLimit-Limit': { schema: { type: 'integer' }, description: 'Requests allowed per minute for this API key.' },
  'RateLimit-Remaining': { schema: { type: 'integer' }, description: 'Requests left in the current window.' },
  'RateLimit-Reset': { schema: { type: 'integer' }, description: 'Seconds until the window resets.' },
};

export const openApiDocument = Object.freeze({
  openapi: '3.1.0',
  info: {
    title: 'stemsplit stem-splitting API',
    version: '0.1.0',
    description: 'The v1 stem-splitting API served by a self-hosted stemsplit. v1 is stable.',
  },
  servers: [{ url: '/v1' }],
  security: [{ bearer: [] }],
  paths: {
    '/audio/uploads': {
      post: {
        operationId: 'reserveUpload',
        requestBody: {
          required: true,
          content: { 'application/json': { schema: { $ref: '#/components/schemas/UploadRequest' } } },
        },
        responses: {
          '200': ok('Reservation created; send the bytes to uploadUrl with uploadHeaders.', 'UploadReservation'),
          '401': errorResponse('Missing or invalid API key.'),
          '422': errorResponse('Invalid request body.'),
        },
      },
    },
    '/uploads/{uploadId}': {
      parameters: [{ name: 'uploadId', in: 'path', required: true, schema: { type: 'string' } }],
      post: {
        operationId: 'uploadBytes',
        description: 'The uploadUrl of a reservation. Authenticated by the reservation\'s one-time upload token header, not an API key. PUT is accepted too.',
        security: [],
        parameters: [{ name: UPLOAD_TOKEN_HEADER, in: 'header', required: true, schema: { type: 'string' } }],
        requestBody: { required: true, content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } },
        responses: {
          '200': ok('The file was received in full.', 'UploadResult'),
          '401': errorResponse('Missing or wrong upload token.'),
          '404': errorResponse('No such reservation.'),
          '422': errorResponse('Expired, already uploaded, or a length other than contentLength.'),
          '507': errorResponse('The server ran out of disk space; nothing was kept.'),
        },
      },
    },
    '/audio/splits': {
      post: {
        operationId: 'createSplit',
        parameters: [
          { name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string', maxLength: 128 } },
        ],
        requestBody: {
          required: true,
          content: { 'application/json': { schema: { $ref: '#/components/schemas/SplitRequest' } } },
        },
        responses: {
          '200': { ...ok('Job created (or replayed for a repeated Idempotency-Key).', 'SplitCreated'), headers: rateLimitHeaders },
          '401': errorResponse('Missing or invalid API key.'),
          '402': errorResponse('The account does not have enough credits.'),
          '422': errorResponse('Invalid request body or audio source.'),
          '429': errorResponse('Rate limit exceeded; see Retry-After.'),
        },
      },
      get: {
        operationId: 'listSplits',
        description: 'The calling API key\'s jobs, newest first (an addition to the v1 spec).',
        parameters: [
          { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 } },
          { name: 'cursor', in: 'query', required: false, schema: { type: 'string' } },
        ],
        responses: {
          '200': ok('A page of jobs.', 'SplitPage'),
          '401': errorResponse('Missing or invalid API key.'),
          '422': errorResponse('Invalid limit or cursor.'),
        },
      },
    },
    '/audio/splits/{splitId}': {
      get: {
        operationId: 'getSplit',
        parameters: [{ name: 'splitId', in: 'path', required: true, schema: { type: 'string' } }],
        responses: {
          '200': ok('The job.', 'AudioSplit'),
          '401': errorResponse('Missing or invalid API key.'),
          '404': errorResponse('No such job for this account.'),
        },
      },
    },
    '/credits': {
      get: {
        operationId: 'getCredits',
        responses: {
          '200': ok('The balance.', 'CreditBalance'),
          '401': errorResponse('Missing or invalid API key.'),
        },
      },
    },
    '/files/{splitId}/{stem}.mp3': {
      get: {
        operationId: 'downloadStem',
        description: 'Signed, expiring stem download (the URLs in AudioSplit.stems). Supports Range.',
        security: [],
        parameters: [
          { name: 'splitId', in: 'path', required: true, schema: { type: 'string' } },
          { name: 'stem', in: 'path', required: true, schema: { type: 'string' } },
          { name: 'expires', in: 'query', required: true, schema: { type: 'integer' } },
          { name: 'signature', in: 'query', required: true, schema: { type: 'string' } },
        ],
        responses: {
          '200': { description: 'The MP3.', content: { 'audio/mpeg': { schema: { type: 'string', format: 'binary' } } } },
          '206': { description: 'Part of the MP3.', content: { 'audio/mpeg': { schema: { type: 'string', format: 'binary' } } } },
          '401': errorResponse('Invalid or expired signature.'),
          '404': errorResponse('No such stem, or it is past retention.'),
        },
      },
    },
  },
  components: {
    securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
    schemas: {
      ErrorEnvelope: {
        type: 'object',
        required: ['success', 'error'],
        additionalProperties: false,
        properties: {
          success: { const: false },
          error: {
            type: 'object',
            required: ['code', 'message'],
            additionalProperties: false,
            properties: { code: { enum: errorCodes }, message: { type: 'string' } },
          },
        },
      },
      UploadRequest: {
        type: 'object',
        required: ['filename', 'contentType', 'contentLength'],
        additionalProperties: false,
        properties: {
          filename: { type: 'string', minLength: 1, maxLength: 255 },
          contentType: { enum: [...ALLOWED_CONTENT_TYPES] },
          contentLength: { type: 'integer', minimum: 1, maximum: MAX_UPLOAD_BYTES },
        },
      },
      UploadReservation: {
        type: 'object',
        required: ['uploadId', 'uploadUrl', 'expiresAt', 'uploadHeaders'],
        additionalProperties: false,
        properties: {
          uploadId: { type: 'string', pattern: '^upl_' },
          uploadUrl: { type: 'string', format: 'uri' },
          expiresAt: { type: 'string', format: 'date-time' },
          uploadHeaders: { type: 'object', additionalProperties: { type: 'string' } },
        },
      },
      UploadResult: {
        type: 'object',
        required: ['url', 'key'],
        additionalProperties: false,
        properties: {
          url: { type: 'string', format: 'uri', description: 'The fileUrl of an uploaded_file input.' },
          key: { type: 'string', description: 'The storageKey of an uploaded_file input.' },
        },
      },
      DirectUrlInput: {
        type: 'object',
        required: ['type', 'url'],
        additionalProperties: false,
        properties: { type: { const: 'direct_url' }, url: { type: 'string', format: 'uri' } },
      },
      UploadedFileInput: {
        type: 'object',
        required: ['type', 'uploadId', 'fileUrl', 'storageKey'],
        additionalProperties: false,
        properties: {
          type: { const: 'uploaded_file' },
          uploadId: { type: 'string' },
          fileUrl: { type: 'string', format: 'uri' },
          storageKey: { type: 'string' },
        },
      },
      SplitRequest: {
        type: 'object',
        required: ['input'],
        additionalProperties: false,
        properties: {
          input: {
            oneOf: [{ $ref: '#/components/schemas/DirectUrlInput' }, { $ref: '#/components/schemas/UploadedFileInput' }],
            discriminator: { propertyName: 'type' },
          },
          stemModel: { enum: ['4s', '6s'], default: '6s' },
          outputFormat: { enum: ['mp3'], default: 'mp3' },
          webhookUrl: { type: 'string', format: 'uri' },
        },
      },
      SplitCreated: {
        type: 'object',
        required: ['id', 'status', 'creditsUsed', 'createdAt'],
        additionalProperties: false,
        properties: {
          id: { type: 'string', pattern: '^split_' },
          status: { const: 'queued' },
          creditsUsed: { type: 'integer', minimum: 0 },
          createdAt: { type: 'string', format: 'date-time' },
        },
      },
      AudioSplit: {
        type: 'object',
        required: ['id', 'status', 'stemModel', 'model', 'filename', 'durationSeconds', 'creditsUsed', 'progress', 'createdAt', 'updatedAt', 'error'],
        additionalProperties: false,
        properties: {
          id: { type: 'string', pattern: '^split_' },
          status: { enum: ['queued', 'processing', 'succeeded', 'failed'] },
          stemModel: { enum: ['4s', '6s'] },
          model: { type: 'string', description: 'The model that ran, e.g. htdemucs or stemsplit-small-4s.' },
          filename: { type: 'string' },
          durationSeconds: { type: 'integer', minimum: 0 },
          creditsUsed: { type: 'integer', minimum: 0 },
          progress: { type: 'integer', minimum: 0, maximum: 100 },
          createdAt: { type: 'string', format: 'date-time' },
          updatedAt: { type: 'string', format: 'date-time' },
          stems: {
            type: 'object',
            description: 'Present on succeeded jobs: stem name to a signed download URL, valid 24 h, issued afresh on each GET.',
            propertyNames: { enum: ['vocals', 'drums', 'bass', 'other', 'guitar', 'piano'] },
            additionalProperties: { type: 'string', format: 'uri' },
          },
          error: {
            oneOf: [
              { type: 'null' },
              {
                type: 'object',
                required: ['code', 'message'],
                additionalProperties: false,
                properties: { code: { enum: jobErrorCodes }, message: { type: 'string' } },
              },
            ],
          },
        },
      },
      SplitPage: {
        type: 'object',
        required: ['nextCursor', 'items'],
        additionalProperties: false,
        properties: {
          nextCursor: { type: ['string', 'null'] },
          items: { type: 'array', items: { $ref: '#/components/schemas/AudioSplit' } },
        },
      },
      CreditBalance: {
        type: 'object',
        required: ['balance', 'unit'],
        additionalProperties: false,
        properties: { balance: { type: 'integer', minimum: 0 }, unit: { const: 'seconds' } },
      },
      WebhookEvent: {
        type: 'object',
        required: ['event', 'data'],
        additionalProperties: false,
        properties: { event: { const: 'audio.split.completed' }, data: { $ref: '#/components/schemas/AudioSplit' } },
      },
    },
  },
  webhooks: {
    'audio.split.completed': {
      post: {
        description: 'Sent when a job reaches succeeded or failed. Header Stemsplit-Signature: t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<raw body>"> keyed with the account\'s webhook signing secret; Stemsplit-Delivery: a delivery id (the same on retries). Retried with exponential backoff until a 2xx, for about 24 hours.',
        requestBody: { content: { 'application/json': { schema: { $ref: '#/components/schemas/WebhookEvent' } } } },
        responses: { '200': { description: 'Any 2xx acknowledges the delivery.' } },
      },
    },
  },
});
