/**
 * The staging folders of a split: stems are encoded into `<outDir>.partial-<pid>-<time>` and moved into
 * `outDir` when all are done, so `outDir` never holds a half-written stem; and the clean-up of the staging
 * folders a stopped or killed run left behind.
 */
import { readFileSync } from 'node:fs';
import { mkdir, readdir, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/** A fresh, empty staging folder for `outDir`, named after this process. */
export async function openStaging(outDir: string): Promise<string> {
  const staging = `${stagingPrefix(outDir)}${Date.now()}`;
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  return staging;
}

/** Moves the finished `files` in one by one (other files a user keeps in `outDir` are left alone), then drops the staging folder. */
export async function moveIntoPlace(staging: string, outDir: string, files: readonly string[]): Promise<void> {
  await mkdir(outDir, { recursive: true });
  for (const file of files) await rename(join(staging, file), join(outDir, file));
  await rm(staging, { recursive: true, force: true });
}

/** The start of this process's staging folders' names for `outDir`, for whoever must remove them when it is stopped mid-encode. */
export function stagingPrefix(outDir: string): string {
  return `${outDir}.partial-${process.pid}-`;
}

/** `<track>.partial-<pid>-<time>`: a staging folder, and the process that made it. */
const STAGING_NAME = /^.+\.partial-(\d+)-\d+$/;

function processIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: alive, but another user's.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  return !isZombie(pid);
}

/**
 * A split worker whose parent was killed is re-parented to PID 1, which in a container often
 * never reaps it: a zombie answers signal 0 but has stopped for good (Linux's /proc; elsewhere
 * a process that answers is taken as running).
 */
function isZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z';
  } catch {
    return false;
  }
}

/**
 * Removes the staging folders in `outputRoot` that a killed run left (SIGKILL, power loss): those
 * of processes no longer running. Finished stems live in `<track>/`, never in a staging folder,
 * and a run still going (this one or another) keeps its own. Returns the folders removed.
 */
export async function removeLeftoverStaging(outputRoot: string): Promise<string[]> {
  const entries = await readdir(outputRoot, { withFileTypes: true }).catch(() => []);
  const leftovers = entries.filter((entry) => {
    const pid = Number(STAGING_NAME.exec(entry.name)?.[1] ?? NaN);
    return entry.isDirectory() && Number.isInteger(pid) && pid !== process.pid && !processIsAlive(pid);
  });
  await Promise.all(leftovers.map((entry) => rm(join(outputRoot, entry.name), { recursive: true, force: true })));
  return leftovers.map((entry) => join(outputRoot, entry.name));
}

/** Removes this process's staging folders for `outDir` (a stopped split's half-encoded stems), or those of process `pid` (a worker ended mid-split). */
export async function removeStaging(outDir: string, pid = process.pid): Promise<void> {
  const prefix = `${basename(outDir)}.partial-${pid}-`;
  const names = await readdir(dirname(outDir)).catch(() => [] as string[]);
  await Promise.all(names.filter((name) => name.startsWith(prefix)).map((name) => rm(join(dirname(outDir), name), { recursive: true, force: true })));
}
