import { Readable } from 'node:stream';
import { Hono } from 'hono';
import { StemsplitError } from '../../errors.js';
import type { UploadService } from '../../services/uploads.js';
import { storageKeyOf, uploadPath, UPLOAD_TOKEN_HEADER } from '../paths.js';
import { parseBody, uploadRequestSchema } from '../schemas.js';
import { ID_PATTERN } from '../../store/index.js';
import { errorResponse, successBody } from '../envelope.js';
import type { AppEnv } from '../env.js';
import { baseName, readJsonObject } from '../validate.js';

export interface UploadRoutesDeps {
  readonly uploads: UploadService;
  readonly maxJsonBodyBytes: number;
  readonly limits: { readonly maxUploadBytes: number };
}

/** POST /audio/uploads (authenticated): reserve an upload. */
export function uploadReservationRoutes(deps: UploadRoutesDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const reservationBody = uploadRequestSchema(deps.limits.maxUploadBytes);
  app.post('/audio/uploads', async (c) => {
    const { value } = await readJsonObject(c, deps.maxJsonBodyBytes);
    const body = parseBody(reservationBody, value);
    const input = { ...body, filename: baseName(body.filename) };
    const { upload, token } = await deps.uploads.reserve(c.get('principal'), input);
    const origin = c.get('publicBase');
    return c.json(
      successBody({
        uploadId: upload.id,
        uploadUrl: `${origin}${uploadPath(upload.id)}`,
        expiresAt: new Date(upload.expiresAtMs).toISOString(),
        uploadHeaders: { [UPLOAD_TOKEN_HEADER]: token },
      }),
    );
  });
  return app;
}

/**
 * POST or PUT /uploads/:uploadId (the upload token authenticates, not an API key, as with a
 * presigned URL): receive the bytes and answer with the `fileUrl` and `storageKey` to split.
 */
export function uploadTransferRoutes(deps: UploadRoutesDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.on(['POST', 'PUT'], '/uploads/:uploadId', async (c) => {
    const uploadId = c.req.param('uploadId');
    if (!ID_PATTERN.test(uploadId)) {
      const response = errorResponse(new StemsplitError('NOT_FOUND', 'no such upload reservation'));
      response.headers.set('connection', 'close');
      return response;
    }
    const lengthHeader = c.req.header('content-length');
    const declared = lengthHeader === undefined ? undefined : Number(lengthHeader);
    const stream = c.req.raw.body ? Readable.fromWeb(c.req.raw.body as import('node:stream/web').ReadableStream) : Readable.from([]);
    let upload;
    try {
      upload = await deps.uploads.receive(uploadId, c.req.header(UPLOAD_TOKEN_HEADER), stream, declared);
    } catch (error) {
      // A client still sending would get a reset connection instead of this answer: read what is
      // left first (bounded), then close the connection so no client reuses it mid-stream.
      await discardRest(stream, deps.limits.maxUploadBytes);
      const response = errorResponse(error);
      response.headers.set('connection', 'close');
      return response;
    }
    const origin = c.get('publicBase');
    return c.json(successBody({ url: `${origin}${uploadPath(upload.id)}`, key: storageKeyOf(upload.id) }));
  });
  return app;
}

/** Reads and drops the rest of a refused upload: at most the upload limit, for at most 30 s. */
async function discardRest(stream: Readable, maxBytes: number): Promise<void> {
  const giveUp = setTimeout(() => stream.destroy(), 30_000);
  let seen = 0;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      seen += chunk.length;
      if (seen > maxBytes) break;
    }
  } catch {
    // The client went away, or the transfer already consumed the stream: nothing left to read.
  } finally {
    clearTimeout(giveUp);
  }
}
