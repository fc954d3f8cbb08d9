/**
 * How a model that fails to load is reported, the same from the split worker and from anything
 * that loads models itself: one line naming the model, its file, and (in an ensemble) which
 * member it is. A load that fails is the model file's fault (exit 13, MODEL_INVALID) unless the
 * error says otherwise (no such file, the disk full); it is never "the model failed on a file".
 * A model whose stem names would not be plain file names (they name the files a split writes)
 * is refused as it loads.
 */
import { describeError, isStemsplitError, StemsplitError, type ErrorCode } from '../errors.js';
import type { ModelRef } from '../models/registry.js';
import type { SeparationModel } from '../separation/model.js';

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

/** A stem is written as `<name>.<ext>` in the track's folder: never a path, a hidden file or a control character. */
const STEM_FILE_NAME = /^[^./\\\u0000-\u001f][^/\\\u0000-\u001f]{0,63}$/;

/** `load(ref)`, refused in one line (loadRefusal) when it fails or when a stem name is not a plain file name. */
export async function loadNamed(ref: ModelRef, load: (ref: ModelRef) => Promise<SeparationModel>, place?: EnsemblePlace): Promise<SeparationModel> {
  let model: SeparationModel;
  try {
    model = await load(ref);
  } catch (error) {
    throw loadRefusal(ref, error, place);
  }
  const unsafe = model.sources.find((name) => !STEM_FILE_NAME.test(name) || name.includes('..'));
  if (unsafe !== undefined) {
    const why = new StemsplitError(
      'MODEL_INVALID',
      `its stem ${JSON.stringify(unsafe.slice(0, 64))} is not a plain file name (a split writes each stem as <stem>.<format> in the track's folder)`,
    );
    throw loadRefusal(ref, why, place);
  }
  return model;
}
