/**
 * The service discipline for every family (issue 37, item 5, in part), as test/crash.test.ts
 * holds it for the bundled model: `stemsplit serve` SIGKILLed while a job runs a fixture of a
 * family in FAMILY_FIXTURES (or an ensemble) is started again, the job is
 * taken over and succeeds, charged once, and its stems are exactly those of an uninterrupted
 * `stemsplit split` with the same model. Skipped (saying why) where the fixtures are missing.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { writeSong } from './support/audio.js';
import { ApiClient } from './support/client.js';
import { killHard, runCli, startServeProcess } from './support/process.js';
import { tempDir } from './support/temp-dir.js';
import { FAMILY_FIXTURES, fixtureFile, type FamilyModels } from './support/fixtures.js';
import { decodePlanar } from './support/reference-audio.js';

const SECONDS = 30;

const FAMILIES: readonly FamilyModels[] = [
  ...FAMILY_FIXTURES,
  ['an ensemble (bundled + MDX23C)', () => ['bundled-4s', fixtureFile('msst', 'mdx23c_2stem.ckpt')]],
];

for (const [family, models] of FAMILIES) {
  const given = models();
  const skip = given.some((model) => model === undefined) ? 'its fixture is missing' : false;
  test(`${family}: a job whose server is SIGKILLed mid-run is taken over, charged once, and its stems are exact`, { skip }, async () => {
    const dataDir = tempDir('stemsplit-family-crash-');
    const env = { STEMSPLIT_DATA_DIR: dataDir, STEMSPLIT_CACHE_DIR: join(dataDir, 'cache'), STEMSPLIT_MODEL_4S: (given as string[]).join('+') };
    const created = runCli(['keys', 'create', '--json'], env);
    assert.equal(created.status, 0, created.stderr);
    const { key } = JSON.parse(created.stdout) as { key: string };
    const song = join(dataDir, 'song.wav');
    writeSong(song, SECONDS);

    // The reference: the same model, uninterrupted, through the CLI (which shares the cache, so the conversion is done once).
    const reference = join(dataDir, 'reference');
    const split = runCli(['split', song, '-o', reference, '--format', 'wav', ...given.flatMap((model) => ['--model', model as string])], env);
    assert.equal(split.status, 0, split.stderr);

    let server = await startServeProcess([], env);
    const client = new ApiClient(() => server.url, key);
    try {
      const job = await client.request('POST', '/audio/splits', {
        body: { input: await client.upload(readFileSync(song), 'song.wav'), stemModel: '4s', outputFormat: 'wav' },
      });
      assert.equal(job.status, 200, job.text);
      const id = job.json.data.id as string;
      const running = await client.waitForSplit(id, { until: (view) => view.status !== 'queued', everyMs: 20 });
      assert.equal(running.json.data.status, 'processing', 'the job must not finish before the kill');
      await killHard(server.child);

      server = await startServeProcess([], env);
      const final = (await client.waitForSplit(id)).json.data;
      assert.equal(final.status, 'succeeded', JSON.stringify(final.error));
      assert.equal((await client.request('GET', '/credits')).json.data.balance, 3600 - SECONDS, 'charged exactly once');
      for (const [stem, url] of Object.entries(final.stems as Record<string, string>)) {
        const served = join(dataDir, `served-${stem}.wav`);
        writeFileSync(served, Buffer.from(await (await fetch(url)).arrayBuffer()));
        assert.deepEqual(decodePlanar(served, 2), decodePlanar(join(reference, 'song', `${stem}.wav`), 2), `${stem} differs from the uninterrupted split`);
      }
    } finally {
      await killHard(server.child);
    }
  });
}
