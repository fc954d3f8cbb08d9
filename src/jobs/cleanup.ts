/**
 * Retention: stems (and the source they came from) are removed once past retention; upload
 * reservations that expired unused are removed with their bytes; idempotency keys expire.
 */
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { DataStore } from '../store/index.js';

export interface CleanupOptions {
  readonly stemRetentionSeconds: number;
  readonly intervalMs?: number;
}

export async function cleanupOnce(data: DataStore, options: CleanupOptions): Promise<{ splits: number; uploads: number }> {
  const { layout } = data;
  const cutoff = data.clock.now() - options.stemRetentionSeconds * 1000;
  let splits = 0;
  for (const split of await data.splits.expiredStems(cutoff, 500)) {
    await rm(layout.absolute(layout.stemDir(split.id)), { recursive: true, force: true });
    await rm(layout.absolute(split.sourcePath), { force: true });
    await data.splits.markPurged(split.id);
    splits++;
  }
  let uploads = 0;
  for (const upload of await data.uploads.expiredUnused(500)) {
    await rm(layout.absolute(layout.uploadFile(upload.id)), { force: true });
    await data.uploads.delete(upload.id);
    uploads++;
  }
  await data.idempotency.purgeExpired();
  return { splits, uploads };
}

/**
 * Removes what a killed process left half-written: `uploads/*.partial`, `sources/*.partial` and
 * `stems/<id>.partial-*` staging folders. Only safe before this process starts any transfer or job,
 * and only where no other process shares the data dir (one `serve` on SQLite).
 */
export async function removeStalePartials(data: DataStore): Promise<number> {
  let removed = 0;
  for (const dir of ['uploads', 'sources', 'stems']) {
    const absolute = data.layout.absolute(dir);
    const names = await readdir(absolute).catch(() => [] as string[]);
    for (const name of names.filter((n) => n.includes('.partial'))) {
      await rm(join(absolute, name), { recursive: true, force: true });
      removed++;
    }
  }
  return removed;
}

/** Runs `cleanupOnce` now and then every interval (10 minutes by default); returns a stop function. */
export function startCleanup(data: DataStore, options: CleanupOptions, log?: (line: string) => void): () => void {
  const run = () => cleanupOnce(data, options).catch((error: Error) => log?.(`cleanup failed: ${error.message}`));
  void run();
  const timer = setInterval(run, options.intervalMs ?? 600_000);
  timer.unref();
  return () => clearInterval(timer);
}
