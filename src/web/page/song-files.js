// @ts-check
/**
 * Browser module `/web/song-files.js`: the songs a musician chooses, before anything is sent: the
 * content type the API takes for each, why one cannot be sent at all, and its length as the browser reads it.
 */
import { acceptedKinds, MIB, RAISE_LIMIT, serverLimits, uploadLimitWords } from './server-limits.js';

const CONTENT_TYPES = {
  mp3: 'audio/mpeg',
  wav: 'audio/wav',
  wave: 'audio/wav',
  flac: 'audio/flac',
  m4a: 'audio/mp4',
  mp4: 'audio/mp4',
  aac: 'audio/mp4',
  webm: 'audio/webm',
  weba: 'audio/webm',
};
const TYPE_ALIASES = {
  'audio/mp3': 'audio/mpeg',
  'audio/mpeg': 'audio/mpeg',
  'audio/wav': 'audio/wav',
  'audio/wave': 'audio/wav',
  'audio/x-wav': 'audio/wav',
  'audio/vnd.wave': 'audio/wav',
  'audio/flac': 'audio/flac',
  'audio/x-flac': 'audio/flac',
  'audio/mp4': 'audio/mp4',
  'audio/x-m4a': 'audio/mp4',
  'audio/m4a': 'audio/mp4',
  'audio/aac': 'audio/mp4',
  'audio/webm': 'audio/webm',
  'video/webm': 'audio/webm',
};

/** The content type of a file with this extension (`flac` → `audio/flac`), or a generic one. */
export function typeOfExtension(extension) {
  return CONTENT_TYPES[String(extension).toLowerCase()] || 'application/octet-stream';
}

/** The content type the API accepts for this file, or undefined when it takes none. */
export function contentTypeOf(file) {
  const dot = file.name.lastIndexOf('.');
  const type = TYPE_ALIASES[file.type] || (dot < 0 ? undefined : CONTENT_TYPES[file.name.slice(dot + 1).toLowerCase()]);
  const limits = serverLimits();
  return type && (!limits || limits.contentTypes.indexOf(type) >= 0) ? type : undefined;
}

/** Why a file cannot be sent at all, before anything reaches the server. */
export function fileProblem(file) {
  if (!contentTypeOf(file)) return '"' + file.name + '" is not a file type stemsplit takes. Use ' + acceptedKinds() + '.';
  if (file.size === 0) return '"' + file.name + '" is empty.';
  const limits = serverLimits();
  if (limits && file.size > limits.maxUploadBytes) {
    return (
      '"' +
      file.name +
      '" is ' +
      (file.size / MIB).toFixed(1) +
      ' MB; this server takes files up to ' +
      uploadLimitWords() +
      '. ' +
      RAISE_LIMIT +
      '; or try an MP3 of the song.'
    );
  }
  return undefined;
}

/**
 * A song's length in whole seconds as the browser reads it, rounded up as the server counts
 * credits; undefined when the browser can't play the file's kind.
 * @param {File} file
 * @returns {Promise<number | undefined>}
 */
export function songSeconds(file) {
  return new Promise(function (resolve) {
    const audio = document.createElement('audio');
    const url = URL.createObjectURL(file);
    const done = function (/** @type {number | undefined} */ seconds) {
      clearTimeout(timer);
      URL.revokeObjectURL(url);
      audio.removeAttribute('src');
      resolve(seconds);
    };
    const timer = setTimeout(function () {
      done(undefined);
    }, 5000);
    audio.preload = 'metadata';
    audio.onloadedmetadata = function () {
      done(Number.isFinite(audio.duration) ? Math.ceil(audio.duration) : undefined);
    };
    audio.onerror = function () {
      done(undefined);
    };
    audio.src = url;
  });
}
