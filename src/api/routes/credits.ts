import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import type { AccountService } from '../../services/accounts.js';
import { successBody } from '../envelope.js';
import type { AppEnv } from '../env.js';
import { failure, ok, openApiRoutes } from '../openapi.js';
import { CreditBalance } from '../schemas.js';

const getCreditsRoute = createRoute({
  method: 'get',
  path: '/credits',
  operationId: 'getCredits',
  responses: { 200: ok('The balance.', CreditBalance), 401: failure('Missing or invalid API key.') },
});

export function creditRoutes(accounts: AccountService): OpenAPIHono<AppEnv> {
  const app = openApiRoutes();
  app.openapi(getCreditsRoute, async (c) => c.json(successBody({ balance: await accounts.balance(c.get('principal')), unit: 'seconds' as const }), 200));
  return app;
}
