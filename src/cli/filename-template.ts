/**
 * `split --filename`: where each stem goes under `-o`, as demucs' `--filename` and
 * python-audio-separator's custom output names do: `{track}`, `{stem}`, `{model}` and `{ext}` in
 * a relative path, the default `{track}/{stem}.{ext}` (with another model's stems already in the
 * song's folder, `{track}/{model}/{stem}.{ext}`: stem-folders.ts). The folder part names the track's folder
 * (several inputs that come to the same one get `-2`, `-3`, …); the file part, which must hold
 * `{stem}`, names each stem in it.
 */
import { basename, extname, join, resolve } from 'node:path';
import { StemsplitError } from '../errors.js';

export const DEFAULT_FILENAME = '{track}/{stem}.{ext}';
const FIELDS = ['track', 'stem', 'model', 'ext'] as const;

export interface StemPlacement {
  /** The track's folder, relative to `-o`. */
  readonly folder: string;
  /** Each stem's file name in it, `{stem}` still to fill. */
  readonly stemFile: string;
}

/** Checks a template: known fields only, `{stem}` in the file part, a relative path that stays under `-o`. */
export function checkFilenameTemplate(template: string): void {
  const unknown = [...template.matchAll(/\{([^}]*)\}/g)].map((match) => match[1] as string).filter((field) => !(FIELDS as readonly string[]).includes(field));
  if (unknown.length > 0) throw new StemsplitError('USAGE', `--filename knows ${FIELDS.map((field) => `{${field}}`).join(', ')}; not {${unknown[0]}}`);
  const parts = template.split('/');
  if (template.startsWith('/') || parts.some((part) => part === '..' || part === '')) {
    throw new StemsplitError('USAGE', `--filename is a relative path under -o without empty or .. parts, got "${template}"`);
  }
  if (!(parts.at(-1) as string).includes('{stem}') || parts.slice(0, -1).some((part) => part.includes('{stem}'))) {
    throw new StemsplitError('USAGE', `--filename needs {stem} in its file name (the part after the last /), got "${template}"`);
  }
}

/** A field's value as one path segment: separators become `_`, so a value never adds a folder. */
export function pathSegment(value: string): string {
  return value.replace(/[/\\]/g, '_');
}

export function placeStems(template: string, values: { readonly track: string; readonly model: string; readonly ext: string }): StemPlacement {
  const filled = template.replace(/\{(track|model|ext)\}/g, (_, field: 'track' | 'model' | 'ext') => pathSegment(values[field]));
  const cut = filled.lastIndexOf('/');
  return { folder: cut < 0 ? '.' : filled.slice(0, cut), stemFile: filled.slice(cut + 1) };
}

/**
 * Output folders for the tracks of one run: `<output>/<track>`; when two inputs share a track
 * name (`x/song.flac`, `y/song.flac`), the later ones get `<track>-2`, `<track>-3`, … in the
 * order given, so nothing in a run replaces another track's stems.
 */
export function outputFolders(files: readonly string[], output: string): string[] {
  return outputPlaces(files, output, { template: DEFAULT_FILENAME, model: '', ext: '' }).map((place) => place.outDir);
}

/**
 * Where each input's stems go under `--filename`'s template (filename-template.ts); two inputs
 * that would write the same files get `-2`, `-3`, … on their folder (or, in `-o` itself, on their stems).
 */
export function outputPlaces(
  files: readonly string[],
  output: string,
  naming: { readonly template: string; readonly model: string; readonly ext: string },
): Array<{ outDir: string; stemFile: string }> {
  const taken = new Map<string, number>();
  return files.map((file) => {
    const { folder, stemFile } = placeStems(naming.template, { track: basename(file, extname(file)), model: naming.model, ext: naming.ext });
    const key = `${folder}\0${stemFile}`;
    const seen = (taken.get(key) ?? 0) + 1;
    taken.set(key, seen);
    if (seen === 1) return { outDir: resolve(join(output, folder)), stemFile };
    if (folder !== '.') return { outDir: resolve(join(output, `${folder}-${seen}`)), stemFile };
    return { outDir: resolve(output), stemFile: stemFile.replace('{stem}', `{stem}-${seen}`) };
  });
}
