/**
 * Converted models on disk, keyed by the checkpoint's SHA-256 (and the converter's version,
 * so a changed graph layout never reuses an old file). Files are written to a temporary
 * name and renamed, so a crash or a concurrent conversion never leaves a torn model.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { randomBytes } from 'node:crypto';

export interface CacheEntryPaths {
  readonly onnx: string;
  readonly meta: string;
}

export async function sha256File(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file, { highWaterMark: 1 << 20 })) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

export function cacheEntry(cacheDir: string, checkpointSha256: string, converterVersion: number): CacheEntryPaths {
  const base = path.join(cacheDir, 'demucs', `${checkpointSha256}.v${converterVersion}`);
  return { onnx: `${base}.onnx`, meta: `${base}.json` };
}

/** The cached metadata, or undefined when the entry is missing or unreadable. */
export async function readCachedMeta(entry: CacheEntryPaths): Promise<unknown> {
  try {
    return JSON.parse(await readFile(entry.meta, 'utf8')) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * Stores one entry: `writeOnnx` writes the graph to the path it is given; the metadata is
 * renamed into place last, so its presence means the graph beside it is complete.
 */
export async function storeEntry(entry: CacheEntryPaths, writeOnnx: (file: string) => void, meta: unknown): Promise<void> {
  await mkdir(path.dirname(entry.onnx), { recursive: true });
  const suffix = `.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  const onnxTemp = entry.onnx + suffix;
  const metaTemp = entry.meta + suffix;
  try {
    writeOnnx(onnxTemp);
    await rename(onnxTemp, entry.onnx);
    await writeFile(metaTemp, JSON.stringify(meta, null, 2));
    await rename(metaTemp, entry.meta);
  } finally {
    await rm(onnxTemp, { force: true });
    await rm(metaTemp, { force: true });
  }
}
