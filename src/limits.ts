/** Sizes and formats the server accepts, declared once for the API, its schemas and the web page. */

/** The largest upload (and the largest `direct_url` source) a split takes: 50 MiB. */
export const MAX_UPLOAD_BYTES = 52_428_800;

/** The largest JSON request body. */
export const MAX_JSON_BODY_BYTES = 64 * 1024;

/** The content types an upload may declare. */
export const ALLOWED_CONTENT_TYPES = ['audio/mpeg', 'audio/wav', 'audio/flac', 'audio/mp4', 'audio/x-m4a', 'audio/x-wav', 'audio/webm'] as const;
