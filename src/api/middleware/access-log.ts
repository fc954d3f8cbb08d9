import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from '../env.js';

export interface AccessLogOptions {
  /** Receives one line per request, without its newline. */
  readonly write: (line: string) => void;
  readonly now?: () => number;
}

/**
 * Anything in a path that looks like a secret (an API key, an invite, a 64-hex signature), in
 * case a client put one there: the log must never hold a working credential.
 */
const SECRET_IN_PATH = /(sk_stemsplit_|inv_stemsplit_)[A-Za-z0-9_-]+|\b[0-9a-f]{64}\b/g;

/**
 * One line per request, written once its answer is known: the time it came in (ISO), the account
 * of its key (`-` without one), the method, the path without its query string (which carries stem
 * URLs' signatures), the status and the milliseconds it took to answer (a download's body may
 * still be streaming). Keys travel in headers, which are never logged.
 */
export function accessLog(options: AccessLogOptions): MiddlewareHandler<AppEnv> {
  const now = options.now ?? Date.now;
  return async function accessLogMiddleware(c, next) {
    const started = now();
    try {
      await next();
    } finally {
      const path = new URL(c.req.url).pathname.replace(SECRET_IN_PATH, (_, prefix: string | undefined) => `${prefix ?? ''}…`);
      const account = c.get('principal')?.accountName ?? '-';
      options.write(`${new Date(started).toISOString()} ${account} ${c.req.method} ${path} ${c.res.status} ${Math.round(now() - started)}ms`);
    }
  };
}
