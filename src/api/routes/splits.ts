import { createRoute, z, type OpenAPIHono } from '@hono/zod-openapi';
import { StemsplitError } from '../../errors.js';
import { cancelSplit, deleteSplit } from '../../jobs/cancel.js';
import { presentSplit } from '../present.js';
import type { CreateSplitRequest, SplitService } from '../../services/splits.js';
import type { StemUrlSigner } from '../stem-urls.js';
import { ID_PATTERN, type DataStore, type Split } from '../../store/index.js';
import { mapError, successBody } from '../envelope.js';
import type { AppEnv } from '../env.js';
import { IdempotencyGate, requestHash, type StoredResponse } from '../idempotency.js';
import { rateLimit } from '../middleware/rate-limit.js';
import { failure, integerHeader, json, ok, openApiRoutes, serveAndDocument } from '../openapi.js';
import { parseBody } from '../parse-body.js';
import { AudioSplit, ListSplitsQuery, SplitCreated, SplitDeleted, SplitPage, SplitRequest } from '../split-schemas.js';
import { checkUploadReference, parseIdempotencyKey, readJsonObject } from '../validate.js';

const createSplitRoute = createRoute({
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

const listSplitsRoute = createRoute({
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

const getSplitRoute = createRoute({
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

const cancelSplitRoute = createRoute({
  method: 'post',
  path: '/audio/splits/{splitId}/cancel',
  operationId: 'cancelSplit',
  description:
    'Cancels a queued or processing job (an addition to the v1 spec, whose statuses are closed): it becomes `failed` with the job error `CANCELLED`, ' +
    'its worker stops within 2 s, no stems are kept, every credit it was charged is refunded and its webhook (if any) is sent. ' +
    'Cancelling a cancelled job again answers it as it is.',
  request: { params: z.object({ splitId: z.string() }) },
  responses: {
    200: ok('The cancelled job.', AudioSplit),
    401: failure('Missing or invalid API key.'),
    404: failure('No such job for this account.'),
    422: failure('The job already ended (it succeeded, or failed for another reason).'),
  },
});

const deleteSplitRoute = createRoute({
  method: 'delete',
  path: '/audio/splits/{splitId}',
  operationId: 'deleteSplit',
  description:
    'Deletes a job (an addition to the v1 spec): its source and stems are removed from disk at once, its signed URLs answer 404, and it is gone from GET and the list. ' +
    "A queued or processing job is cancelled first (refunded, its webhook sent). The account that owns the job may delete it, and an admin may delete anyone's.",
  request: { params: z.object({ splitId: z.string() }) },
  responses: {
    200: ok('The job was deleted.', SplitDeleted),
    401: failure('Missing or invalid API key.'),
    404: failure("No such job for this account (for an admin's key: no such job)."),
  },
});

export interface SplitRoutesDeps {
  readonly data: DataStore;
  readonly splits: SplitService;
  readonly signer: StemUrlSigner;
  readonly enqueue: (splitId: string) => void;
  /** A job was cancelled here: its runner stops it now if it is in this process, and its webhook goes out. */
  readonly cancelled?: (splitId: string) => void;
  readonly rateLimitPerMinute: number;
  readonly maxJsonBodyBytes: number;
}

const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8' };

export function splitRoutes(deps: SplitRoutesDeps): OpenAPIHono<AppEnv> {
  const app = openApiRoutes();
  const gate = new IdempotencyGate(deps.data.idempotency);

  const limited = rateLimit({ limit: deps.rateLimitPerMinute });
  serveAndDocument(
    app,
    createSplitRoute,
    async (c) => {
      const principal = c.get('principal');
      const idempotencyKey = parseIdempotencyKey(c.req.header('idempotency-key'));
      const { value } = await readJsonObject(c, deps.maxJsonBodyBytes);
      const body = parseBody(SplitRequest, value);
      if (body.input.type === 'uploaded_file') checkUploadReference(body.input);
      // The request is the service's (split-request/), as checked; only the upload reference is reshaped.
      const { input, ...fields } = body;
      const request: CreateSplitRequest = {
        ...fields,
        input: input.type === 'uploaded_file' ? { type: 'uploaded_file', uploadId: input.uploadId } : input,
      };
      const origin = c.get('publicBase');

      const created = (split: Split): StoredResponse => {
        const data = { id: split.id, status: split.status, creditsUsed: split.creditsUsed, createdAt: split.createdAt };
        return { status: 200, body: JSON.stringify(successBody(data)) };
      };
      const create = async (remember?: (response: StoredResponse) => Promise<void>): Promise<StoredResponse> => {
        try {
          const split = await deps.splits.create(principal, request, origin, remember && ((split) => remember(created(split))));
          deps.enqueue(split.id);
          return created(split);
        } catch (error) {
          const mapped = mapError(error);
          if (mapped.status >= 500) throw error;
          return { status: mapped.status, body: JSON.stringify(mapped.body) };
        }
      };

      const response = idempotencyKey
        ? await gate.run(principal.apiKeyId, idempotencyKey, requestHash(value), create)
        : { ...(await create()), replayed: false };
      const headers: Record<string, string> = { ...JSON_HEADERS };
      if (response.replayed) headers['Idempotent-Replayed'] = 'true';
      return new Response(response.body, { status: response.status, headers });
    },
    { middleware: [limited] },
  );

  // Read by hand as before: zod's query validator would refuse a repeated parameter, which
  // the route has always read the first of.
  serveAndDocument(app, listSplitsRoute, async (c) => {
    const principal = c.get('principal');
    const { limit, cursor } = parseBody(ListSplitsQuery, { limit: c.req.query('limit'), cursor: c.req.query('cursor') });
    if (cursor !== undefined && !ID_PATTERN.test(cursor)) throw new StemsplitError('VALIDATION_ERROR', 'cursor is not a split id');
    const { splits, nextCursor } = await deps.splits.list(principal, limit, cursor);
    const now = deps.data.clock.now();
    const origin = c.get('publicBase');
    const page: z.output<typeof SplitPage> = { nextCursor, items: splits.map((s) => presentSplit(s, deps.signer, origin, now, principal.apiKeyId)) };
    return c.json(successBody(page));
  });

  app.openapi(cancelSplitRoute, async (c) => {
    const principal = c.get('principal');
    const split = await deps.splits.get(principal, c.req.valid('param').splitId);
    const cancelled = await cancelSplit(deps.data, split, (s, nowMs) => presentSplit(s, deps.signer, s.baseUrl, nowMs, s.apiKeyId));
    deps.cancelled?.(split.id);
    return c.json(successBody(presentSplit(cancelled, deps.signer, c.get('publicBase'), deps.data.clock.now(), principal.apiKeyId)), 200);
  });

  app.openapi(getSplitRoute, async (c) => {
    const principal = c.get('principal');
    const split = await deps.splits.get(principal, c.req.valid('param').splitId);
    const place = await deps.data.splits.queuePosition(split);
    return c.json(successBody(presentSplit(split, deps.signer, c.get('publicBase'), deps.data.clock.now(), principal.apiKeyId, place)), 200);
  });

  app.openapi(deleteSplitRoute, async (c) => {
    const principal = c.get('principal');
    const split = await deps.splits.deletable(principal, c.req.valid('param').splitId);
    const { cancelled } = await deleteSplit(deps.data, split, (s, nowMs) => presentSplit(s, deps.signer, s.baseUrl, nowMs, s.apiKeyId));
    if (cancelled) deps.cancelled?.(split.id);
    return c.json(successBody({ id: split.id, deleted: true as const }), 200);
  });

  return app;
}
