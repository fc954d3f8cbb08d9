/**
 * One folder, one model's stems. `split` records which model wrote each stem file it writes (in
 * `stem-folders.json` in the data dir, not beside the stems), so that splitting a song again with
 * another model into the same `-o` neither replaces the first model's `vocals` nor leaves a set
 * mixed from two models:
 * - the default layout (`{track}/{stem}.{ext}`) puts the stems of a model other than the one that
 *   already wrote the song's folder in a folder of its own inside it, `{track}/{model}/`;
 * - a `--filename` without `{model}` whose files would replace another model's stems is refused
 *   before any model loads (put `{model}` in it, or use another -o).
 * A folder with no recorded stems (none yet, or stems of an older stemsplit) is the running model's.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { StemsplitError } from '../errors.js';
import { pathSegment } from './filename-template.js';

/** Folder (absolute) → stem file name → the model that wrote it. */
type Writers = Record<string, Record<string, string>>;

export class StemFolders {
  readonly #record: string;

  constructor(dataDir: string) {
    this.#record = join(dataDir, 'stem-folders.json');
  }

  #read(): Writers {
    try {
      return JSON.parse(readFileSync(this.#record, 'utf8')) as Writers;
    } catch {
      return {};
    }
  }

  /** The files of `folder` still there that another model than `model` wrote and `stemFile` (`{stem}` unfilled) could write. */
  #othersStems(folder: string, model: string, stemFile = '{stem}'): Array<{ file: string; model: string }> {
    const [before, after] = stemFile.split('{stem}').map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
    const names = new RegExp(`^${before ?? ''}.+${after ?? ''}$`);
    return Object.entries(this.#read()[folder] ?? {})
      .filter(([file, writer]) => writer !== model && names.test(file) && existsSync(join(folder, file)))
      .map(([file, writer]) => ({ file, model: writer }));
  }

  /** Where a model's stems go under the default layout: the song's folder, or where another model's stems are there, `<song>/<model>/`. */
  defaultFolder(folder: string, model: string): string {
    return this.#othersStems(folder, model).length === 0 ? folder : join(folder, pathSegment(model));
  }

  /** A `--filename` without `{model}` that would replace another model's stems in `folder`: refused in one line. */
  refuseOverwriting(folder: string, stemFile: string, model: string): void {
    const [clash] = this.#othersStems(folder, model, stemFile);
    if (clash === undefined) return;
    throw new StemsplitError(
      'USAGE',
      `${join(folder, clash.file)} holds ${clash.model}'s stems and ${model} would replace them: put {model} in --filename (e.g. "{track}/{model}/{stem}.{ext}") or use another -o`,
    );
  }

  /** Records that `model` wrote `files` (names in `folder`); folders gone from the disk are forgotten. */
  record(folder: string, model: string, files: readonly string[]): void {
    const writers = Object.fromEntries(Object.entries(this.#read()).filter(([known]) => existsSync(known)));
    const own = { ...writers[folder] };
    for (const file of files) own[file] = model;
    writers[folder] = own;
    // Written aside and renamed, so a run reading it meanwhile never sees half of it.
    mkdirSync(dirname(this.#record), { recursive: true });
    const staged = `${this.#record}.${process.pid}`;
    writeFileSync(staged, `${JSON.stringify(writers)}\n`);
    renameSync(staged, this.#record);
  }
}
