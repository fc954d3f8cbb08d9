import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { successBody } from '../envelope.js';
import type { AppEnv } from '../env.js';
import { ok, openApiRoutes } from '../openapi.js';
import { Health, ServerLimits, type ServerLimitsBody } from '../schemas.js';

const healthRoute = createRoute({
  method: 'get',
  path: '/health',
  operationId: 'health',
  security: [],
  responses: { 200: ok('The server is up.', Health) },
});

const limitsRoute = createRoute({
  method: 'get',
  path: '/limits',
  operationId: 'getLimits',
  description:
    'What this server accepts and how long it keeps what it makes: its upload size limit, stem retention, accepted content types, stem URL lifetime (an addition to the v1 spec).',
  security: [],
  responses: { 200: ok("The server's limits.", ServerLimits) },
});

export interface ServerRoutesDeps {
  readonly version: string;
  readonly limits: ServerLimitsBody;
}

/**
 * GET /health and GET /limits, unauthenticated: the web page says what the server takes
 * before a key is given.
 */
export function serverRoutes(deps: ServerRoutesDeps): OpenAPIHono<AppEnv> {
  const app = openApiRoutes();
  app.openapi(healthRoute, (c) => c.json(successBody({ status: 'ok' as const, version: deps.version }), 200));
  app.openapi(limitsRoute, (c) => c.json(successBody(deps.limits), 200));
  return app;
}
