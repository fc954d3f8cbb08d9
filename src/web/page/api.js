// @ts-check
/**
 * Browser module `/web/api.js`: calls the v1 API with the page's key and turns every failure
 * into a sentence a musician understands.
 */
const MIB = 1024 * 1024;

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

const RAISE_LIMIT = 'The server\'s operator can raise it with "stemsplit serve --max-upload-mb N" (or STEMSPLIT_MAX_UPLOAD_MB)';

/**
 * A failed call: HTTP status (0 when the server could not be reached), API code and message, and
 * `call`, the name of the API method that failed (set by `createApi`), for explainError.
 */
export class ApiError extends Error {
  constructor(status, code, message, retryAfterSeconds) {
    super(message);
    this.status = status;
    this.code = code;
    this.retryAfterSeconds = retryAfterSeconds;
    /** @type {string | undefined} */
    this.call = undefined;
  }
}

/**
 * The methods of `api`, each naming itself in the ApiError it throws.
 * @template {Record<string, (...args: any[]) => Promise<any>>} T
 * @param {T} methods
 * @returns {T}
 */
function namingFailures(methods) {
  const named = /** @type {Record<string, (...args: any[]) => Promise<any>>} */ ({});
  for (const name of Object.keys(methods)) {
    named[name] = function () {
      return methods[name].apply(null, arguments).catch(function (/** @type {unknown} */ error) {
        if (error instanceof ApiError) error.call = name;
        throw error;
      });
    };
  }
  return /** @type {T} */ (named);
}

function retryAfterOf(headers) {
  const value = Number(headers.get('retry-after'));
  return Number.isFinite(value) && value >= 0 ? value : undefined;
}

async function errorFromResponse(response) {
  /** @type {import('../../errors.js').ApiErrorCode | 'NETWORK'} */
  let code = 'SERVER_ERROR';
  let message = response.statusText;
  try {
    const body = await response.json();
    if (body && body.error) {
      code = body.error.code;
      message = body.error.message;
    }
  } catch (ignored) {
    // Not JSON (a proxy's page, a cut connection): the status says enough.
  }
  return new ApiError(response.status, code, message, retryAfterOf(response.headers));
}

