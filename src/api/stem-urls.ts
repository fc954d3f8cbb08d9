/**
 * Signed, expiring stem download URLs (in the manner of S3 presigned URLs): anyone holding the
 * URL may download until it expires; nothing else about the server is exposed by it.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { StemFormat } from '../audio/formats.js';
import { sourcePath, stemPath } from './paths.js';

export interface StemUrlSigner {
  url(baseUrl: string, splitId: string, stem: string, format: StemFormat, nowMs: number): string;
  /** The signed URL of the job's source (A/B against the stems), signed like a stem named `source`. */
  sourceUrl(baseUrl: string, splitId: string, nowMs: number): string;
  verify(splitId: string, stem: string, expires: string | undefined, signature: string | undefined, nowMs: number): boolean;
}

export function createStemUrlSigner(key: Buffer, ttlSeconds: number): StemUrlSigner {
  const sign = (splitId: string, stem: string, expires: number) =>
    createHmac('sha256', key).update(`stem\n${splitId}\n${stem}\n${expires}`).digest('hex');
  return Object.freeze({
    url(baseUrl: string, splitId: string, stem: string, format: StemFormat, nowMs: number): string {
      const expires = Math.floor(nowMs / 1000) + ttlSeconds;
      return `${baseUrl}${stemPath(splitId, stem, format)}?expires=${expires}&signature=${sign(splitId, stem, expires)}`;
    },
    sourceUrl(baseUrl: string, splitId: string, nowMs: number): string {
      const expires = Math.floor(nowMs / 1000) + ttlSeconds;
      return `${baseUrl}${sourcePath(splitId)}?expires=${expires}&signature=${sign(splitId, 'source', expires)}`;
    },
    verify(splitId: string, stem: string, expires: string | undefined, signature: string | undefined, nowMs: number): boolean {
      if (!expires || !signature || !/^\d{1,12}$/.test(expires) || !/^[0-9a-f]{64}$/.test(signature)) return false;
      const expected = Buffer.from(sign(splitId, stem, Number(expires)), 'hex');
      if (!timingSafeEqual(expected, Buffer.from(signature, 'hex'))) return false;
      return Number(expires) * 1000 > nowMs;
    },
  });
}
