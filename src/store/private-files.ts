/**
 * The data dir is the service's alone: it holds the URL-signing key and the webhook secrets (in
 * the database) and people's songs and stems. Folders are 0700 and files 0600 whatever the umask
 * of the shell that started the service: `serve` and `worker` narrow their umask (their job
 * workers inherit it) and tighten what an earlier start, or a copy, left readable by others.
 */
import { chmod, lstat, mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';

export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/** What group and others may do, which nothing in the data dir allows. */
const OTHERS = 0o077;

/**
 * From now on this process (and every process it starts) creates files and folders that only
 * its own user can read: the umask gains group and other bits. The service process writes
 * nothing outside the data dir and the model cache, which is its own too.
 */
export function keepNewFilesPrivate(): void {
  process.umask(process.umask() | OTHERS);
}

/**
 * Makes the data dir (creating it 0700 when missing) and everything in it private: folders 0700,
 * files 0600. Links are left alone (their modes mean nothing; what they lead to is not the data
 * dir's). Returns how many entries were looser, so the caller can say so.
 */
export async function tightenDataDir(root: string): Promise<number> {
  await mkdir(root, { recursive: true, mode: PRIVATE_DIR_MODE });
  return tighten(root);
}

async function tighten(path: string): Promise<number> {
  const info = await lstat(path).catch(() => undefined);
  // Gone meanwhile (a job removed its staging folder), or a link.
  if (!info || info.isSymbolicLink()) return 0;
  let loose = 0;
  if (info.isDirectory()) {
    if ((info.mode & OTHERS) !== 0) {
      await chmod(path, PRIVATE_DIR_MODE);
      loose++;
    }
    const names = await readdir(path).catch(() => [] as string[]);
    for (const name of names) loose += await tighten(join(path, name));
  } else if ((info.mode & OTHERS) !== 0) {
    await chmod(path, PRIVATE_FILE_MODE);
    loose++;
  }
  return loose;
}

/**
 * What `serve` and `worker` do first: narrow the umask, then tighten the data dir, saying so in
 * one line when anything in it was readable by other users.
 */
export async function makeDataDirPrivate(root: string, log: (line: string) => void): Promise<void> {
  keepNewFilesPrivate();
  const count = await tightenDataDir(root);
  if (count > 0)
    log(`tightened the data dir ${root}: ${count} ${count === 1 ? 'entry' : 'entries'} other users could read, now private (folders 0700, files 0600)`);
}
