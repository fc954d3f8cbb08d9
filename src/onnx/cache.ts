/**
 * Converted models on disk, keyed by the checkpoint's SHA-256 and the converter's version
 * (so a changed graph layout never reuses an old conversion). An entry is a directory of
 * ONNX files plus `model.json`; it is written under a temporary name and renamed into
 * place, so a crash or a concurrent conversion never leaves a torn entry.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { sha256File } from '../model-files/sha256.js';

export const MANIFEST_FILE = 'model.json';

/** The directory of one conversion (`folder`: the converter's, which its caller names, e.g. `demucs` or `roformer`). */
export function cacheEntryDir(cacheDir: string, key: string, converterVersion: number, folder: string): string {
  return path.join(cacheDir, folder, `${key}.v${converterVersion}`);
}

/** The entry's manifest, or undefined when the entry is missing or unreadable. */
export async function readCachedManifest(entryDir: string): Promise<unknown> {
  try {
    return JSON.parse(await readFile(path.join(entryDir, MANIFEST_FILE), 'utf8')) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * Stores one entry: `writeFiles` fills the (temporary) directory it is given, the manifest
 * is written last, and the directory is renamed into place. If another process won the
 * race, its entry is kept.
 */
export async function storeEntry(entryDir: string, writeFiles: (dir: string) => void, manifest: unknown): Promise<void> {
  await mkdir(path.dirname(entryDir), { recursive: true });
  const temp = `${entryDir}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    await mkdir(temp);
    writeFiles(temp);
    await writeFile(path.join(temp, MANIFEST_FILE), JSON.stringify(manifest, null, 2));
    try {
      await rename(temp, entryDir);
    } catch (error) {
      // Another conversion of the same checkpoint finished first; its entry is complete.
      if (!isAlreadyThere(error)) throw error;
    }
  } finally {
    await rm(temp, { recursive: true, force: true });
  }
}

/**
 * Removes the entries a process stopped outright (SIGKILL) left half-written under their temporary
 * names (`storeEntry`): `pid` is that process's. Best effort: what cannot be removed stays.
 */
export async function removeAbandonedEntries(cacheDir: string, pid: number): Promise<void> {
  const marker = `.tmp-${pid}-`;
  for (const name of await readdir(cacheDir).catch(() => [] as string[])) {
    const folder = path.join(cacheDir, name);
    for (const entry of await readdir(folder).catch(() => [] as string[])) {
      if (entry.includes(marker)) await rm(path.join(folder, entry), { recursive: true, force: true }).catch(() => undefined);
    }
  }
}

function isAlreadyThere(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ENOTEMPTY' || code === 'EEXIST';
}

/**
 * Runs `check` (a family's graphs built against a checkpoint's stand-in weights, to refuse weights
 * that do not fit the config before the file is hashed; MDX-Net's trial run of a graph on silence)
 * unless it passed before for `key` (the
 * pickle's SHA-256 with the config, options and converter version: what the check depends on).
 * A pass is remembered as an empty file under `<cacheDir>/shape-checks/<folder>/` (the caller's): the check costs
 * what building the graphs does (2.3-3.9 s for a full-size HTDemucs here, against 0.16-0.52 s to hash it),
 * too much to repeat at every load of a model whose conversion is cached.
 */
export async function checkOnce(cacheDir: string, folder: string, key: string, check: () => void | Promise<void>): Promise<void> {
  const marker = path.join(cacheDir, 'shape-checks', folder, createHash('sha256').update(key).digest('hex'));
  if (existsSync(marker)) return;
  await check();
  // Best effort: a cache that cannot be written (read-only, full) only means the check runs again next time.
  await mkdir(path.dirname(marker), { recursive: true })
    .then(() => writeFile(marker, ''))
    .catch(() => undefined);
}

/**
 * The converted graphs made from a checkpoint (stages.ts writes each entry's `model.json` with
 * its `checkpointSha256`), under the given cache folders: what `models remove` deletes with it.
 */
export async function conversionsOf(cacheDir: string, checkpoint: string, folders: readonly string[]): Promise<string[]> {
  let sha: string;
  try {
    sha = await sha256File(checkpoint);
  } catch {
    return [];
  }
  const matches: string[] = [];
  for (const folder of folders) {
    const root = path.join(cacheDir, folder);
    for (const entry of await readdir(root).catch(() => [] as string[])) {
      const manifest = await readFile(path.join(root, entry, MANIFEST_FILE), 'utf8').catch(() => '');
      if (manifest.includes(`"checkpointSha256": "${sha}"`)) matches.push(path.join(root, entry));
    }
  }
  return matches;
}
