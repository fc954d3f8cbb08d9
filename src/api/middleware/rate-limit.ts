import type { MiddlewareHandler } from 'hono';
import { StemsplitError } from '../../errors.js';
import type { AppEnv } from '../env.js';

export interface RateLimitOptions {
  /** Requests per key per window. */
  readonly limit: number;
  readonly windowMs?: number;
  readonly now?: () => number;
}

interface Window {
  startedAt: number;
  count: number;
}

/**
 * A fixed one-minute window per API key, in memory (one process serves the API). Every request
 * counts, valid or not, and each response says where the key stands (RateLimit-* headers).
 */
export function rateLimit(options: RateLimitOptions): MiddlewareHandler<AppEnv> {
  const windowMs = options.windowMs ?? 60_000;
  const now = options.now ?? Date.now;
  const windows = new Map<string, Window>();
  let lastSweep = now();

  const sweep = (at: number) => {
    if (at - lastSweep < windowMs) return;
    lastSweep = at;
    for (const [key, window] of windows) if (at - window.startedAt >= windowMs) windows.delete(key);
  };

  return async function rateLimitMiddleware(c, next) {
    const at = now();
    sweep(at);
    const key = c.get('principal').apiKeyId;
    let window = windows.get(key);
    if (!window || at - window.startedAt >= windowMs) {
      window = { startedAt: at, count: 0 };
      windows.set(key, window);
    }
    window.count++;
    const resetSeconds = Math.max(1, Math.ceil((window.startedAt + windowMs - at) / 1000));
    const headers = {
      'RateLimit-Limit': String(options.limit),
      'RateLimit-Remaining': String(Math.max(0, options.limit - window.count)),
      'RateLimit-Reset': String(resetSeconds),
    };
    if (window.count > options.limit) {
      throw new StemsplitError('RATE_LIMITED', `rate limit of ${options.limit} requests per minute exceeded; retry in ${resetSeconds} s`, {
        headers: { ...headers, 'Retry-After': String(resetSeconds) },
      });
    }
    await next();
    for (const [name, value] of Object.entries(headers)) c.res.headers.set(name, value);
  };
}
