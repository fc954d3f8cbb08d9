/**
 * Model files come from strangers: a path may name a FIFO (whose open blocks until someone
 * writes), a device (/dev/zero never ends) or a socket. Every reader of a model file opens it
 * through here: without blocking, then refused unless it is a regular file, and small files
 * (configs, model data) are read only up to a size no real one reaches.
 */
import { closeSync, constants, fstatSync, openSync, readSync, realpathSync, statSync, type Stats } from 'node:fs';
import { dirname, sep } from 'node:path';
import { StemsplitError } from '../errors.js';

/** What a path is, in words, when it is not a regular file. */
function kindOf(stats: Stats): string {
  if (stats.isFIFO()) return 'a FIFO (named pipe)';
  if (stats.isCharacterDevice() || stats.isBlockDevice()) return 'a device';
  if (stats.isSocket()) return 'a socket';
  if (stats.isDirectory()) return 'a folder';
  return 'not a regular file';
}

function notRegular(path: string, stats: Stats, what: string): StemsplitError {
  return new StemsplitError('MODEL_INVALID', `${path} is ${kindOf(stats)}, not a ${what}; give the path of the file itself`);
}

/**
 * Refuses a path that exists but is neither a regular file nor a folder (a folder is a model
 * too: its model.json), without opening it. Call where a model path is resolved.
 */
export function refuseSpecialFile(path: string, what = 'model file'): void {
  const stats = statSync(path);
  if (!stats.isFile() && !stats.isDirectory()) throw notRegular(path, stats, what);
}

/** A path that is a link leading back to itself (ELOOP) is a hostile path, not a missing file: refused as damaged. */
export function refuseLinkLoop(path: string, what = 'model file'): void {
  try {
    statSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ELOOP')
      throw new StemsplitError('MODEL_INVALID', `${path}: the ${what} is a link that leads back to itself (a loop of links), not a file`);
  }
}

/** An open regular file: its descriptor and size. Close it with `closeSync(fd)`. */
export interface OpenModelFile {
  readonly fd: number;
  readonly size: number;
}

/**
 * Opens `path` for reading without blocking (O_NONBLOCK: a FIFO opens at once) and refuses it
 * unless it is a regular file; `missing` is the error for a path that cannot be opened.
 */
export function openModelFile(path: string, what: string, missing: (error: unknown) => StemsplitError): OpenModelFile {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    throw missing(error);
  }
  const stats = fstatSync(fd);
  if (!stats.isFile()) {
    closeSync(fd);
    throw notRegular(path, stats, what);
  }
  return { fd, size: stats.size };
}

/**
 * The whole of a small model file (a yaml config, a json of model data) as text, refused above
 * `maxBytes` before any of it is read.
 */
export function readSmallModelFile(path: string, what: string, maxBytes: number): string {
  const missing = (error: unknown) => new StemsplitError('MODEL_NOT_FOUND', `cannot read the ${what} ${path}`, { cause: error });
  const { fd, size } = openModelFile(path, what, missing);
  try {
    if (size > maxBytes) {
      throw new StemsplitError('MODEL_INVALID', `${path} is ${size} bytes; a ${what} is at most ${maxBytes} bytes, so this is not one`);
    }
    const bytes = Buffer.allocUnsafe(size);
    let done = 0;
    while (done < size) {
      const n = readSync(fd, bytes, done, size - done, done);
      if (n === 0) break;
      done += n;
    }
    return utf8Text(bytes.subarray(0, done), path, what);
  } finally {
    closeSync(fd);
  }
}

/** PyYAML and Python's json.load (UTF-8 on the boxes UVR and MSST run on) refuse bytes that are not UTF-8: so does stemsplit, rather than read them as U+FFFD. */
function utf8Text(bytes: Uint8Array, path: string, what: string): string {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    throw new StemsplitError('MODEL_INVALID', `${path} is not UTF-8 text, so it is not a ${what}`);
  }
}

/**
 * Refuses a file found in a model's folder (a yaml beside the checkpoint, NAME.json, a bag's
 * member) that is a link leading out of that folder: the user named the model, not the file
 * the link reaches, and a folder from a stranger (unpacked from an archive, say) could make
 * stemsplit read any file the user can. A path that does not resolve is left to the caller's
 * own error; hard links and links inside the folder are fine.
 */
export function refuseLinkOutOfFolder(companion: string, modelFolder: string, what: string): void {
  let target: string;
  let folder: string;
  try {
    target = realpathSync(companion);
    folder = realpathSync(modelFolder);
  } catch {
    return;
  }
  if (dirname(target) === folder || target.startsWith(folder + sep)) return;
  throw new StemsplitError(
    'MODEL_INVALID',
    `${companion}: the ${what} is a link out of the model's folder (to ${target}); stemsplit reads only the files in a model's folder, so copy it in`,
  );
}
