/**
 * What `split` was given, as the files it splits: each file named, and for each folder named the
 * audio files under it (every level, in name order). Files in a folder that are not audio by their
 * extension are skipped and counted; a name that is missing, or not a file or folder, is a failure
 * of its own, so one mistyped name in a batch does not stop the rest.
 */
import { readdirSync, statSync } from 'node:fs';
import { extname, join } from 'node:path';
import type { ErrorCode } from '../errors.js';

/** Extensions of the audio files a folder's walk takes (what ffmpeg reads and people keep songs in). */
export const AUDIO_EXTENSIONS: ReadonlySet<string> = new Set([
  'mp3',
  'wav',
  'wave',
  'flac',
  'm4a',
  'aac',
  'mp4',
  'ogg',
  'oga',
  'opus',
  'webm',
  'mka',
  'aif',
  'aiff',
  'aifc',
  'alac',
  'wma',
  'ape',
  'wv',
  'caf',
]);

export interface InputProblem {
  readonly code: ErrorCode;
  readonly message: string;
}

export interface Inputs {
  /** The files to split, in the order given (a folder's files in name order where it was named). */
  readonly files: readonly string[];
  /** Names given that cannot be split at all, with why. */
  readonly problems: ReadonlyMap<string, InputProblem>;
  /** One line per folder: how many audio files it gave and how many others it skipped. */
  readonly folderLines: readonly string[];
  /** A folder was named: the run is a batch, however many files it held. */
  readonly fromFolder: boolean;
}

export function expandInputs(names: readonly string[]): Inputs {
  const files: string[] = [];
  const problems = new Map<string, InputProblem>();
  const folderLines: string[] = [];
  let fromFolder = false;
  for (const name of names) {
    const stats = statSync(name, { throwIfNoEntry: false });
    if (!stats) problems.set(name, { code: 'NOT_FOUND', message: `no such file: ${name}` });
    else if (stats.isFile()) files.push(name);
    else if (!stats.isDirectory()) problems.set(name, { code: 'USAGE', message: `not a regular file or folder: ${name}` });
    else {
      fromFolder = true;
      const walked = walkFolder(name);
      const skipped = walked.skipped > 0 ? `, ${walked.skipped} other file${walked.skipped === 1 ? '' : 's'} skipped` : '';
      if (walked.audio.length === 0) problems.set(name, { code: 'NOT_FOUND', message: `${name} holds no audio files (${AUDIO_NAMES}${skipped})` });
      else folderLines.push(`${name}: ${walked.audio.length} audio file${walked.audio.length === 1 ? '' : 's'}${skipped}`);
      files.push(...walked.audio);
    }
  }
  return { files, problems, folderLines, fromFolder };
}

const AUDIO_NAMES = 'mp3, wav, flac, m4a, ogg, opus, aiff, …';

/** The audio files under `folder`, every level, sorted by path; links are followed to files only (never into a loop of folders). */
function walkFolder(folder: string): { audio: string[]; skipped: number } {
  const audio: string[] = [];
  let skipped = 0;
  const visit = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) visit(path);
      else if (
        (entry.isFile() || (entry.isSymbolicLink() && statSync(path, { throwIfNoEntry: false })?.isFile())) &&
        AUDIO_EXTENSIONS.has(extname(entry.name).slice(1).toLowerCase())
      )
        audio.push(path);
      else skipped++;
    }
  };
  visit(folder);
  return { audio, skipped };
}
