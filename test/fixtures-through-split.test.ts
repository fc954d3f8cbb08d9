/**
 * Every family's reference fixtures through the paths users run: `stemsplit split x.wav --model
 * FILE --format wav --float32` (the CLI in a child process) and a split made through the API
 * (a server whose `4s` is the file, `outputFormat: "wav"`), each stem against the official code's
 * output. The source is the fixture's input written as a 32-bit float WAV, so nothing but the
 * separation stands between the reference and the stems.
 *
 * Families whose fixtures are present are run: Demucs (every 8th sample kept), BS/Mel-Band
 * RoFormer, SCNet and MDX23C (MSST's demix), MDX-Net (python-audio-separator's pipeline).
 */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCli } from './support/process.js';
import { startTestServer, tempDir, uploadFile, waitForSplit, type TestServer } from './support/server.js';
import { prepareCase, referenceCases, type FixtureCase } from './support/fixture-cases.js';
import { assertStems, decodePlanar, readF32 } from './support/reference-audio.js';

const CASES = referenceCases();
const work = tempDir('stemsplit-through-split-');
after(() => rmSync(work, { recursive: true, force: true }));

/** Each stem file against the reference, at every `stride`-th sample. */
function assertStemFiles(c: FixtureCase, label: string, stemFile: (stem: string) => string): void {
  const decoded = c.stems.map((stem) => decodePlanar(stemFile(stem), c.channels));
  assertStems(`${c.name} ${label}`, readF32(c.reference as string), decoded, c.stems.length, {
    minDb: c.minSnrDb,
    names: c.stems,
    channels: c.channels,
    stride: c.stride,
  });
}

describe('reference fixtures through `stemsplit split`', { skip: CASES.length === 0 ? 'no fixtures' : false }, () => {
  const cacheDir = join(work, 'cache');
  for (const c of CASES) {
    it(c.name, () => {
      const dir = join(work, 'cli', c.name);
      const { model, song } = prepareCase(c, dir);
      const out = join(dir, 'out');
      const result = runCli(['split', song, '--model', model, ...(c.cliArgs ?? []), '--format', 'wav', '--float32', '-o', out], {
        STEMSPLIT_DATA_DIR: join(dir, 'data'),
        STEMSPLIT_CACHE_DIR: cacheDir,
      });
      assert.equal(result.status, 0, result.stderr);
      assertStemFiles(c, 'split', (stem) => join(out, 'song', `${stem}.wav`));
    });
  }
});

describe('reference fixtures through the API (outputFormat wav)', { skip: CASES.length === 0 ? 'no fixtures' : false }, () => {
  const cacheDir = join(work, 'cache');
  for (const c of CASES) {
    describe(c.name, () => {
      let t: TestServer;
      let song: string;
      before(async () => {
        const prepared = prepareCase(c, join(work, 'api', c.name));
        song = prepared.song;
        t = await startTestServer({ cacheDir, modelAliases: { '4s': [prepared.model], '6s': [prepared.model] } });
      });
      after(() => t?.close());
      it('splits as the official code does', async () => {
        const input = await uploadFile(t, readFileSync(song));
        // The fixture's settings, where they are not the defaults, as the job's modelOptions (the flags the CLI run gets).
        const modelOptions = c.modelOptions ?? {};
        const body = { input, stemModel: '4s', outputFormat: 'wav', ...(Object.keys(modelOptions).length > 0 ? { modelOptions } : {}) };
        const created = await t.request('POST', '/audio/splits', { body });
        assert.equal(created.status, 200, created.text);
        const done = (await waitForSplit(t, created.json.data.id, 600_000)).json.data;
        assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
        const downloads = join(work, 'api', c.name, 'stems');
        mkdirSync(downloads, { recursive: true });
        for (const stem of c.stems) {
          const url = done.stems[stem] as string;
          assert.match(url, new RegExp(`/${stem}\\.wav\\?`));
          const response = await fetch(url);
          assert.equal(response.status, 200);
          assert.equal(response.headers.get('content-type'), 'audio/wav');
          writeFileSync(join(downloads, `${stem}.wav`), Buffer.from(await response.arrayBuffer()));
        }
        assertStemFiles(c, 'API', (stem) => join(downloads, `${stem}.wav`));
      });
    });
  }
});
