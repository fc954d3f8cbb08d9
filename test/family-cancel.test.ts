/**
 * The service discipline for every family (issue 37, item 5, in part): a split stopped while the
 * model runs ends promptly, exit 130, with no stems and no staging folder left, for every family in
 * FAMILY_FIXTURES (HTDemucs, BS-RoFormer, SCNet, MDX23C, MDX-Net, VR, HDemucs, time-domain Demucs)
 * and an ensemble, each from its shared fixture through the real CLI. Skipped (saying why) where
 * the fixtures are missing.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { writeSong } from '../harness/audio.js';
import { spawnCli } from '../harness/process.js';
import { tempDir } from '../harness/temp-dir.js';
import { FAMILY_FIXTURES, fixtureFile, type FamilyModels } from './support/fixtures.js';
import { until } from './support/wait.js';

/** How long a stop may take from SIGINT to exit: the 2 s. */
const STOP_SECONDS = 2;

const FAMILIES: readonly FamilyModels[] = [...FAMILY_FIXTURES, ['an ensemble (bundled + SCNet)', () => ['bundled-4s', fixtureFile('msst', 'scnet_2stem.ckpt')]]];

const work = tempDir('stemsplit-cancel-');
const song = join(work, 'long.wav');
writeSong(song, 120);

for (const [family, models] of FAMILIES) {
  const given = models();
  const skip = given.some((model) => model === undefined) ? 'its fixture is missing' : false;
  test(`${family}: SIGINT while the model runs ends the split within ${STOP_SECONDS} s, exit 130, no stems left`, { skip }, async (t) => {
    const dir = tempDir('stemsplit-cancel-run-');
    const out = join(dir, 'out');
    const args = ['split', song, '-o', out, ...given.flatMap((model) => ['--model', model as string])];
    const child = spawnCli(args, { STEMSPLIT_DATA_DIR: join(dir, 'data'), STEMSPLIT_CACHE_DIR: join(dir, 'cache') });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
    // The staging folder appears once the model is loaded and the first stems are being written.
    const staging = () => (existsSync(out) ? readdirSync(out).filter((name) => name.startsWith('long.partial-')) : []);
    await until(() => staging().length > 0 || child.exitCode !== null, 240_000, () => `the split never began: ${stderr}`);
    assert.equal(staging().length, 1, `the split began: ${stderr}`);
    const stopped = performance.now();
    child.kill('SIGINT');
    const code = await exited;
    const seconds = (performance.now() - stopped) / 1000;
    t.diagnostic(`stopped in ${seconds.toFixed(2)} s`);
    assert.equal(code, 130, stderr);
    assert.ok(seconds <= STOP_SECONDS, `stopping took ${seconds.toFixed(2)} s`);
    assert.deepEqual(readdirSync(out), [], 'neither stems nor their staging folder remain');
  });
}
