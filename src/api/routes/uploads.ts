import { Readable } from 'node:stream';
import { createRoute, z, type OpenAPIHono } from '@hono/zod-openapi';
import { StemsplitError } from '../../errors.js';
import type { UploadService } from '../../services/uploads.js';
import { storageKeyOf, uploadPath, UPLOAD_TOKEN_HEADER } from '../paths.js';
import { parseBody } from '../parse-body.js';
import { uploadRequestSchema, UploadReservation, UploadResult } from '../schemas.js';
import { ID_PATTERN } from '../../store/index.js';
import { errorResponse, successBody } from '../envelope.js';
import type { AppEnv } from '../env.js';
import { binary, failure, json, ok, openApiRoutes, serveAndDocument } from '../openapi.js';
import { baseName, readJsonObject } from '../validate.js';

export interface UploadRoutesDeps {
  readonly uploads: UploadService;
  readonly maxJsonBodyBytes: number;
  readonly limits: { readonly maxUploadBytes: number };
}

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
      422: failure("Invalid request body, or a contentLength over this server's limit."),
      507: failure('The server has no disk room for a file of this size.'),
    },
  });
}

const uploadBytesRoute = createRoute({
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

/** POST /audio/uploads (authenticated): reserve an upload. */
export function uploadReservationRoutes(deps: UploadRoutesDeps): OpenAPIHono<AppEnv> {
  const app = openApiRoutes();
  const route = reserveUploadRoute(deps.limits.maxUploadBytes);
  const reservationBody = route.request.body.content['application/json'].schema;
  serveAndDocument(app, route, async (c) => {
    const { value } = await readJsonObject(c, deps.maxJsonBodyBytes);
    const body = parseBody(reservationBody, value);
    const input = { ...body, filename: baseName(body.filename) };
    const { upload, token } = await deps.uploads.reserve(c.get('principal'), input);
    const origin = c.get('publicBase');
    const reservation: z.output<typeof UploadReservation> = {
      uploadId: upload.id,
      uploadUrl: `${origin}${uploadPath(upload.id)}`,
      expiresAt: new Date(upload.expiresAtMs).toISOString(),
      uploadHeaders: { [UPLOAD_TOKEN_HEADER]: token },
    };
    return c.json(successBody(reservation));
  });
  return app;
}

/**
 * POST or PUT /uploads/:uploadId (the upload token authenticates, not an API key, as with a
 * presigned URL): receive the bytes and answer with the `fileUrl` and `storageKey` to split.
 */
export function uploadTransferRoutes(deps: UploadRoutesDeps): OpenAPIHono<AppEnv> {
  const app = openApiRoutes();
  const methods = ['POST', 'PUT'];
  serveAndDocument(
    app,
    uploadBytesRoute,
    async (c) => {
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
      const received: z.output<typeof UploadResult> = { url: `${origin}${uploadPath(upload.id)}`, key: storageKeyOf(upload.id) };
      return c.json(successBody(received));
    },
    { methods },
  );
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
