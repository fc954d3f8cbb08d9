/**
 * The VR fixtures (../shared/fixtures/vr) through the paths users run: `stemsplit split x.wav
 * --model NAME.pth [--vr-* …] --format wav --float32` (the real CLI in a child process, the model
 * data as NAME.json beside the file) and a split made through the API (a real server whose `4s`
 * is the file, `outputFormat: "wav"`, the settings as `modelOptions`), each stem ≥ 65 dB against python-audio-separator's over
 * the official output's length, and silent after it (the official stems are shorter than the
 * track: hop·(frames − 1) samples).
 */
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCli } from './support/process.js';
import { VR_DEFAULTS } from '../src/vr/options.js';
import { VR_SETTINGS } from './support/fixture-cases.js';
import { fixtureDir, fixtureManifest } from './support/fixtures.js';
import { assertSnrs, decodePlanar, readF32, snrDb, writeFloatWav } from './support/reference-audio.js';
import { startTestServer, tempDir, uploadFile, waitForSplit, type TestServer } from './support/server.js';

const FIXTURES = fixtureDir('vr');
const MIN_SNR_DB = 65;
const work = tempDir('stemsplit-vr-split-');
after(() => rmSync(work, { recursive: true, force: true }));

interface Fixture {
  readonly files: {
    readonly model: { readonly path: string };
    readonly input: { readonly path: string; readonly shape: readonly [number, number] };
    readonly output: { readonly path: string; readonly shape: readonly [number, number, number]; readonly stems: readonly string[] };
  };
  readonly model_data: Record<string, unknown>;
  readonly options: Record<string, number | boolean>;
}

/** The fixture's settings that differ from the defaults. */
function changedSettings(fixture: Fixture): (readonly [flag: string, apiName: string, value: number | boolean])[] {
  return VR_SETTINGS.flatMap(([key, option, flag, apiName]) => {
    const value = fixture.options[key];
    return value === undefined || value === VR_DEFAULTS[option] ? [] : [[flag, apiName, value] as const];
  });
}

/** As `split` flags. */
function flagsOf(fixture: Fixture): string[] {
  return changedSettings(fixture).flatMap(([flag, , value]) => (typeof value === 'boolean' ? (value ? [flag] : []) : [flag, String(value)]));
}

/** As the API's `modelOptions`. */
function modelOptionsOf(fixture: Fixture): Record<string, number | boolean> {
  return Object.fromEntries(changedSettings(fixture).map(([, apiName, value]) => [apiName, value]));
}

const stemName = (uvr: string) => uvr.toLowerCase().replace(/\s+/g, '_');

/** NAME.pth and NAME.json in a folder of their own (two fixtures share a .pth with other model data), and the input as a float WAV. */
function prepare(name: string, fixture: Fixture, dir: string): { model: string; song: string } {
  mkdirSync(dir, { recursive: true });
  const model = join(dir, `${name}.pth`);
  copyFileSync(join(FIXTURES as string, fixture.files.model.path), model);
  writeFileSync(join(dir, `${name}.json`), JSON.stringify(fixture.model_data));
  const song = join(dir, 'song.wav');
  writeFloatWav(song, readF32(join(FIXTURES as string, fixture.files.input.path)), fixture.files.input.shape[0]);
  return { model, song };
}

function assertStemFiles(name: string, label: string, fixture: Fixture, stemFile: (stem: string) => string): void {
  const reference = readF32(join(FIXTURES as string, fixture.files.output.path));
  const [, channels, m] = fixture.files.output.shape;
  const stems = fixture.files.output.stems.map(stemName);
  const snrs = stems.map((stem, s) => {
    const decoded = decodePlanar(stemFile(stem), channels);
    const length = decoded.length / channels;
    assert.equal(length, fixture.files.input.shape[1], `${name} ${stem}: a stem has the track's length`);
    const head = new Float32Array(channels * m);
    for (let c = 0; c < channels; c++) {
      head.set(decoded.subarray(c * length, c * length + m), c * m);
      assert.ok(
        decoded.subarray(c * length + m, (c + 1) * length).every((v) => v === 0),
        `${name} ${stem}: silent after the official ${m} samples`,
      );
    }
    return snrDb(reference.subarray(s * channels * m, (s + 1) * channels * m), head);
  });
  assertSnrs(`${name} ${label}`, snrs, MIN_SNR_DB, stems);
}

const CASES = fixtureManifest<Fixture>(FIXTURES);

