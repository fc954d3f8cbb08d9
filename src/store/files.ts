/**
 * The layout of the data dir. Every path the server writes is built here from validated
 * ids and stem names, so no request can steer a write outside the data dir.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { stemExtension, type StemFormat } from '../audio/formats.js';
import { ID_PATTERN } from './ids.js';
import { PRIVATE_DIR_MODE } from './private-files.js';

const STEM_NAME = /^[a-z][a-z0-9_-]{0,31}$/;

export interface DataLayout {
  readonly root: string;
  readonly database: string;
  /** Where an upload is kept once complete, relative to the data dir. */
  uploadFile(uploadId: string): string;
  sourceFile(splitId: string): string;
  stemDir(splitId: string): string;
  stemFile(splitId: string, stem: string, format: StemFormat): string;
  absolute(relativePath: string): string;
}

function checkId(id: string): string {
  if (!ID_PATTERN.test(id)) throw new Error(`not an id: ${JSON.stringify(id)}`);
  return id;
}

export function dataLayout(root: string): DataLayout {
  for (const dir of ['uploads', 'sources', 'stems']) mkdirSync(join(root, dir), { recursive: true, mode: PRIVATE_DIR_MODE });
  return Object.freeze({
    root,
    database: join(root, 'stemsplit.sqlite'),
    uploadFile: (uploadId: string) => join('uploads', checkId(uploadId)),
    sourceFile: (splitId: string) => join('sources', checkId(splitId)),
    stemDir: (splitId: string) => join('stems', checkId(splitId)),
    stemFile: (splitId: string, stem: string, format: StemFormat) => {
      if (!STEM_NAME.test(stem)) throw new Error(`not a stem name: ${JSON.stringify(stem)}`);
      return join('stems', checkId(splitId), `${stem}.${stemExtension(format)}`);
    },
    absolute: (relativePath: string) => join(root, relativePath),
  });
}

export function isStemName(name: string): boolean {
  return STEM_NAME.test(name);
}
