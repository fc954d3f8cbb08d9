/**
 * Watching a model's first load from outside the processes doing it (Linux): when it is under way,
 * whether it left a conversion behind, and whether any process working for it is still alive.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Whether a load of an HTDemucs checkpoint into `cacheDir` is past its structure check: the check's
 * pass is remembered (`<cache>/shape-checks/demucs/`) as the load goes on to hash the checkpoint,
 * convert it and open its sessions, which takes seconds for a full-size network.
 */
export function demucsLoadUnderWay(cacheDir: string): boolean {
  const marks = join(cacheDir, 'shape-checks', 'demucs');
  return existsSync(marks) && readdirSync(marks).length > 0;
}

/** The Demucs conversions in `cacheDir`, finished or half-written (`<key>.v<n>.tmp-<pid>-…`). */
export function demucsConversions(cacheDir: string): string[] {
  const folder = join(cacheDir, 'demucs');
  return existsSync(folder) ? readdirSync(folder) : [];
}

/**
 * The processes (this one aside) whose environment mentions `text`: a run's own cache folder tells its
 * processes apart (the CLI's STEMSPLIT_CACHE_DIR, a split worker's settings).
 */
export function processesMentioning(text: string): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry) && Number(entry) !== process.pid)
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/environ`, 'latin1').includes(text);
      } catch {
        return false; // gone meanwhile, or another user's
      }
    })
    .map(Number);
}
