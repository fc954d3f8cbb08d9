import { Hono } from 'hono';
import { StemsplitError } from '../../errors.js';
import { presentSplit } from '../present.js';
import type { CreateSplitRequest, SplitService } from '../../services/splits.js';
import type { StemUrlSigner } from '../stem-urls.js';
import { ID_PATTERN, type DataStore, type Split } from '../../store/index.js';
import { mapError, successBody } from '../envelope.js';
import type { AppEnv } from '../env.js';
import { IdempotencyGate, requestHash, type StoredResponse } from '../idempotency.js';
import { rateLimit } from '../middleware/rate-limit.js';
import { ListSplitsQuery, parseBody, SplitRequest } from '../schemas.js';
import { checkUploadReference, parseIdempotencyKey, readJsonObject } from '../validate.js';

export interface SplitRoutesDeps {
  readonly data: DataStore;
  readonly splits: SplitService;
  readonly signer: StemUrlSigner;
  readonly enqueue: (splitId: string) => void;
  readonly rateLimitPerMinute: number;
  readonly maxJsonBodyBytes: number;
}

const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8' };

export function splitRoutes(deps: SplitRoutesDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const gate = new IdempotencyGate(deps.data.idempotency);

  app.post('/audio/splits', rateLimit({ limit: deps.rateLimitPerMinute }), async (c) => {
    const principal = c.get('principal');
    const idempotencyKey = parseIdempotencyKey(c.req.header('idempotency-key'));
    const { value } = await readJsonObject(c, deps.maxJsonBodyBytes);
    const body = parseBody(SplitRequest, value);
    if (body.input.type === 'uploaded_file') checkUploadReference(body.input);
    const request: CreateSplitRequest = {
      input: body.input.type === 'uploaded_file' ? { type: 'uploaded_file', uploadId: body.input.uploadId } : body.input,
      stemModel: body.stemModel,
      outputFormat: body.outputFormat,
      webhookUrl: body.webhookUrl,
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
  });

  app.get('/audio/splits', async (c) => {
    const principal = c.get('principal');
    const { limit, cursor } = parseBody(ListSplitsQuery, { limit: c.req.query('limit'), cursor: c.req.query('cursor') });
    if (cursor !== undefined && !ID_PATTERN.test(cursor)) throw new StemsplitError('VALIDATION_ERROR', 'cursor is not a split id');
    const { splits, nextCursor } = await deps.splits.list(principal, limit, cursor);
    const now = deps.data.clock.now();
    const origin = c.get('publicBase');
    return c.json(successBody({ nextCursor, items: splits.map((s) => presentSplit(s, deps.signer, origin, now)) }));
  });

  app.get('/audio/splits/:splitId', async (c) => {
    const split = await deps.splits.get(c.get('principal'), c.req.param('splitId'));
    return c.json(successBody(presentSplit(split, deps.signer, c.get('publicBase'), deps.data.clock.now())));
  });

  return app;
}
