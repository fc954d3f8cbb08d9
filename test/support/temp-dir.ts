/**
 * Scratch folders for tests and scripts, under the system's temporary dir. Each is removed when
 * the process that made it exits, so a test run or a benchmark leaves nothing behind in /tmp.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const made = new Set<string>();

export function tempDir(prefix = 'stemsplit-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  if (made.size === 0) process.once('exit', removeTempDirs);
  made.add(dir);
  return dir;
}

/** Runs at exit, so synchronous; a folder still in use (a tmpfs left mounted) is left as it is. */
function removeTempDirs(): void {
  for (const dir of made) {
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // Nothing more can be done at exit; the system's temp cleaning will get it.
    }
  }
  made.clear();
}
