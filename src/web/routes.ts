/**
 * The web page of `stemsplit serve`: `/` and its assets under `/web/`. The page is a client of
 * the public v1 API like any other; these routes only hand out static, embedded files.
 */
import { createHash } from 'node:crypto';
import { Hono } from 'hono';
import type { AppEnv } from '../api/env.js';
import { pageHtml, webAssets, type Asset } from './assets/index.js';

/** Everything the page loads comes from this origin; downloads are blob: URLs the page makes. */
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "media-src 'self' blob:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

interface ServedAsset extends Asset {
  readonly etag: string;
}

function withEtag(asset: Asset): ServedAsset {
  return { ...asset, etag: `"${createHash('sha256').update(asset.body).digest('base64url').slice(0, 22)}"` };
}

/** Revalidated on every load (`no-cache` + ETag): a new stemsplit version never meets stale modules. */
function serveAsset(asset: ServedAsset, ifNoneMatch: string | undefined): Response {
  const headers = new Headers({
    'content-type': asset.contentType,
    'cache-control': 'no-cache',
    etag: asset.etag,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'content-security-policy': CONTENT_SECURITY_POLICY,
  });
  if (ifNoneMatch === asset.etag) return new Response(null, { status: 304, headers });
  return new Response(asset.body, { status: 200, headers });
}

export function webRoutes(): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const page = withEtag(pageHtml);
  const assets = new Map(Object.entries(webAssets).map(([name, asset]) => [name, withEtag(asset)]));

  app.get('/', (c) => serveAsset(page, c.req.header('if-none-match')));
  app.get('/web/:name', async (c, next) => {
    const asset = assets.get(c.req.param('name'));
    if (!asset) return next();
    return serveAsset(asset, c.req.header('if-none-match'));
  });
  return app;
}