describe('VR fixtures through `stemsplit split`', { skip: FIXTURES === undefined ? 'no fixtures' : false }, () => {
  for (const [name, fixture] of CASES) {
    it(`${name}: split --model ${name}.pth ${flagsOf(fixture).join(' ')}`.trim(), () => {
      const dir = join(work, 'cli', name);
      const { model, song } = prepare(name, fixture, dir);
      const out = join(dir, 'out');
      const result = runCli(['split', song, '--model', model, ...flagsOf(fixture), '--format', 'wav', '--float32', '-o', out], {
        STEMSPLIT_DATA_DIR: join(dir, 'data'),
        STEMSPLIT_CACHE_DIR: join(dir, 'cache'),
      });
      assert.equal(result.status, 0, result.stderr);
      assertStemFiles(name, 'split', fixture, (stem) => join(out, 'song', `${stem}.wav`));
    });
  }

  it("takes python-audio-separator's spellings of the VR flags", () => {
    const found = CASES.find(([, fixture]) => flagsOf(fixture).length > 0);
    assert.ok(found, 'a fixture with settings');
    const [name, fixture] = found;
    const dir = join(work, 'spellings', name);
    const { model, song } = prepare(name, fixture, dir);
    const out = join(dir, 'out');
    const theirs = flagsOf(fixture).map((arg) => (arg.startsWith('--vr-') ? `--${arg.slice(2).replaceAll('-', '_')}` : arg));
    const result = runCli(['split', song, '--model_filename', model, ...theirs, '--output_format', 'WAV', '--float32', '-o', out], {
      STEMSPLIT_DATA_DIR: join(dir, 'data'),
      STEMSPLIT_CACHE_DIR: join(dir, 'cache'),
    });
    assert.equal(result.status, 0, result.stderr);
    assertStemFiles(name, 'split (audio-separator spellings)', fixture, (stem) => join(out, 'song', `${stem}.wav`));
  });

  it('refuses a VR flag where no VR model runs, naming both', () => {
    const dir = join(work, 'misplaced');
    mkdirSync(dir, { recursive: true });
    const song = join(dir, 'song.wav');
    writeFloatWav(
      song,
      new Float32Array(2 * 44_100).map((_, i) => Math.sin(i / 10) * 0.1),
      2,
    );
    const result = runCli(['split', song, '--vr-enable-tta', '-o', join(dir, 'out')], { STEMSPLIT_DATA_DIR: join(dir, 'data') });
    assert.equal(result.status, 2, result.stderr);
    assert.match(result.stderr, /--vr-enable-tta applies to UVR VR \.pth models; .*4s runs /);
  });
});

describe('VR fixtures through the API (outputFormat wav)', { skip: FIXTURES === undefined ? 'no fixtures' : false }, () => {
  for (const [name, fixture] of CASES) {
    describe(name, () => {
      let t: TestServer;
      let song: string;
      before(async () => {
        const prepared = prepare(name, fixture, join(work, 'api', name));
        song = prepared.song;
        t = await startTestServer({ cacheDir: join(work, 'api-cache'), modelAliases: { '4s': [prepared.model], '6s': [prepared.model] } });
      });
      after(() => t?.close());
      it('splits as the official code does', async () => {
        const input = await uploadFile(t, readFileSync(song));
        const modelOptions = modelOptionsOf(fixture);
        const created = await t.request('POST', '/audio/splits', {
          body: { input, stemModel: '4s', outputFormat: 'wav', ...(Object.keys(modelOptions).length > 0 ? { modelOptions } : {}) },
        });
        assert.equal(created.status, 200, created.text);
        const done = (await waitForSplit(t, created.json.data.id, 300_000)).json.data;
        assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
        const downloads = join(work, 'api', name, 'stems');
        mkdirSync(downloads, { recursive: true });
        for (const stem of fixture.files.output.stems.map(stemName)) {
          const url = done.stems[stem] as string;
          assert.match(url, new RegExp(`/${stem}\\.wav\\?`));
          const response = await fetch(url);
          assert.equal(response.status, 200);
          writeFileSync(join(downloads, `${stem}.wav`), Buffer.from(await response.arrayBuffer()));
        }
        assertStemFiles(name, 'API', fixture, (stem) => join(downloads, `${stem}.wav`));
      });
    });
  }
});

describe('VR settings through the API', { skip: FIXTURES === undefined ? 'no fixtures' : false }, () => {
  it('refuses a VR setting out of range in the v1 error envelope, naming it as modelOptions', async () => {
    const [name, fixture] = CASES[0] as [string, Fixture];
    const { model, song } = prepare(name, fixture, join(work, 'api-refusal'));
    const t = await startTestServer({ cacheDir: join(work, 'api-cache'), modelAliases: { '4s': [model], '6s': [model] } });
    try {
      const input = await uploadFile(t, readFileSync(song));
      const refused = await t.request('POST', '/audio/splits', { body: { input, stemModel: '4s', modelOptions: { vrAggression: 500 } } });
      assert.equal(refused.status, 422, refused.text);
      assert.equal(refused.json.success, false);
      assert.match(refused.json.error.message, /modelOptions\.vrAggression must be a whole number from -100 to 100, got "500"/);
    } finally {
      await t.close();
    }
  });
});
