/** Where `models pull` keeps a family's catalog models in the cache, as the family's record says. */
import { StemsplitError } from '../errors.js';
import { familyById } from './families.js';
import type { FamilyPull } from '../contract/family.js';

/** How `models pull` installs a family's catalog models (its record's steps). */
export function pullStepsOf(family: string): FamilyPull {
  const steps = familyById(family).pull;
  if (steps === undefined) throw new StemsplitError('MODEL_INVALID', `the ${family} family has no catalog models to pull`);
  return steps;
}

/** Where pulled models of a family live (converted graphs sit elsewhere in the cache). */
export function modelDir(cacheDir: string, family: string): string {
  return pullStepsOf(family).dir(cacheDir);
}