export function createApi(getKey) {
  async function request(method, path, body, extraHeaders) {
    const headers = Object.assign({ authorization: 'Bearer ' + getKey() }, extraHeaders || {});
    /** @type {RequestInit} */
    const init = { method: method, headers: headers, cache: 'no-store' };
    if (body !== undefined) {
      headers['content-type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    let response;
    try {
      // Relative to the page: served under a proxy's path prefix, the page calls the API under it too.
      response = await fetch('v1' + path, init);
    } catch (error) {
      throw new ApiError(0, 'NETWORK', String(error));
    }
    if (!response.ok) throw await errorFromResponse(response);
    return (await response.json()).data;
  }

  /** Sends the bytes to the reservation's URL; XHR because fetch reports no upload progress. */
  function uploadBytes(url, uploadHeaders, file, contentType, onProgress) {
    return new Promise(function (resolve, reject) {
      const xhr = new XMLHttpRequest();
      xhr.open('POST', url);
      for (const name of Object.keys(uploadHeaders)) xhr.setRequestHeader(name, uploadHeaders[name]);
      xhr.setRequestHeader('content-type', contentType);
      xhr.upload.onprogress = function (event) {
        if (event.lengthComputable) onProgress(event.loaded / event.total);
      };
      xhr.onerror = function () {
        reject(new ApiError(0, 'NETWORK', 'upload failed'));
      };
      xhr.onload = function () {
        let body;
        try {
          body = JSON.parse(xhr.responseText);
        } catch (ignored) {
          body = undefined;
        }
        if (xhr.status === 200 && body && body.success) return resolve(body.data);
        const error = body && body.error ? body.error : { code: 'SERVER_ERROR', message: xhr.statusText };
        reject(new ApiError(xhr.status, error.code, error.message));
      };
      xhr.send(file);
    });
  }

  return namingFailures({
    credits: function () {
      return request('GET', '/credits');
    },
    models: function () {
      return request('GET', '/models');
    },
    reserveUpload: function (file, contentType) {
      return request('POST', '/audio/uploads', { filename: file.name, contentType: contentType, contentLength: file.size });
    },
    uploadBytes: uploadBytes,
    /** `choice`: what runs and what it writes (stemModel, model or models with ensemble and ensembleWeights, twoStems, outputFormat, bitDepth). */
    createSplit: function (input, choice, idempotencyKey) {
      return request('POST', '/audio/splits', Object.assign({ input: input }, choice), { 'idempotency-key': idempotencyKey });
    },
    split: function (id) {
      return request('GET', '/audio/splits/' + encodeURIComponent(id));
    },
    cancelSplit: function (id) {
      return request('POST', '/audio/splits/' + encodeURIComponent(id) + '/cancel');
    },
    /** A one-time invite (the `#invite=` of an admin's link) for this person's own key: `{id, key, account, role}`. */
    exchangeInvite: function (invite) {
      return request('POST', '/invites/exchange', { invite: invite });
    },
    deleteSplit: function (id) {
      return request('DELETE', '/audio/splits/' + encodeURIComponent(id));
    },
    people: function () {
      return request('GET', '/accounts');
    },
    keys: function () {
      return request('GET', '/keys');
    },
    revokeKey: function (id) {
      return request('DELETE', '/keys/' + encodeURIComponent(id));
    },
    grant: function (account, seconds) {
      return request('POST', '/credits/grants', { account: account, seconds: seconds });
    },
    invite: function (account, credits) {
      return request('POST', '/invites', { account: account, credits: credits });
    },
    listSplits: function (cursor) {
      return request('GET', '/audio/splits?limit=10' + (cursor ? '&cursor=' + encodeURIComponent(cursor) : ''));
    },
  });
}

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
  return type && (!limits || limits.contentTypes.indexOf(type) >= 0) ? type : undefined;
}

/** Why a file cannot be sent at all, before anything reaches the server. */
export function fileProblem(file) {
  if (!contentTypeOf(file)) return '"' + file.name + '" is not a file type stemsplit takes. Use ' + acceptedKinds() + '.';
  if (file.size === 0) return '"' + file.name + '" is empty.';
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

function plural(n, word) {
  return n + ' ' + word + (n === 1 ? '' : 's');
}

/**
 * An API failure in the words a musician would use, with what to do next: chosen by the error's
 * code and the call that failed (a 422 from the upload reservation is a size, from the upload an
 * incomplete body, from the split a file that is not audio), never by the server's sentence.
 * `song` ({songSeconds, balance}, either unknown) puts numbers to a refused charge or a song too long;
 * its `models` (those asked for) tell a refused model from a refused song.
 * @param {unknown} error
 * @param {{songSeconds?: number, balance?: number, models?: string[]}} [song]
 */
export function explainError(error, song) {
  if (!(error instanceof ApiError)) return 'Something went wrong in the page: ' + String((error && /** @type {Error} */ (error).message) || error);
  switch (error.code) {
    case 'NETWORK':
      return 'The stemsplit server can\'t be reached. Check that "stemsplit serve" is still running, then try again.';
    case 'FORBIDDEN':
      return "Only the studio's admin can do that.";
    case 'UNAUTHORIZED':
      if (error.call === 'exchangeInvite') return "This invite doesn't work: " + error.message.replace(/\.$/, '') + '.';
      // The server tells a key it revoked from one it never made (a typo, another server's key).
      if (/revoked/.test(error.message)) {
        return (
          "This API key isn't accepted: it was revoked (by the studio's admin, or replaced by a newer link). " +
          "Ask the studio's admin for a new invite, or open the newest link you were given."
        );
      }
      return "This key isn't accepted: it is not a key of this server. Check that you pasted all of it, " + "or ask the studio's admin for an invite.";
    case 'INSUFFICIENT_CREDITS':
      return notEnoughCredits(song || {});
    case 'NOT_FOUND':
      return 'That job or upload no longer exists on this server.';
    case 'VALIDATION_ERROR':
      if (error.call === 'reserveUpload') {
        return 'This file is larger than the server takes' + (limits ? ' (' + uploadLimitWords() + ')' : '') + '. ' + RAISE_LIMIT + '.';
      }
      if (error.call === 'uploadBytes') return 'The upload arrived incomplete. Try again.';
      if (error.call === 'createSplit' && namesTheChoice(error.message, (song && song.models) || [])) {
        return (
          "This server won't run that choice: " +
          error.message +
          '. Pick another model; its operator decides which ones it runs ("stemsplit models list" there).'
        );
      }
      if (error.call === 'createSplit') return unusableSong(song || {});
      return "The server couldn't use this request: " + error.message;
    case 'RATE_LIMITED': {
      const wait = error.retryAfterSeconds;
      return (
        'Too many splits started in the last minute. ' +
        (wait !== undefined ? 'Try again in ' + plural(Math.max(1, Math.ceil(wait)), 'second') + '.' : 'Wait a moment and try again.')
      );
    }
    case 'STORAGE_FAILED':
      return "The server's disk has no room for this file, so the upload couldn't be stored. Free some space and try again.";
    default:
      return 'The server ran into a problem (error ' + error.status + '). Try again; if it keeps happening, look at the output of "stemsplit serve".';
  }
}

/** Who tops a person up: the studio's admin (the People view), not a shell the musician has no access to. */
const MORE_TIME = "Ask the studio's admin for more time.";

/** Whether a refused split's reason is the models or options asked for (else it is the song): it names one of them. */
function namesTheChoice(message, models) {
  return (
    models.some(function (name) {
      return message.indexOf(name) >= 0;
    }) || /\b(models?|ensemble|ensembleWeights|twoStems|outputFormat|bitDepth)\b/.test(message)
  );
}

/** A split the server refused for its source: longer than the server's --max-minutes, or not audio it can read. */
function unusableSong(/** @type {{songSeconds?: number}} */ song) {
  const max = limits ? limits.maxSourceSeconds : null;
  if (max !== null && song.songSeconds !== undefined && song.songSeconds > max) {
    return (
      'This song is ' +
      plural(song.songSeconds, 'second') +
      ' long; this server splits at most ' +
      plural(max, 'second') +
      ' of audio per song. ' +
      'The server\'s operator can raise it with "stemsplit serve --max-minutes N".'
    );
  }
  return "stemsplit couldn't read this file as audio. Is it a song in " + acceptedKinds() + '?';
}

/**
 * Why the balance cannot pay, in a musician's words (time, not credits; the admin, not a shell).
 * @param {{songSeconds?: number, balance?: number, songs?: number}} credit
 */
export function notEnoughCredits(credit) {
  if (credit.songSeconds === undefined || credit.balance === undefined) {
    return (
      'Not enough time left for this song' +
      (credit.balance === undefined ? '' : ': you have ' + plural(credit.balance, 'second') + ' of audio left') +
      '. ' +
      MORE_TIME
    );
  }
  return (
    'Not enough time left: ' +
    (credit.songs > 1 ? 'these songs are ' : 'this song is ') +
    plural(credit.songSeconds, 'second') +
    ' long and you have ' +
    plural(credit.balance, 'second') +
    ' of audio left. ' +
    MORE_TIME
  );
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

/** One sentence per job error code: the type makes tsc check the list against src/errors.ts. */
/** @type {Record<import('../../errors.js').JobErrorCode, string>} */
const JOB_FAILURES = {
  SOURCE_FETCH_FAILED: "the server couldn't read the uploaded song back",
  AUDIO_DECODE_FAILED: "the song couldn't be decoded as audio",
  SEPARATION_FAILED: 'the separation model failed on this song',
  ENCODE_FAILED: 'writing the stem files failed',
  STORAGE_FAILED: "the server's disk is full or not writable",
  INTERNAL_ERROR: 'the job was interrupted',
  CANCELLED: 'it was cancelled',
};

/** The longest server message shown under a failed job. */
const MAX_DETAIL = 300;

/**
 * Why a job failed: its error code in words, then the server's message (it names the model when
 * the model is gone). Failed jobs are refunded by the server.
 */
export function explainJobFailure(jobError) {
  const code = jobError && jobError.code;
  const why = JOB_FAILURES[code] || 'something went wrong while splitting';
  const message = jobError && jobError.message ? String(jobError.message) : '';
  const detail = message.length > MAX_DETAIL ? message.slice(0, MAX_DETAIL - 1) + '\u2026' : message;
  const refund = /refunded/i.test(detail) ? '' : ' Your credits were refunded.';
  return 'The split failed: ' + why + (detail ? ' (' + detail.replace(/\.$/, '') + ')' : '') + '.' + refund;
}
