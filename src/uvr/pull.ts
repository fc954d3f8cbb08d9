/**
 * What `models pull` does for UVR's families (MDX-Net, VR) after the file arrived: a fresh
 * download must be the file UVR's model data describes (its UVR hash), or that data would run it
 * wrongly; the data is then written as `NAME.json` beside it (again on every pull, so an
 * interrupted pull heals), where the engines read data their built-in table lacks.
 */
import { rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { StemsplitError } from '../errors.js';
import { uvrModelHash } from './model-data.js';

export interface UvrPulledModel {
  /** UVR's model data for this file, with UVR's keys. */
  readonly data: object | undefined;
  /** The UVR hash it must have (MD5 of its last 10,240,000 bytes). */
  readonly hash: string | undefined;
}

/** `NAME.json` for `NAME.onnx` / `NAME.pth`. */
export function uvrDataFileFor(modelFile: string): string {
  return `${path.basename(modelFile, path.extname(modelFile))}.json`;
}

export async function installUvrModelData(modelFile: string, model: UvrPulledModel, fresh: boolean): Promise<void> {
  if (fresh && model.hash !== undefined) {
    const actual = uvrModelHash(modelFile);
    if (actual !== model.hash) {
      await rm(modelFile, { force: true });
      await rm(`${modelFile}.sha256`, { force: true });
      throw new StemsplitError(
        'DOWNLOAD_FAILED',
        `${path.basename(modelFile)} has UVR hash ${actual}, not ${model.hash} (the file UVR's model data is for); the file was deleted`,
      );
    }
  }
  if (model.data === undefined) return;
  const target = path.join(path.dirname(modelFile), uvrDataFileFor(modelFile));
  const temporary = `${target}.tmp-${process.pid}`;
  await writeFile(temporary, `${JSON.stringify(model.data, null, 2)}\n`);
  await rename(temporary, target);
}
