/**
 * Removing the runtime dirs of other versions: each version of the executable unpacks about
 * 116 MB, so every upgrade used to leave the previous one behind for good. A dir goes when no
 * start has used it for a week (each start touches its own dir) and no running process has one
 * of its files mapped: an old `serve` that is still running keeps its native addons mapped, so
 * its dir stays. Linux only, like the executable.
 */
import { readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync } from 'node:fs';
import { join, sep } from 'node:path';

export const UNUSED_FOR_MS = 7 * 24 * 60 * 60 * 1000;
/** `<version>-<content hash>`, as `runtimeDirName` makes them; staging and damaged dirs start with a dot. */
const RUNTIME_DIR_NAME = /^[0-9A-Za-z][^/]*-[0-9a-f]{16,64}$/;

/** Records that this start uses `dir`, so no other version's start takes it for abandoned. */
export function markRuntimeUsed(dir: string, now = new Date()): void {
  utimesSync(dir, now, now);
}

/** Every file some process of this machine has mapped, as far as /proc lets this user see. */
export function mappedFiles(procDir = '/proc'): Set<string> {
  const files = new Set<string>();
  for (const pid of readdirSync(procDir).filter((name) => /^\d+$/.test(name))) {
    let maps: string;
    try {
      maps = readFileSync(join(procDir, pid, 'maps'), 'utf8');
    } catch {
      continue; // Gone, or another user's.
    }
    for (const line of maps.split('\n')) {
      const path = line.indexOf(' /');
      if (path >= 0) files.add(line.slice(path + 1).replace(/ \(deleted\)$/, ''));
    }
  }
  return files;
}

/**
 * Removes the runtime dirs under `parentDir` other than `keep` that are unused by the rules above;
 * returns their names. A dir is renamed aside first, so no start ever finds it half-deleted.
 */
export function pruneRuntimes(parentDir: string, keep: string, nowMs = Date.now(), inUse: () => Set<string> = mappedFiles): string[] {
  const stale = readdirSync(parentDir).filter(
    (name) => name !== keep && RUNTIME_DIR_NAME.test(name) && unusedFor(join(parentDir, name), nowMs) >= UNUSED_FOR_MS,
  );
  if (stale.length === 0) return [];
  const mapped = [...inUse()];
  const removed: string[] = [];
  for (const name of stale) {
    const dir = join(parentDir, name);
    if (mapped.some((file) => file.startsWith(dir + sep))) continue;
    const aside = join(parentDir, `.${name}.damaged-${process.pid}-${nowMs}`);
    try {
      renameSync(dir, aside);
    } catch {
      continue; // Another start moved it first.
    }
    rmSync(aside, { recursive: true, force: true });
    removed.push(name);
  }
  return removed;
}

function unusedFor(dir: string, nowMs: number): number {
  try {
    return nowMs - statSync(dir).mtimeMs;
  } catch {
    return 0;
  }
}
