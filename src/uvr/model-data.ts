/**
 * What UVR's model families (MDX-Net, VR) share: the model hash their model data is keyed by,
 * and UVR's stem names (python-audio-separator's CommonSeparator).
 */
import { createHash } from 'node:crypto';
import { closeSync, readSync } from 'node:fs';
import { StemsplitError } from '../errors.js';
import { openModelFile, readSmallModelFile } from '../model-files/regular.js';

/** UVR's model data files (NAME.json beside a model) are a few hundred bytes. */
export const MAX_MODEL_DATA_BYTES = 64 * 1024;

/** A UVR stem name becomes a file name: letters, digits, spaces and a few signs, never a path. */
export const UVR_STEM_NAME = /^[A-Za-z0-9][A-Za-z0-9 _&+()'-]{0,63}$/;

/** python-audio-separator's get_model_hash: how many trailing bytes are hashed. */
export const HASHED_BYTES = 10_000 * 1024;

/** UVR's model hash: MD5 of the file's last 10,240,000 bytes (the whole file when smaller). */
export function uvrModelHash(file: string): string {
  const { fd, size } = openModelFile(file, 'model file', (error) => new StemsplitError('MODEL_NOT_FOUND', `cannot read ${file}`, { cause: error }));
  try {
    const count = Math.min(size, HASHED_BYTES);
    const bytes = Buffer.allocUnsafe(count);
    let done = 0;
    while (done < count) {
      const read = readSync(fd, bytes, done, count - done, size - count + done);
      if (read === 0) throw new StemsplitError('MODEL_INVALID', `${file} shrank while it was hashed`);
      done += read;
    }
    return createHash('md5').update(bytes).digest('hex');
  } finally {
    closeSync(fd);
  }
}

/**
 * The secondary stem's UVR name, as audio-separator's CommonSeparator.secondary_stem: the pairs
 * Vocals/Instrumental, lead_only/backing_only, Primary Stem/Secondary Stem; else "No X" ↔ "X".
 */
export function secondaryStem(primary: string): string {
  const pairs: Readonly<Record<string, string>> = {
    Vocals: 'Instrumental',
    Instrumental: 'Vocals',
    lead_only: 'backing_only',
    backing_only: 'lead_only',
    'Primary Stem': 'Secondary Stem',
  };
  const paired = pairs[primary];
  if (paired !== undefined) return paired;
  return primary.includes('No ') ? primary.replaceAll('No ', '') : `No ${primary}`;
}

/** A UVR stem name as a stemsplit stem: lower case, spaces as underscores ("No Drums" → `no_drums`). */
export function stemFileName(uvrName: string): string {
  return uvrName.trim().toLowerCase().replace(/\s+/g, '_');
}

/** A `NAME.json` of UVR model data as JSON (bounded in size; a file that does not parse is refused naming it), its keys for the family to check. */
export function readUvrModelDataJson(file: string): unknown {
  const text = readSmallModelFile(file, 'model data file', MAX_MODEL_DATA_BYTES);
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new StemsplitError('MODEL_INVALID', `${file}: not readable JSON (${error instanceof Error ? error.message : String(error)})`);
  }
}
