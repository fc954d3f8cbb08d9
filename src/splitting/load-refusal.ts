/**
 * How a model that fails to load is reported, the same from the split worker and from anything
 * that loads models itself: one line naming the model, its file, and (in an ensemble) which
 * member it is. A load that fails is the model file's fault (exit 13, MODEL_INVALID) unless the
 * error says otherwise (no such file, the disk full); it is never "the model failed on a file".
 */
import { describeError, isStemsplitError, StemsplitError, type ErrorCode } from '../errors.js';
import type { ModelRef } from '../models/registry.js';

/** Which member of an ensemble a model is, counted from 1. */
export interface EnsemblePlace {
  readonly index: number;
  readonly count: number;
}

export function loadRefusal(ref: ModelRef, error: unknown, place?: EnsemblePlace): StemsplitError {
  const code: ErrorCode = isStemsplitError(error) && error.code !== 'SEPARATION_FAILED' ? error.code : 'MODEL_INVALID';
  const message = describeError(error);
  const member = place === undefined ? '' : `ensemble member ${place.index} of ${place.count}, `;
  const file = ref.path === '' || message.includes(ref.path) ? '' : ` (${ref.path})`;
  return new StemsplitError(code, `${member}model ${ref.name}${file} could not be loaded: ${message}`, { cause: error });
}
