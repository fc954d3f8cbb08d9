/**
 * Demucs' packages (`torch.save` of `klass`, `args`, `kwargs`, `state`) read by torch/'s reader
 * with the class modules a Demucs package names: its model class (`demucs.htdemucs.HTDemucs`) and,
 * in a diffq-quantized state's metadata (mdx_q, mdx_extra_q), its quantizer's. Both are kept as
 * names, never built; a class of any other module is refused.
 */
import { checkCheckpoint, readCheckpoint, type Checkpoint, type ClassModules } from '../torch/checkpoint.js';

export const DEMUCS_CLASS_MODULES: ClassModules = ['demucs', 'diffq'];

/** A Demucs package with its weights (torch/checkpoint.ts readCheckpoint). */
export function readDemucsCheckpoint(path: string): Checkpoint {
  return readCheckpoint(path, DEMUCS_CLASS_MODULES);
}

/** A Demucs package's structure with stand-in weights, nothing read (torch/checkpoint.ts checkCheckpoint). */
export function checkDemucsCheckpoint(path: string): Checkpoint {
  return checkCheckpoint(path, DEMUCS_CLASS_MODULES);
}
