import { Hono } from 'hono';
import type { AccountService } from '../../services/accounts.js';
import { successBody } from '../envelope.js';
import type { AppEnv } from '../env.js';

export function creditRoutes(accounts: AccountService): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.get('/credits', async (c) => c.json(successBody({ balance: await accounts.balance(c.get('principal')), unit: 'seconds' as const })));
  return app;
}
