/**
 * Signed, expiring stem download URLs (in the manner of S3 presigned URLs): anyone holding the
 * URL may download until it expires, or until the API key it was issued to is revoked: the URL
 * names that key (`keyId`, an id, not a secret) and the signature covers it, so the file route
 * checks the key as it serves. Nothing else about the server is exposed by it.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { StemFormat } from '../audio/formats.js';
import { ID_PATTERN } from '../store/index.js';
import { sourcePath, stemPath } from './paths.js';

/** The query of a signed URL, as a request carries it. */
export interface SignedQuery {
  readonly expires: string | undefined;
  readonly keyId: string | undefined;
  readonly signature: string | undefined;
}

export interface StemUrlSigner {
  /** A stem's URL for the holder of API key `apiKeyId` (the key that asked, or the job's own for its webhook). */
  url(baseUrl: string, splitId: string, stem: string, format: StemFormat, nowMs: number, apiKeyId: string): string;
  /** The signed URL of the job's source (A/B against the stems), signed like a stem named `source`. */
  sourceUrl(baseUrl: string, splitId: string, nowMs: number, apiKeyId: string): string;
  /** The API key a URL was issued to, when its signature holds and it has not expired; otherwise undefined. */
  verify(splitId: string, stem: string, query: SignedQuery, nowMs: number): string | undefined;
}

export function createStemUrlSigner(key: Buffer, ttlSeconds: number): StemUrlSigner {
  const sign = (splitId: string, stem: string, expires: number, apiKeyId: string) =>
    createHmac('sha256', key).update(`stem\n${splitId}\n${stem}\n${expires}\n${apiKeyId}`).digest('hex');
  const signed = (path: string, splitId: string, stem: string, nowMs: number, apiKeyId: string) => {
    const expires = Math.floor(nowMs / 1000) + ttlSeconds;
    return `${path}?expires=${expires}&keyId=${apiKeyId}&signature=${sign(splitId, stem, expires, apiKeyId)}`;
  };
  return Object.freeze({
    url(baseUrl: string, splitId: string, stem: string, format: StemFormat, nowMs: number, apiKeyId: string): string {
      return baseUrl + signed(stemPath(splitId, stem, format), splitId, stem, nowMs, apiKeyId);
    },
    sourceUrl(baseUrl: string, splitId: string, nowMs: number, apiKeyId: string): string {
      return baseUrl + signed(sourcePath(splitId), splitId, 'source', nowMs, apiKeyId);
    },
    verify(splitId: string, stem: string, { expires, keyId, signature }: SignedQuery, nowMs: number): string | undefined {
      if (!expires || !signature || !keyId || !/^\d{1,12}$/.test(expires) || !/^[0-9a-f]{64}$/.test(signature) || !ID_PATTERN.test(keyId)) return undefined;
      const expected = Buffer.from(sign(splitId, stem, Number(expires), keyId), 'hex');
      if (!timingSafeEqual(expected, Buffer.from(signature, 'hex'))) return undefined;
      return Number(expires) * 1000 > nowMs ? keyId : undefined;
    },
  });
}
