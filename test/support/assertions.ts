/** Assertions several suites make the same way. */
import assert from 'node:assert/strict';
import { isStemsplitError, type ErrorCode } from '../../src/errors.js';

/** Asserts that `action` (a promise, or a function that throws or rejects) fails with a StemsplitError of `code` whose message matches. */
export async function rejectsWith(action: Promise<unknown> | (() => unknown), code: ErrorCode, pattern: RegExp): Promise<void> {
  await assert.rejects(typeof action === 'function' ? async () => action() : action, (error: unknown) => {
    assert.ok(isStemsplitError(error), `expected a StemsplitError, got ${String(error)}`);
    assert.equal(error.code, code);
    assert.match(error.message, pattern);
    return true;
  });
}

/** The largest |a − b| over planes of equal shape (channels, or sources). */
export function maxDifference(a: readonly ArrayLike<number>[], b: readonly ArrayLike<number>[]): number {
  assert.equal(a.length, b.length, 'planes');
  let worst = 0;
  a.forEach((plane, p) => {
    const other = b[p] as ArrayLike<number>;
    assert.equal(plane.length, other.length, `plane ${p} length`);
    for (let i = 0; i < plane.length; i++) worst = Math.max(worst, Math.abs((plane[i] as number) - (other[i] as number)));
  });
  return worst;
}
