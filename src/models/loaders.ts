/**
 * The real model loader: each model loads the way its family's record says (families.ts), which
 * imports its engine lazily, so only commands that split (serve, split, eval, models add) pay
 * for onnxruntime.
 */
import { familyById } from './families.js';
import type { LoadOptions } from '../contract/family.js';
import type { ModelLoader } from './registry.js';

export function modelLoader(options: LoadOptions): ModelLoader {
  return (ref) => familyById(ref.kind).load(ref, options);
}
