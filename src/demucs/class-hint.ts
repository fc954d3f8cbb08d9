/**
 * Which Demucs classes a `.th` or bag holds, told from a few bytes before any job runs (the worker
 * pool picks a worker's allocator settings by it: onnx/process-env.ts). demucs saves a model as
 * `{'klass': cls, 'args': …, 'kwargs': …, 'state': …}`, so the class's name is the pickle's first
 * global, within the first few hundred bytes of the zip. Only a hint: nothing is parsed, and a file
 * it cannot tell (a link, a legacy checkpoint, a damaged bag) gets no answer; the loader judges the
 * file in full in the worker.
 */
import { closeSync, readSync } from 'node:fs';
import path from 'node:path';
import { StemsplitError } from '../errors.js';
import { openModelFile, readSmallModelFile } from '../model-files/regular.js';
import { parseBagFile, resolveMember } from './bag-file.js';

export type DemucsClass = 'Demucs' | 'HDemucs' | 'HTDemucs';

/** Where the class's name lies: the zip entry's header, torch's padding and the pickle's first opcodes. */
const HEAD_BYTES = 1024;
/** Demucs' bags are a few lines; a larger "bag" is not read for a hint. */
const BAG_BYTES = 64 * 1024;
const CLASS_GLOBAL = /cdemucs\.(?:demucs|hdemucs|htdemucs)\n(Demucs|HDemucs|HTDemucs)\n/;

/** The classes of a checkpoint (one) or of a bag's members; undefined where it cannot tell. */
export function demucsClassesOf(file: string): readonly DemucsClass[] | undefined {
  try {
    if (!/\.ya?ml$/i.test(file)) return oneClass(checkpointClass(file));
    const bag = parseBagFile(readSmallModelFile(file, 'Demucs bag', BAG_BYTES), file);
    const classes = bag.models.map((member) => checkpointClass(resolveMember(path.dirname(file), member)));
    return classes.every((klass) => klass !== undefined) ? (classes as DemucsClass[]) : undefined;
  } catch {
    return undefined;
  }
}

function oneClass(klass: DemucsClass | undefined): readonly DemucsClass[] | undefined {
  return klass === undefined ? undefined : [klass];
}

function checkpointClass(file: string): DemucsClass | undefined {
  const { fd } = openModelFile(file, 'Demucs checkpoint', (error) => new StemsplitError('MODEL_NOT_FOUND', file, { cause: error }));
  try {
    const head = Buffer.alloc(HEAD_BYTES);
    const read = readSync(fd, head, 0, HEAD_BYTES, 0);
    return CLASS_GLOBAL.exec(head.subarray(0, read).toString('latin1'))?.[1] as DemucsClass | undefined;
  } finally {
    closeSync(fd);
  }
}
