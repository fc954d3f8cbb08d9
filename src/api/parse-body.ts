/**
 * A request body checked against its schema: one 422 VALIDATION_ERROR whose message names the
 * first offending field in a sentence (zod's issues are for programs). Split from schemas.ts.
 */
import type { z } from '@hono/zod-openapi';
import { StemsplitError } from '../errors.js';

/**
 * Validates a parsed JSON body against `schema`. A failure is one 422 VALIDATION_ERROR whose
 * message names the first offending field in a sentence (zod's issues are for programs).
 */
export function parseBody<T extends z.ZodType>(schema: T, body: unknown): z.output<T> {
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  throw invalidInput(result.error, body);
}

/** The 422 VALIDATION_ERROR of `input` failing its schema: the first issue, in a sentence. */
export function invalidInput(error: z.ZodError, input: unknown): StemsplitError {
  return new StemsplitError('VALIDATION_ERROR', sentenceOf(error.issues[0], input));
}

type Issue = z.core.$ZodIssue;

function sentenceOf(issue: Issue | undefined, body: unknown): string {
  if (issue === undefined) return 'request body is invalid';
  const name = issue.path.map(String).join('.');
  switch (issue.code) {
    case 'unrecognized_keys':
      return `unknown field ${name === '' ? '' : `${name}.`}${issue.keys[0] ?? ''}`;
    case 'invalid_type': {
      // Every number in this API is an integer.
      const wanted =
        issue.expected === 'int' || issue.expected === 'number' ? 'an integer' : `${/^[aeiou]/.test(issue.expected) ? 'an' : 'a'} ${issue.expected}`;
      if (name === '') return `request body must be ${wanted}`;
      return valueAt(body, issue.path) === undefined ? `${name} is required and must be ${wanted}` : `${name} must be ${wanted}`;
    }
    case 'too_small':
      if (issue.origin === 'string') return Number(issue.minimum) <= 1 ? `${name} must not be empty` : `${name} must be at least ${issue.minimum} characters`;
      return `${name} must be ${issue.origin === 'int' || issue.origin === 'number' ? 'an integer ' : ''}at least ${issue.minimum}`;
    case 'too_big':
      if (issue.origin === 'string') return `${name} must be at most ${issue.maximum} characters`;
      return `${name} must be ${issue.origin === 'int' || issue.origin === 'number' ? 'an integer ' : ''}at most ${issue.maximum}`;
    case 'invalid_value': {
      const values = issue.values.map((value) => JSON.stringify(value));
      return values.length <= 2 ? `${name} must be ${values.join(' or ')}` : `${name} must be one of ${values.join(', ')}`;
    }
    case 'invalid_format':
      return `${name} is not in the expected format`;
    default:
      // custom checks and unions carry a message written for people already.
      return name === '' || issue.message.startsWith(`${name.split('.')[0]} `) || issue.message.startsWith(name) ? issue.message : `${name}: ${issue.message}`;
  }
}

function valueAt(body: unknown, path: readonly PropertyKey[]): unknown {
  let value = body;
  for (const key of path) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}
