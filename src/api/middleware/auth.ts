import type { MiddlewareHandler } from 'hono';
import { StemsplitError } from '../../errors.js';
import type { Principal } from '../../store/index.js';
import type { AppEnv } from '../env.js';

export interface BearerAuthOptions {
  authenticate(key: string): Promise<Principal | undefined>;
  /** Why a key was refused: once this server's and revoked, or never a key of it. */
  refusal(key: string): Promise<'revoked' | 'unknown'>;
}

const REFUSALS = {
  revoked: 'this API key was revoked',
  unknown: 'this is not an API key of this server',
} as const;

/** `Authorization: Bearer <key>`; anything else is 401 UNAUTHORIZED. */
export function bearerAuth(options: BearerAuthOptions): MiddlewareHandler<AppEnv> {
  return async function bearerAuthMiddleware(c, next) {
    const header = c.req.header('authorization') ?? '';
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    const key = match?.[1];
    const principal = key ? await options.authenticate(key) : undefined;
    if (!principal) {
      if (!header) throw new StemsplitError('UNAUTHORIZED', 'missing Authorization: Bearer <API key>');
      throw new StemsplitError('UNAUTHORIZED', key ? REFUSALS[await options.refusal(key)] : 'malformed Authorization header: send Bearer <API key>');
    }
    c.set('principal', principal);
    await next();
  };
}
