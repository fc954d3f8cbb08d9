// @ts-check
/**
 * Browser module `/web/error-words.js`: every failure in a musician's words, with what to do next:
 * an API call the server refused (explainError), a balance too small for the songs, a job that failed.
 */
import { ApiError } from './api.js';
import { plural } from './dom.js';
import { acceptedKinds, RAISE_LIMIT, serverLimits, uploadLimitWords } from './server-limits.js';

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
        return 'This file is larger than the server takes' + (serverLimits() ? ' (' + uploadLimitWords() + ')' : '') + '. ' + RAISE_LIMIT + '.';
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
  const limits = serverLimits();
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
