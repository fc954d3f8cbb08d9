import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import type { ModelService } from '../../services/models.js';
import { successBody } from '../envelope.js';
import type { AppEnv } from '../env.js';
import { failure, ok, openApiRoutes } from '../openapi.js';
import { ListModelsQuery, ModelList, PresetList } from '../schemas.js';

const listModelsRoute = createRoute({
  method: 'get',
  path: '/models',
  operationId: 'listModels',
  description:
    'The models this server has and can pull, what each is for, which stemModel runs which, which a job may name, how fast each ran here, and the terms of their weights and their published scores; `?task=` keeps the models of one task, `?sort=sdr` orders by published SDR (an addition to the v1 spec).',
  request: { query: ListModelsQuery },
  responses: { 200: ok('The models.', ModelList), 401: failure('Missing or invalid API key.') },
});

const listPresetsRoute = createRoute({
  method: 'get',
  path: '/presets',
  operationId: 'listPresets',
  description:
    "The named ensembles a split request's `preset` takes: python-audio-separator's curated presets and the operator's own, each with its models (installed here or not, with their terms), algorithm and weights (an addition to the v1 spec).",
  responses: { 200: ok('The presets.', PresetList), 401: failure('Missing or invalid API key.') },
});

/** GET /models: the installed and pullable models with their terms; GET /presets: the named ensembles (additions to the v1 spec). */
export function modelRoutes(models: ModelService): OpenAPIHono<AppEnv> {
  const app = openApiRoutes();
  app.openapi(listModelsRoute, async (c) => c.json(successBody(await models.list(c.req.valid('query'))), 200));
  app.openapi(listPresetsRoute, (c) => c.json(successBody({ items: models.presets() }), 200));
  return app;
}
