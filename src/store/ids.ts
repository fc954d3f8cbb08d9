import { randomBytes } from 'node:crypto';

/** Crockford base32: sorts the same as a string and as a number, no ambiguous letters. */
const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

function encodeTime(ms: number): string {
  let out = '';
  let value = ms;
  for (let i = 0; i < 10; i++) {
    out = ALPHABET[value % 32] + out;
    value = Math.floor(value / 32);
  }
  return out;
}

function encodeRandom(bytes: Buffer): string {
  let out = '';
  for (const byte of bytes) out += ALPHABET[byte & 31];
  return out;
}

/**
 * A prefixed, time-sortable, random identifier (ULID layout: 48-bit milliseconds then 80 random bits),
 * e.g. `split_01JD3X7M0Q8ZB6W9V4K2N5R7TC`.
 */
export function newId(prefix: string, now: number = Date.now()): string {
  return `${prefix}_${encodeTime(now)}${encodeRandom(randomBytes(16))}`;
}

export const ID_PATTERN = /^[a-z]+_[0-9A-HJKMNP-TV-Z]{26}$/;
