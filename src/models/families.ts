/**
 * Every model family stemsplit runs, one record each (models/family.ts), in the order they are
 * asked to claim a file: the first claim wins (MSST before Demucs, so an MSST yaml given as a
 * model is pointed to its checkpoint instead of being read as a Demucs bag). Adding a family is
 * its folder and a line here.
 */
import { demucsFamily } from '../demucs/family.js';
import { StemsplitError } from '../errors.js';
import { mdxFamily } from '../mdx/family.js';
import { msstFamily } from '../msst/family.js';
import { manifestFamily } from '../separation/family.js';
import { vrFamily } from '../vr/family.js';
import { flagAttribute, type FamilyOptions, type ModelFamilyRecord } from './family.js';

export const MODEL_FAMILIES: readonly ModelFamilyRecord[] = [manifestFamily, vrFamily, msstFamily, demucsFamily, mdxFamily];

export function familyById(id: string): ModelFamilyRecord {
  const family = MODEL_FAMILIES.find((record) => record.id === id);
  if (family === undefined) throw new StemsplitError('MODEL_INVALID', `no model family "${id}" (this stemsplit runs ${MODEL_FAMILIES.map((record) => record.id).join(', ')})`);
  return family;
}

/**
 * The families' options from values keyed by their flags' attributes (commander's, or the API's
 * `modelOptions`), each checked by its family: a USAGE error names the flag.
 */
export function familyOptionsFrom(values: Readonly<Record<string, unknown>>): FamilyOptions {
  return Object.assign({}, ...MODEL_FAMILIES.map((family) => family.options(values) ?? {})) as FamilyOptions;
}

/** Every option attribute (`mdxSegmentSize`, `vrAggression`, …) with the family that takes it. */
export function familyOptionNames(): ReadonlyMap<string, ModelFamilyRecord> {
  return new Map(familyFlags().map(({ family, flags }) => [flagAttribute(flags), family]));
}

/** Every flag a family declares, with the family that takes it. */
export function familyFlags(): { readonly family: ModelFamilyRecord; readonly flags: string; readonly description: string; readonly separatorSpelling?: string }[] {
  return MODEL_FAMILIES.flatMap((family) => family.flags.map((flag) => ({ family, ...flag })));
}
