/**
 * The one error family of stemsplit. Code deep in the stack throws `StemsplitError`
 * with a code; the HTTP layer maps it to the v1 envelope and status, the CLI entry
 * maps it to a one-line message and an exit code. Nothing else decides either.
 */

/** Codes the v1 API answers with (part 7 of the spec, plus NOT_FOUND for 404). */
export const API_ERROR_CODES = ['UNAUTHORIZED', 'FORBIDDEN', 'INSUFFICIENT_CREDITS', 'VALIDATION_ERROR', 'RATE_LIMITED', 'NOT_FOUND', 'SERVER_ERROR'] as const;
export type ApiErrorCode = (typeof API_ERROR_CODES)[number];

/** Codes a failed job reports in its `error` object (documented in docs/api.md). */
export const JOB_ERROR_CODES = [
  'SOURCE_FETCH_FAILED',
  'AUDIO_DECODE_FAILED',
  'SEPARATION_FAILED',
  'ENCODE_FAILED',
  'STORAGE_FAILED',
  'INTERNAL_ERROR',
  'CANCELLED',
] as const;
export type JobErrorCode = (typeof JOB_ERROR_CODES)[number];

/** Codes only the CLI and library callers see. */
export const LOCAL_ERROR_CODES = [
  'USAGE',
  'MODEL_NOT_FOUND',
  'MODEL_INVALID',
  'DOWNLOAD_FAILED',
  'IO_ERROR',
  'DATABASE_UNAVAILABLE',
  'GPU_UNAVAILABLE',
  'INTERRUPTED',
  'TERMINATED',
] as const;
export type LocalErrorCode = (typeof LOCAL_ERROR_CODES)[number];

export type ErrorCode = ApiErrorCode | JobErrorCode | LocalErrorCode;

interface CodeInfo {
  readonly httpStatus: number;
  readonly exitCode: number;
  /** What the CLI's exit code means, for `--help` and README's table. */
  readonly meaning: string;
}

const CODES: Readonly<Record<ErrorCode, CodeInfo>> = Object.freeze({
  UNAUTHORIZED: { httpStatus: 401, exitCode: 3, meaning: 'an API key was refused' },
  /** A member's key on what only an admin may do (people, keys, credits, invites). */
  FORBIDDEN: { httpStatus: 403, exitCode: 3, meaning: 'an API key was refused' },
  INSUFFICIENT_CREDITS: { httpStatus: 402, exitCode: 4, meaning: 'not enough credits' },
  VALIDATION_ERROR: { httpStatus: 422, exitCode: 2, meaning: 'a wrong command, option or value' },
  RATE_LIMITED: { httpStatus: 429, exitCode: 5, meaning: 'rate limited' },
  NOT_FOUND: { httpStatus: 404, exitCode: 6, meaning: 'no such key, account, job or file' },
  SERVER_ERROR: { httpStatus: 500, exitCode: 1, meaning: 'an unexpected failure (a bug: run with STEMSPLIT_DEBUG=1 for its stack)' },
  SOURCE_FETCH_FAILED: { httpStatus: 422, exitCode: 7, meaning: 'the source could not be read' },
  AUDIO_DECODE_FAILED: { httpStatus: 422, exitCode: 8, meaning: 'a file is not audio stemsplit can read (a batch: every file that failed was unreadable)' },
  SEPARATION_FAILED: { httpStatus: 500, exitCode: 9, meaning: 'the model failed on a file (a batch: also when its files failed for different reasons)' },
  ENCODE_FAILED: { httpStatus: 500, exitCode: 10, meaning: 'writing the stems failed' },
  STORAGE_FAILED: { httpStatus: 507, exitCode: 11, meaning: 'the disk is full or not writable' },
  INTERNAL_ERROR: { httpStatus: 500, exitCode: 1, meaning: 'an unexpected failure (a bug: run with STEMSPLIT_DEBUG=1 for its stack)' },
  // A job its owner cancelled through the API; the CLI's own stop is INTERRUPTED, whose exit code it shares.
  CANCELLED: { httpStatus: 409, exitCode: 130, meaning: 'stopped by SIGINT (Ctrl-C)' },
  USAGE: { httpStatus: 422, exitCode: 2, meaning: 'a wrong command, option or value' },
  MODEL_NOT_FOUND: { httpStatus: 422, exitCode: 12, meaning: 'no such model, or not installed' },
  MODEL_INVALID: { httpStatus: 500, exitCode: 13, meaning: 'a model file is damaged or not a model stemsplit can run' },
  DOWNLOAD_FAILED: { httpStatus: 502, exitCode: 14, meaning: 'models pull could not download' },
  IO_ERROR: { httpStatus: 500, exitCode: 15, meaning: 'a file, folder or port could not be used' },
  // PostgreSQL is down or unreachable: a client should retry (Retry-After), nothing was changed.
  DATABASE_UNAVAILABLE: { httpStatus: 503, exitCode: 16, meaning: 'PostgreSQL is unreachable' },
  // --device gpu where no adapter is found, or the GPU failed (lost, out of memory) with no CPU to go on with.
  GPU_UNAVAILABLE: { httpStatus: 503, exitCode: 17, meaning: 'no GPU to run on with --device gpu, or the GPU failed' },
  // 128 + SIGINT, as shells report a command stopped by Ctrl-C.
  INTERRUPTED: { httpStatus: 500, exitCode: 130, meaning: 'stopped by SIGINT (Ctrl-C)' },
  // 128 + SIGTERM, as shells report a command another process terminated.
  TERMINATED: { httpStatus: 500, exitCode: 143, meaning: 'stopped by SIGTERM' },
});

/**
 * The CLI's exit codes, one row per code with what it means (codes sharing an exit code joined):
 * the one source of `--help`'s list and README's table.
 */
export function exitCodes(): { exitCode: number; meaning: string }[] {
  const byExit = new Map<number, string[]>();
  for (const info of Object.values(CODES)) {
    const meanings = byExit.get(info.exitCode) ?? [];
    if (!meanings.includes(info.meaning)) meanings.push(info.meaning);
    byExit.set(info.exitCode, meanings);
  }
  const rows = [...byExit].map(([exitCode, meanings]) => ({ exitCode, meaning: meanings.join('; ') }));
  return [{ exitCode: 0, meaning: 'success' }, ...rows.sort((a, b) => a.exitCode - b.exitCode)];
}

/** README's exit-code table, as `node --import tsx scripts/exit-codes.ts` prints it. */
export function exitCodeMarkdown(): string {
  return ['| exit | meaning |', '|---|---|', ...exitCodes().map((row) => `| ${row.exitCode} | ${row.meaning} |`)].join('\n');
}

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

/**
 * The code a failed job reports for an error with `code`: the code itself where the v1 API has
 * it; a model refused or missing (which only the CLI names) is the model failing,
 * SEPARATION_FAILED; undefined for the rest, which the job reports by the phase it failed in.
 */
export function jobErrorCodeOf(code: ErrorCode): JobErrorCode | undefined {
  if (isJobErrorCode(code)) return code;
  return code === 'MODEL_INVALID' || code === 'MODEL_NOT_FOUND' || code === 'GPU_UNAVAILABLE' ? 'SEPARATION_FAILED' : undefined;
}

export function isStemsplitError(error: unknown): error is StemsplitError {
  return error instanceof StemsplitError;
}

/** A short, single-line description of any thrown value, for logs and CLI output. */
export function describeError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/\s+/g, ' ').trim();
}
