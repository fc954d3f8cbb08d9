/**
 * The OpenAPI 3.1 description of what this server implements, generated from the app itself:
 * each route is declared once with `createRoute`, beside its handler in routes/, and that one
 * declaration both serves the requests and documents them. Tests validate real responses
 * against the served document, so a route whose answers drift from its schema fails the suite.
 */
import { OpenAPIHono, z, type RouteConfig, type RouteHandler } from '@hono/zod-openapi';
import type { Context, Handler, MiddlewareHandler } from 'hono';
import { VERSION } from '../version.js';
import type { AppEnv } from './env.js';
import { invalidInput } from './parse-body.js';
import { envelopeOf, ErrorEnvelope } from './schemas.js';
import { WebhookEvent } from './split-schemas.js';

export const json = <T extends z.ZodType>(schema: T) => ({ 'application/json': { schema } });
export const ok = <T extends z.ZodType>(description: string, data: T) => ({ description, content: json(envelopeOf(data)) });
export const failure = (description: string) => ({ description, content: json(ErrorEnvelope) });
export const binary = z.string().openapi({ format: 'binary' });
export const integerHeader = (description: string) => ({ schema: { type: 'integer' as const }, description });

/**
 * An app for v1 routes: a request part that fails its zod schema throws the project's 422
 * VALIDATION_ERROR sentence (schemas.ts) to the one error mapper, as a body that fails does.
 */
export function openApiRoutes(): OpenAPIHono<AppEnv> {
  return new OpenAPIHono<AppEnv>({
    defaultHook: (result) => {
      if (!result.success) throw invalidInput(result.error, (result as { data?: unknown }).data);
    },
  });
}

export interface OwnInputServing<P extends string> {
  /** Run before the handler, as a route's `middleware` would. */
  readonly middleware?: readonly MiddlewareHandler<AppEnv>[];
  /** The methods served; the documented one by default. */
  readonly methods?: readonly string[];
  /** The router's pattern, where it cannot be the documented path's. */
  readonly path?: P;
}

/** The router's pattern of a declared path, as a type: `/a/{b}` is `/a/:b`. */
type RoutingPathOf<R extends RouteConfig> = Parameters<RouteHandler<R, AppEnv>>[0] extends Context<AppEnv, infer P> ? P : string;

/**
 * Serves and documents `route` as `OpenAPIHono.openapi` does, but validates nothing on the way:
 * the handler reads the request itself. A JSON body is read whatever its content type, within
 * the server's size limit and with its own sentences (validate.ts); an upload body is streamed;
 * a missing upload token is a 401. zod's validators would answer 400, 415 or 422 instead.
 */
export function serveAndDocument<R extends RouteConfig & { getRoutingPath(): string }, P extends string = RoutingPathOf<R>>(
  app: OpenAPIHono<AppEnv>,
  route: R,
  handler: Handler<AppEnv, P>,
  serving: OwnInputServing<P> = {},
): void {
  app.openAPIRegistry.registerPath(route);
  const path = serving.path ?? route.getRoutingPath();
  app.on([...(serving.methods ?? [route.method.toUpperCase()])], [path], ...(serving.middleware ?? []), handler as Handler<AppEnv>);
}

const WEBHOOK_DESCRIPTION =
  'Sent when a job reaches succeeded or failed. Header Stemsplit-Signature: t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<raw body>"> keyed with the account\'s webhook signing secret; Stemsplit-Delivery: a delivery id (the same on retries). Retried with exponential backoff until a 2xx, for about 24 hours.';

/** The description of `v1`, an app with every v1 route mounted (call it once, after the last). */
export function describeApi(v1: OpenAPIHono<AppEnv>) {
  const registry = v1.openAPIRegistry;
  registry.registerComponent('securitySchemes', 'bearer', { type: 'http', scheme: 'bearer' });
  registry.registerWebhook({
    method: 'post',
    path: 'audio.split.completed',
    description: WEBHOOK_DESCRIPTION,
    request: { body: { content: json(WebhookEvent) } },
    responses: { 200: { description: 'Any 2xx acknowledges the delivery.' } },
  });
  return Object.freeze(
    v1.getOpenAPI31Document({
      openapi: '3.1.0',
      info: {
        title: 'stemsplit stem-splitting API',
        version: VERSION,
        description: 'The v1 stem-splitting API served by a self-hosted stemsplit. v1 is stable.',
      },
      servers: [{ url: '/v1' }],
      security: [{ bearer: [] }],
    }),
  );
}
