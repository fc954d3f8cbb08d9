/** Sizes and formats the server accepts by default, declared once for the config, the API and its schemas. */

export const MIB = 1024 * 1024;

/**
 * The default largest upload (and `direct_url` source) a split takes: the spec's 50 MiB. The
 * server's own limit is `config.maxUploadBytes` (`serve --max-upload-mb`); clients learn it from
 * `GET /v1/limits`.
 */
export const MAX_UPLOAD_BYTES = 50 * MIB;

/** The largest JSON request body. */
export const MAX_JSON_BODY_BYTES = 64 * 1024;

/** The content types an upload may declare. */
export const ALLOWED_CONTENT_TYPES = ['audio/mpeg', 'audio/wav', 'audio/flac', 'audio/mp4', 'audio/x-m4a', 'audio/x-wav', 'audio/webm'] as const;
