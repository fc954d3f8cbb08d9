/**
 * Unpacking the executable's runtime (natives, ffmpeg, models) once into a versioned,
 * content-hashed dir, safely when several processes start at the same moment.
 *
 * Each process that finds no complete dir unpacks into its own staging dir beside it and
 * renames it into place; rename(2) of a dir is atomic, so a reader sees either nothing or a
 * complete dir. A process whose rename loses the race drops its copy and uses the winner's.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { brotliDecompressSync } from 'node:zlib';
import { checkRelativePath, runtimeDirName, type RuntimeManifest } from './manifest.js';

/** Returns the bytes of one SEA asset (`sea.getAsset`, or files on disk in tests). */
export type ReadAsset = (name: string) => Uint8Array;

/** Leftovers of a process killed mid-unpack are removed once they are this old. */
const STALE_STAGING_MS = 60 * 60 * 1000;

/** Returns the complete runtime dir under `parentDir`, unpacking it first when needed. */
export function ensureRuntime(manifest: RuntimeManifest, parentDir: string, readAsset: ReadAsset): string {
  const name = runtimeDirName(manifest);
  const finalDir = join(parentDir, name);
  if (isComplete(finalDir, manifest)) return finalDir;

  mkdirSync(parentDir, { recursive: true });
  removeStaleStaging(parentDir, Date.now());
  // Existence first, completeness second: a dir only ever appears complete (by rename), so one that
  // exists and is incomplete is damaged, never another process's copy landing between two looks.
  if (existsSync(finalDir)) {
    if (isComplete(finalDir, manifest)) return finalDir;
    discard(finalDir, parentDir, name);
  }
  const staging = mkdtempSync(join(parentDir, `.${name}.staging-`));
  try {
    unpack(manifest, staging, readAsset);
    renameSync(staging, finalDir);
  } catch (error) {
    rmSync(staging, { recursive: true, force: true });
    // Another process renamed its complete copy into place first: use that one.
    if (isComplete(finalDir, manifest)) return finalDir;
    throw error;
  }
  return finalDir;
}

/** Every file present with its full size: cheap enough (a stat per file) for every start. */
export function isComplete(dir: string, manifest: RuntimeManifest): boolean {
  try {
    return manifest.files.every((file) => statSync(join(dir, file.path)).size === file.size);
  } catch {
    return false;
  }
}

function unpack(manifest: RuntimeManifest, dir: string, readAsset: ReadAsset): void {
  for (const file of manifest.files) {
    const target = join(dir, checkRelativePath(file.path));
    const bytes = brotliDecompressSync(readAsset(file.asset));
    if (bytes.length !== file.size) throw new Error(`asset ${file.asset} unpacks to ${bytes.length} bytes, expected ${file.size}`);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, bytes);
    // Set after writing: the process umask must not strip ffmpeg's execute bit.
    chmodSync(target, file.mode);
  }
}

/** Moves an incomplete dir (a file deleted by hand, a disk that filled up) out of the way, then deletes it. */
function discard(dir: string, parentDir: string, name: string): void {
  const aside = join(parentDir, `.${name}.damaged-${process.pid}-${Date.now()}`);
  try {
    renameSync(dir, aside);
  } catch {
    return; // Someone else moved it first.
  }
  rmSync(aside, { recursive: true, force: true });
}

function removeStaleStaging(parentDir: string, now: number): void {
  for (const entry of readdirSync(parentDir)) {
    if (!entry.startsWith('.') || !/\.(staging|damaged)-/.test(entry)) continue;
    const path = join(parentDir, entry);
    try {
      if (now - statSync(path).mtimeMs > STALE_STAGING_MS) rmSync(path, { recursive: true, force: true });
    } catch {
      // Gone already, or not ours to remove: leave it.
    }
  }
}
