// @ts-check
/**
 * Browser module `/web/server-limits.js`: what the server takes and keeps (`GET /v1/limits`),
 * asked once, and those limits in words: the kinds of file, the largest upload, how long stems stay.
 */
import { plural } from './dom.js';

export const MIB = 1024 * 1024;

/**
 * What the server takes and keeps, as `GET /v1/limits` says (set once the page has asked):
 * {maxUploadBytes, maxSourceSeconds, uploadTtlSeconds, stemUrlTtlSeconds, stemRetentionSeconds, contentTypes}.
 * Until then (or if it cannot be asked) the page checks nothing the server checks anyway.
 * @type {{maxUploadBytes: number, maxSourceSeconds: number | null, uploadTtlSeconds: number, stemUrlTtlSeconds: number, stemRetentionSeconds: number, contentTypes: string[]} | null}
 */
let limits = null;

/** The server's limits, or null before they are known. */
export function serverLimits() {
  return limits;
}

/** Asks the server what it takes (no key needed); resolves with the limits, or null when it cannot be reached. */
export async function loadLimits() {
  try {
    const response = await fetch('v1/limits', { cache: 'no-store' });
    if (response.ok) limits = (await response.json()).data;
  } catch (ignored) {
    // The next call that needs the server says it cannot be reached.
  }
  return limits;
}

/** The API's content types as a musician names them. */
const TYPE_NAMES = {
  'audio/mpeg': 'MP3',
  'audio/wav': 'WAV',
  'audio/x-wav': 'WAV',
  'audio/flac': 'FLAC',
  'audio/mp4': 'M4A',
  'audio/x-m4a': 'M4A',
  'audio/webm': 'WebM',
};

/** `MP3, WAV, FLAC, M4A or WebM`: the kinds of file this server takes. */
export function acceptedKinds() {
  const types = limits ? limits.contentTypes : Object.keys(TYPE_NAMES);
  const names = Array.from(
    new Set(
      types.map(function (type) {
        return TYPE_NAMES[type] || type;
      }),
    ),
  );
  return names.length > 1 ? names.slice(0, -1).join(', ') + ' or ' + names[names.length - 1] : names.join('');
}

/** `50 MB`: the largest upload, in the MB the server's option counts (MiB). */
export function uploadLimitWords() {
  return limits ? Math.floor(limits.maxUploadBytes / MIB) + ' MB' : '';
}

/** `7 days` / `36 hours`: a span of seconds in words. */
export function durationWords(seconds) {
  const days = seconds / 86400;
  if (days >= 1 && Number.isInteger(days)) return plural(days, 'day');
  const hours = seconds / 3600;
  if (hours >= 1 && Number.isInteger(hours)) return plural(hours, 'hour');
  return plural(Math.max(1, Math.round(seconds / 60)), 'minute');
}

/** How long stems are kept, in words ("7 days"). */
export function retentionWords() {
  return limits ? durationWords(limits.stemRetentionSeconds) : 'a while';
}

/** What the operator does about a file over the upload limit. */
export const RAISE_LIMIT = 'The server\'s operator can raise it with "stemsplit serve --max-upload-mb N" (or STEMSPLIT_MAX_UPLOAD_MB)';
