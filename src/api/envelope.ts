/**
 * The v1 envelope, made in one place: `{success:true,data}` and `{success:false,error:{code,message}}`.
 * Every error response of the server goes through `errorResponse`.
 */
import type { z } from '@hono/zod-openapi';
import { HTTPException } from 'hono/http-exception';
import { describeError, isApiErrorCode, isStemsplitError, type ApiErrorCode } from '../errors.js';
import type { ErrorEnvelope } from './schemas.js';

/** An error answer: the type of its schema (schemas.ts), declared there once. */
export type ErrorBody = z.output<typeof ErrorEnvelope>;

export function successBody<T>(data: T): { success: true; data: T } {
  return { success: true, data };
}

export interface MappedError {
  readonly status: number;
  readonly body: ErrorBody;
  readonly headers: Readonly<Record<string, string>>;
}

/** Maps anything thrown to a status and envelope. Codes outside the API's set are folded in. */
export function mapError(error: unknown): MappedError {
  if (isStemsplitError(error)) {
    const status = error.httpStatus;
    const code: ApiErrorCode = isApiErrorCode(error.code) ? error.code : status >= 500 ? 'SERVER_ERROR' : status === 404 ? 'NOT_FOUND' : 'VALIDATION_ERROR';
    return { status, body: { success: false, error: { code, message: error.message } }, headers: error.headers };
  }
  if (error instanceof HTTPException) {
    const status = error.status;
    const code: ApiErrorCode = status === 401 ? 'UNAUTHORIZED' : status === 404 ? 'NOT_FOUND' : status >= 500 ? 'SERVER_ERROR' : 'VALIDATION_ERROR';
    return {
      status: code === 'VALIDATION_ERROR' ? 422 : status,
      body: { success: false, error: { code, message: error.message || 'invalid request' } },
      headers: {},
    };
  }
  return {
    status: 500,
    body: { success: false, error: { code: 'SERVER_ERROR', message: 'internal server error' } },
    headers: {},
  };
}

export function errorResponse(error: unknown): Response {
  const { status, body, headers } = mapError(error);
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', ...headers },
  });
}

export { describeError };
