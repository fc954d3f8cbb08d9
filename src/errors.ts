/**
 * The one error family of stemsplit. Code deep in the stack throws `StemsplitError`
 * with a code; the HTTP layer maps it to the v1 envelope and status, the CLI entry
 * maps it to a one-line message and an exit code. Nothing else decides either.
 */

/** Codes the v1 API answers with (part 7 of the spec, plus NOT_FOUND for 404). */
export const API_ERROR_CODES = ['UNAUTHORIZED', 'INSUFFICIENT_CREDITS', 'VALIDATION_ERROR', 'RATE_LIMITED', 'NOT_FOUND', 'SERVER_ERROR'] as const;
export type ApiErrorCode = (typeof API_ERROR_CODES)[number];

/** Codes a failed job reports in its `error` object (documented in docs/api.md). */
export const JOB_ERROR_CODES = ['SOURCE_FETCH_FAILED', 'AUDIO_DECODE_FAILED', 'SEPARATION_FAILED', 'ENCODE_FAILED', 'STORAGE_FAILED', 'INTERNAL_ERROR'] as const;
export type JobErrorCode = (typeof JOB_ERROR_CODES)[number];

/** Codes only the CLI and library callers see. */
export const LOCAL_ERROR_CODES = ['USAGE', 'MODEL_NOT_FOUND', 'MODEL_INVALID', 'DOWNLOAD_FAILED', 'IO_ERROR', 'DATABASE_UNAVAILABLE', 'INTERRUPTED', 'TERMINATED'] as const;
export type LocalErrorCode = (typeof LOCAL_ERROR_CODES)[number];

export type ErrorCode = ApiErrorCode | JobErrorCode | LocalErrorCode;

interface CodeInfo {
  readonly httpStatus: number;
  readonly exitCode: number;
}

const CODES: Readonly<Record<ErrorCode, CodeInfo>> = Object.freeze({
  UNAUTHORIZED: { httpStatus: 401, exitCode: 3 },
  INSUFFICIENT_CREDITS: { httpStatus: 402, exitCode: 4 },
  VALIDATION_ERROR: { httpStatus: 422, exitCode: 2 },
  RATE_LIMITED: { httpStatus: 429, exitCode: 5 },
  NOT_FOUND: { httpStatus: 404, exitCode: 6 },
  SERVER_ERROR: { httpStatus: 500, exitCode: 1 },
  SOURCE_FETCH_FAILED: { httpStatus: 422, exitCode: 7 },
  AUDIO_DECODE_FAILED: { httpStatus: 422, exitCode: 8 },
  SEPARATION_FAILED: { httpStatus: 500, exitCode: 9 },
  ENCODE_FAILED: { httpStatus: 500, exitCode: 10 },
  STORAGE_FAILED: { httpStatus: 507, exitCode: 11 },
  INTERNAL_ERROR: { httpStatus: 500, exitCode: 1 },
  USAGE: { httpStatus: 422, exitCode: 2 },
  MODEL_NOT_FOUND: { httpStatus: 422, exitCode: 12 },
  MODEL_INVALID: { httpStatus: 500, exitCode: 13 },
  DOWNLOAD_FAILED: { httpStatus: 502, exitCode: 14 },
  IO_ERROR: { httpStatus: 500, exitCode: 15 },
  // PostgreSQL is down or unreachable: a client should retry (Retry-After), nothing was changed.
  DATABASE_UNAVAILABLE: { httpStatus: 503, exitCode: 16 },
  // 128 + SIGINT, as shells report a command stopped by Ctrl-C.
  INTERRUPTED: { httpStatus: 500, exitCode: 130 },
  // 128 + SIGTERM, as shells report a command another process terminated.
  TERMINATED: { httpStatus: 500, exitCode: 143 },
});

export class StemsplitError extends Error {
  override readonly name = 'StemsplitError';
  readonly code: ErrorCode;
  /** Extra response headers (e.g. Retry-After) the HTTP layer should send. */
  readonly headers: Readonly<Record<string, string>>;

  constructor(code: ErrorCode, message: string, options: { cause?: unknown; headers?: Record<string, string> } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.headers = Object.freeze({ ...(options.headers ?? {}) });
  }

  get httpStatus(): number {
    return CODES[this.code].httpStatus;
  }

  get exitCode(): number {
    return CODES[this.code].exitCode;
  }
}

export function isApiErrorCode(code: string): code is ApiErrorCode {
  return (API_ERROR_CODES as readonly string[]).includes(code);
}

export function isJobErrorCode(code: string): code is JobErrorCode {
  return (JOB_ERROR_CODES as readonly string[]).includes(code);
}

export function isStemsplitError(error: unknown): error is StemsplitError {
  return error instanceof StemsplitError;
}

/** A short, single-line description of any thrown value, for logs and CLI output. */
export function describeError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/\s+/g, ' ').trim();
}
