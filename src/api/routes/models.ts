import { Hono } from 'hono';
import type { ModelService } from '../../services/models.js';
import { successBody } from '../envelope.js';
import type { AppEnv } from '../env.js';

/** GET /models: the installed and pullable models with their terms (an addition to the v1 spec). */
export function modelRoutes(models: ModelService): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.get('/models', (c) => c.json(successBody({ items: models.list() })));
  return app;
}
