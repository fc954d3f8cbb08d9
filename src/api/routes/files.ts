import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { createRoute, z, type OpenAPIHono } from '@hono/zod-openapi';
import { STEM_CONTENT_TYPES, STEM_EXTENSIONS, STEM_FORMATS, stemExtension } from '../../audio/formats.js';
import { StemsplitError } from '../../errors.js';
import type { SplitService } from '../../services/splits.js';
import type { StemUrlSigner } from '../stem-urls.js';
import { ID_PATTERN, isStemName, type DataStore } from '../../store/index.js';
import type { AppEnv } from '../env.js';
import { binary, failure, openApiRoutes, serveAndDocument } from '../openapi.js';

export interface FileRoutesDeps {
  readonly data: DataStore;
  readonly splits: SplitService;
  readonly signer: StemUrlSigner;
}

/** Parses a single `bytes=a-b` range; undefined means "send it all". */
function parseRange(header: string | undefined, size: number): { start: number; end: number } | undefined {
  const match = header ? /^bytes=(\d*)-(\d*)$/.exec(header.trim()) : null;
  if (!match || (match[1] === '' && match[2] === '')) return undefined;
  let start: number;
  let end: number;
  if (match[1] === '') {
    start = Math.max(0, size - Number(match[2]));
    end = size - 1;
  } else {
    start = Number(match[1]);
    end = match[2] === '' ? size - 1 : Math.min(Number(match[2]), size - 1);
  }
  if (start > end || start >= size) return undefined;
  return { start, end };
}

/** The pseudo-stem name a source download is signed under (no stem has it). */
export const SOURCE = 'source';

/** A stem's body in each format a job may ask for. */
const stemContent = Object.fromEntries(STEM_FORMATS.map((format) => [STEM_CONTENT_TYPES[format], { schema: binary }]));

const downloadStemRoute = createRoute({
  method: 'get',
  path: '/files/{splitId}/{stem}.{format}',
  operationId: 'downloadStem',
  description:
    "Signed, expiring stem download (the URLs in AudioSplit.stems), in the job's outputFormat; the path ends in its file extension (alac and m4a: .m4a, ogg: .ogg, opus: .opus). Supports Range.",
  security: [],
  request: {
    params: z.object({ splitId: z.string(), stem: z.string(), format: z.enum(STEM_EXTENSIONS) }),
    query: z.object({
      expires: z.string().openapi({ type: 'integer' }),
      keyId: z.string().openapi({ description: 'The API key the URL was issued to (an id, not a secret): once it is revoked, the URL answers 401.' }),
      signature: z.string(),
    }),
  },
  responses: {
    200: { description: 'The stem.', content: stemContent },
    206: { description: 'Part of the stem.', content: stemContent },
    401: failure('Invalid or expired signature, or the key it was issued to was revoked.'),
    404: failure('No such stem, or it is past retention.'),
  },
});

/**
 * GET /files/:splitId/:stem.:format?expires&signature — the signed stem downloads (`format` the
 * extension of the job's `outputFormat`); and
 * GET /files/:splitId/source?… — the source the stems came from, kept as long as they are (A/B),
 * served by the same route and not documented. The router matches the last segment whole, so a
 * stem name or format it does not know is a 404, as for any file not kept.
 */
export function fileRoutes(deps: FileRoutesDeps): OpenAPIHono<AppEnv> {
  const app = openApiRoutes();
  serveAndDocument(
    app,
    downloadStemRoute,
    async (c) => {
      const splitId = c.req.param('splitId');
      const file = c.req.param('file');
      const named = /^(.+)\.([a-z0-9]+)$/.exec(file);
      const stem = file === SOURCE ? SOURCE : (named?.[1] ?? '');
      const format = file === SOURCE ? undefined : named?.[2];
      if (!ID_PATTERN.test(splitId) || (stem !== SOURCE && !isStemName(stem))) throw new StemsplitError('NOT_FOUND', 'no such stem');
      const query = { expires: c.req.query('expires'), keyId: c.req.query('keyId'), signature: c.req.query('signature') };
      const keyId = deps.signer.verify(splitId, stem, query, deps.data.clock.now());
      if (!keyId) throw new StemsplitError('UNAUTHORIZED', 'the stem URL is invalid or has expired; GET the split again for fresh URLs');
      const kept = await (stem === SOURCE ? deps.splits.sourceFile(splitId) : deps.splits.stemFile(splitId, stem));
      if (!kept) throw new StemsplitError('NOT_FOUND', `the ${stem === SOURCE ? 'source' : 'stem'} is no longer kept`);
      const { split, path } = kept;
      // The key the URL was issued to must still work, and still be the job's account's.
      const holder = await deps.data.accounts.activeKey(keyId);
      if (!holder || holder.accountId !== split.accountId) {
        throw new StemsplitError('UNAUTHORIZED', 'the API key this stem URL was issued to has been revoked; sign in again and GET the split for fresh URLs');
      }
      c.set('principal', holder);
      const extension = stemExtension(split.outputFormat);
      if (stem !== SOURCE && format !== extension) throw new StemsplitError('NOT_FOUND', `this split's stems are .${extension} files`);
      const info = await stat(path).catch(() => undefined);
      if (!info) throw new StemsplitError('NOT_FOUND', `the ${stem === SOURCE ? 'source' : 'stem'} is no longer kept`);

      const base = split.filename.replace(/\.[^.]*$/, '').replace(/[^\w .()-]+/g, '_') || 'audio';
      const sourceExtension = /\.[A-Za-z0-9]{1,5}$/.exec(split.filename)?.[0] ?? '';
      const headers: Record<string, string> = {
        'content-type': stem === SOURCE ? 'application/octet-stream' : STEM_CONTENT_TYPES[split.outputFormat],
        'accept-ranges': 'bytes',
        'cache-control': 'private, max-age=3600',
        'content-disposition': stem === SOURCE ? `attachment; filename="${base}${sourceExtension}"` : `attachment; filename="${base} - ${stem}.${extension}"`,
      };
      const range = parseRange(c.req.header('range'), info.size);
      const start = range?.start ?? 0;
      const end = range?.end ?? info.size - 1;
      headers['content-length'] = String(end - start + 1);
      if (range) headers['content-range'] = `bytes ${start}-${end}/${info.size}`;
      const body = Readable.toWeb(createReadStream(path, { start, end })) as ReadableStream;
      return new Response(body, { status: range ? 206 : 200, headers });
    },
    { path: '/files/:splitId/:file' },
  );
  return app;
}
