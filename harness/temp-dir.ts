/** Scratch folders for tests and scripts, under the system's temporary dir. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function tempDir(prefix = 'stemsplit-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}
