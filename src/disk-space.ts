/** Free disk space, asked before writing something big so a full disk is refused in words, not met halfway. */
import { statfs } from 'node:fs/promises';
import { dirname } from 'node:path';

/**
 * Bytes an unprivileged process may still write on the file system holding `path` (or its
 * nearest existing parent); undefined where the system cannot tell.
 */
export async function freeBytesAt(path: string): Promise<{ bytes: number; at: string } | undefined> {
  for (let probe = path; ; probe = dirname(probe)) {
    const stats = await statfs(probe).catch(() => undefined);
    if (stats) return { bytes: stats.bavail * stats.bsize, at: probe };
    if (dirname(probe) === probe) return undefined;
  }
}

/** `1.2 GB` / `380 MB`: disk sizes in a message. */
export function diskSize(bytes: number): string {
  return bytes >= 1e9 ? `${(bytes / 1e9).toFixed(1)} GB` : `${Math.ceil(bytes / 1e6)} MB`;
}
