// @ts-check
/**
 * Browser module `/web/api.js`: calls the v1 API with the page's key; a failure is an ApiError
 * naming the call that failed (error-words.js puts it in a musician's words).
 */
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
