import { Hono } from 'hono';
import { StemsplitError } from '../../errors.js';
import type { DataStore } from '../../store/index.js';
import { successBody } from '../envelope.js';
import type { AppEnv } from '../env.js';

export function creditRoutes(data: DataStore): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.get('/credits', (c) => {
    const account = data.accounts.byId(c.get('principal').accountId);
    if (!account) throw new StemsplitError('UNAUTHORIZED', 'the API key has no account');
    return c.json(successBody({ balance: account.balance, unit: 'seconds' as const }));
  });
  return app;
}
