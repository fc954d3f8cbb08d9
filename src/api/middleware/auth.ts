import type { MiddlewareHandler } from 'hono';
import { StemsplitError } from '../../errors.js';
import type { Principal } from '../../store/index.js';
import type { AppEnv } from '../env.js';

export interface BearerAuthOptions {
  authenticate(key: string): Promise<Principal | undefined>;
}

/** `Authorization: Bearer <key>`; anything else is 401 UNAUTHORIZED. */
export function bearerAuth(options: BearerAuthOptions): MiddlewareHandler<AppEnv> {
  return async function bearerAuthMiddleware(c, next) {
    const header = c.req.header('authorization') ?? '';
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    const principal = match?.[1] ? await options.authenticate(match[1]) : undefined;
    if (!principal) {
      throw new StemsplitError('UNAUTHORIZED', header ? 'the API key is invalid or revoked' : 'missing Authorization: Bearer <API key>');
    }
    c.set('principal', principal);
    await next();
  };
}
