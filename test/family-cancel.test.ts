/**
 * The service discipline for every family (issue 37, item 5, in part): a split stopped while the
 * model runs ends promptly, exit 130, with no stems and no staging folder left, for every family in
 * FAMILY_FIXTURES (HTDemucs, BS-RoFormer, SCNet, MDX23C, MDX-Net, VR, HDemucs, time-domain Demucs)
 * and an ensemble, each from its shared fixture through the real CLI; and a split stopped while its
 * model is still being converted on first use (its worker ended, nothing left in the cache). Skipped
 * (saying why) where the fixtures are missing.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { writeSong } from './support/audio.js';
import { tempDir } from './support/temp-dir.js';
import { demucsConversions, demucsLoadUnderWay, processesMentioning } from './support/first-load.js';
import { FAMILY_FIXTURES, fixtureFile, type FamilyModels } from './support/fixtures.js';
import { interruptWhen } from './support/interrupt.js';

/** How long a stop may take from SIGINT to exit: the 2 s. */
const STOP_SECONDS = 2;

const FAMILIES: readonly FamilyModels[] = [
  ...FAMILY_FIXTURES,
  ['an ensemble (bundled + SCNet)', () => ['bundled-4s', fixtureFile('msst', 'scnet_2stem.ckpt')]],
];

const work = tempDir('stemsplit-cancel-');
const song = join(work, 'long.wav');
writeSong(song, 120);

/** One run's folders: its output and its model cache. */
interface Run {
  readonly out: string;
  readonly cache: string;
}

/**
 * Runs `stemsplit split` of the long song with `models` in fresh folders, sends SIGINT once `ready`
 * holds (waiting for `what`), and asserts it then ended within STOP_SECONDS with exit 130.
 */
async function interruptedSplit(t: TestContext, models: readonly string[], ready: (run: Run) => boolean, what: string): Promise<Run> {
  const dir = tempDir('stemsplit-cancel-run-');
  const run = { out: join(dir, 'out'), cache: join(dir, 'cache') };
  const args = ['split', song, '-o', run.out, ...models.flatMap((model) => ['--model', model])];
  const { code, seconds, stderr } = await interruptWhen(
    args,
    { STEMSPLIT_DATA_DIR: join(dir, 'data'), STEMSPLIT_CACHE_DIR: run.cache },
    () => ready(run),
    what,
  );
  t.diagnostic(`stopped in ${seconds.toFixed(2)} s`);
  assert.equal(code, 130, stderr);
  assert.ok(seconds <= STOP_SECONDS, `stopping took ${seconds.toFixed(2)} s`);
  return run;
}

/** The staging folder appears once the model is loaded and the first stems are being written. */
const staging = ({ out }: Run): string[] => (existsSync(out) ? readdirSync(out).filter((name) => name.startsWith('long.partial-')) : []);

for (const [family, models] of FAMILIES) {
  const given = models();
  const skip = given.some((model) => model === undefined) ? 'its fixture is missing' : false;
  test(`${family}: SIGINT while the model runs ends the split within ${STOP_SECONDS} s, exit 130, no stems left`, { skip }, async (t) => {
    const { out } = await interruptedSplit(t, given as string[], (run) => staging(run).length === 1, 'the split');
    assert.deepEqual(readdirSync(out), [], 'neither stems nor their staging folder remain');
  });
}

const FULL_SIZE = fixtureFile('demucs', 'htdemucs_full_random.th');

test(`SIGINT while a model is converted on first use ends the split within ${STOP_SECONDS} s, exit 130, its worker gone, nothing left`, {
  skip: FULL_SIZE === undefined ? 'the full-size HTDemucs fixture is missing' : false,
}, async (t) => {
  // The worker is loading: past the checkpoint's structure check, hashing and converting it (seconds for this 80 MB network).
  const { out, cache } = await interruptedSplit(t, [FULL_SIZE as string], ({ cache }) => demucsLoadUnderWay(cache), 'the load');
  assert.deepEqual(processesMentioning(cache), [], 'no process of the run is left (the worker was converting)');
  assert.deepEqual(demucsConversions(cache), [], 'the conversion was stopped and left nothing half-written');
  assert.deepEqual(existsSync(out) ? readdirSync(out) : [], [], 'neither stems nor their staging folder');
});
