/**
 * The HTTP application: routes under /v1 and the OpenAPI description made from them, one error
 * mapper, one not-found answer. It is given its services; it builds none and knows nothing of
 * SQL files or ONNX.
 */
import { Hono } from 'hono';
import { OpenAPIHono } from '@hono/zod-openapi';
import type { SplitService } from '../services/splits.js';
import type { StemUrlSigner } from './stem-urls.js';
import type { AccountService } from '../services/accounts.js';
import type { ModelService } from '../services/models.js';
import type { PeopleService } from '../services/people.js';
import type { UploadService } from '../services/uploads.js';
import type { DataStore } from '../store/index.js';
import { errorResponse } from './envelope.js';
import type { AppEnv } from './env.js';
import { accessLog } from './middleware/access-log.js';
import { bearerAuth } from './middleware/auth.js';
import { describeApi } from './openapi.js';
import type { ServerLimitsBody } from './schemas.js';
import { creditRoutes } from './routes/credits.js';
import { fileRoutes } from './routes/files.js';
import { modelRoutes } from './routes/models.js';
import { inviteExchangeRoutes, peopleRoutes } from './routes/people.js';
import { serverRoutes } from './routes/server.js';
import { splitRoutes } from './routes/splits.js';
import { uploadReservationRoutes, uploadTransferRoutes } from './routes/uploads.js';
import { describeError, isStemsplitError, StemsplitError } from '../errors.js';
import { OutageLog } from '../store/index.js';

export interface AppDeps {
  readonly data: DataStore;
  readonly accounts: AccountService;
  readonly people: PeopleService;
  readonly models: ModelService;
  readonly uploads: UploadService;
  readonly splits: SplitService;
  readonly signer: StemUrlSigner;
  readonly enqueue: (splitId: string) => void;
  /** A job was cancelled through the API (its runner and the webhook dispatcher of this process are told). */
  readonly cancelled?: (splitId: string) => void;
  readonly rateLimitPerMinute: number;
  readonly maxJsonBodyBytes: number;
  /** What this server accepts and keeps (`GET /v1/limits`); the upload routes and the OpenAPI document follow it. */
  readonly limits: ServerLimitsBody;
  readonly version: string;
  /** `--public-url`: the base of handed-out URLs when clients reach the server through a proxy. */
  readonly publicUrl?: string | undefined;
  /** Extra routes mounted at `/` (the web page), outside /v1. */
  readonly extraRoutes?: Hono<AppEnv>;
  readonly log?: (line: string) => void;
  /** Receives the access log, one line per request (middleware/access-log.ts); unset, none is kept. */
  readonly accessLog?: (line: string) => void;
}

export function createApp(deps: AppDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const v1 = new OpenAPIHono<AppEnv>();
  const outage = new OutageLog('api', 'requests that need it get 503 with Retry-After: 5', deps.log);
  if (deps.accessLog) app.use('*', accessLog({ write: deps.accessLog }));

  // An answer given before the request body arrived (a 401 or 404 before reading it) must close
  // the connection: @hono/node-server drains a leftover body for at most 500 ms and then drops
  // the socket, which a client that was told "keep-alive" reuses and loses its next request on.
  app.use('*', async (c, next) => {
    await next();
    const incoming = (c.env as { incoming?: { complete: boolean } } | undefined)?.incoming;
    if (incoming && !incoming.complete) c.res.headers.set('connection', 'close');
  });

  v1.use('*', async (c, next) => {
    c.set('publicBase', deps.publicUrl ?? new URL(c.req.url).origin);
    await next();
  });

  // Unauthenticated: the description, health and limits, the presigned-style upload and download URLs.
  // The description names the API's own address, so tools reach it under a proxy's path prefix too.
  // Registered before the authenticated routes' middleware; the document is made once they are all mounted.
  v1.get('/openapi.json', (c) => c.json({ ...openApiDocument, servers: [{ url: `${c.get('publicBase')}/v1` }] }));
  v1.route('/', serverRoutes(deps));
  v1.route('/', uploadTransferRoutes(deps));
  v1.route('/', fileRoutes(deps));
  v1.route('/', inviteExchangeRoutes(deps.data));

  const authed = new OpenAPIHono<AppEnv>();
  authed.use(
    '*',
    bearerAuth({
      // Every authenticated request asks the database first: its answer ends an outage.
      authenticate: async (key) => {
        const principal = await deps.accounts.authenticate(key);
        outage.answered();
        return principal;
      },
      refusal: (key) => deps.accounts.refusal(key),
    }),
  );
  authed.route('/', uploadReservationRoutes(deps));
  authed.route('/', splitRoutes(deps));
  authed.route('/', creditRoutes(deps.accounts));
  authed.route('/', modelRoutes(deps.models));
  authed.route('/', peopleRoutes(deps.people));
  v1.route('/', authed);
  const openApiDocument = describeApi(v1);

  app.route('/v1', v1);
  if (deps.extraRoutes) app.route('/', deps.extraRoutes);

  app.notFound(() => errorResponse(new StemsplitError('NOT_FOUND', 'no such endpoint')));
  app.onError((error, c) => {
    const response = errorResponse(error);
    if (isStemsplitError(error) && error.code === 'DATABASE_UNAVAILABLE') outage.failed(error);
    // A refusal the server explains (a full disk) is one line; only a bug gets its stack.
    else if (response.status >= 500 && isStemsplitError(error))
      deps.log?.(`${c.req.method} ${new URL(c.req.url).pathname}: ${response.status} ${describeError(error)}`);
    else if (response.status >= 500) deps.log?.(`error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    return response;
  });
  return app;
}
