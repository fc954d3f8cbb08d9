/**
 * Named presets and published scores (issue 47 items 2 and 5), through the real CLI and a real
 * server: python-audio-separator's presets listed, a user's preset of the shared MDX-Net fixtures
 * (added to the data dir's library, named by file as python-audio-separator names models) split by
 * `split --preset` and by a job's `preset`, a preset with members missing refused in one line, and
 * `models list --sort sdr`.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { BUILTIN_PRESETS } from '../src/presets/builtin.js';
import { writeSong } from './support/audio.js';
import { fixtureDir } from './support/fixtures.js';
import { servedOpenApi } from './support/openapi.js';
import { runCli } from './support/process.js';
import { startTestServer, tempDir, uploadFile, waitForSplit, type TestServer } from './support/server.js';

const MDX = fixtureDir('mdx');
const VOCALS = 'mdx_a_nfft6144_vocals.onnx';
const INSTRUMENTAL = 'mdx_b_nfft4096_instrumental.onnx';

/** A user's presets.json: the fixtures by file name, avg_fft weighted 3:1, and one with a member nobody has. */
const USER_PRESETS = {
  version: 1,
  presets: {
    mdx_pair: { name: 'MDX pair', description: 'the two MDX-Net fixtures', models: [VOCALS, INSTRUMENTAL], algorithm: 'avg_fft', weights: [3, 1] },
    half_there: { models: [VOCALS, 'melband_roformer_big_beta6x.ckpt'], algorithm: 'max_fft' },
  },
};

interface PresetJson {
  id: string;
  origin: string;
  algorithm: string;
  weights: number[] | null;
  installed: boolean;
  members: { given: string; model: string; installed: boolean; catalog: string | null; terms: string | null }[];
}

describe('presets', () => {
  const dir = tempDir();
  const dataDir = join(dir, 'data');
  const song = join(dir, 'song.wav');
  const env = { STEMSPLIT_DATA_DIR: dataDir };

  before(() => {
    mkdirSync(dataDir, { recursive: true });
    writeSong(song, 1);
    writeFileSync(join(dataDir, 'presets.json'), JSON.stringify(USER_PRESETS));
  });

  test("presets list: python-audio-separator's presets, as recorded, with each member's state and terms", () => {
    const listed = runCli(['presets', 'list', '--json'], env);
    assert.equal(listed.status, 0, listed.stderr);
    const presets = JSON.parse(listed.stdout) as PresetJson[];
    for (const [id, definition] of Object.entries(BUILTIN_PRESETS)) {
      const preset = presets.find((p) => p.id === id);
      assert.ok(preset, id);
      assert.equal(preset.origin, 'builtin');
      assert.equal(preset.algorithm, definition.algorithm);
      assert.deepEqual(
        preset.members.map((m) => m.given),
        definition.models,
      );
    }
    const karaoke = presets.find((p) => p.id === 'karaoke') as PresetJson;
    // python-audio-separator's file name of a catalog model is that model, with the catalog's terms.
    assert.deepEqual(karaoke.members[0], {
      given: 'mel_band_roformer_karaoke_aufr33_viperx_sdr_10.1956.ckpt',
      model: 'mel-roformer-karaoke',
      installed: false,
      catalog: 'mel-roformer-karaoke',
      terms: karaoke.members[0]?.terms,
    });
    assert.match(karaoke.members[0]?.terms ?? '', /UVR/);
    assert.equal(karaoke.members[1]?.catalog, null);
    const text = runCli(['presets', 'list'], env);
    assert.match(text.stdout, /^vocal_balanced {2}Vocal Balanced {2}\[builtin; 2 of 2 models missing\]$/m);
    assert.match(text.stdout, /combined by uvr_max_spec \(equal weights\)/);
  });

  test('a presets.json that breaks a rule is one line naming the file and the problem', () => {
    const bad = join(dir, 'bad');
    mkdirSync(bad, { recursive: true });
    writeFileSync(join(bad, 'presets.json'), JSON.stringify({ presets: { x: { models: ['a', 'b'], algorithm: 'max_wave', weights: [1, 2] } } }));
    const listed = runCli(['presets', 'list'], { STEMSPLIT_DATA_DIR: bad });
    assert.equal(listed.status, 2);
    assert.equal(
      listed.stderr,
      `stemsplit: ${join(bad, 'presets.json')}: presets.x.weights: applies to avg_wave and avg_fft only (max_wave ignores weights)\n`,
    );
  });

  test('split --preset with members missing says which and how to get them, in one line (exit 12)', () => {
    const run = runCli(['split', song, '--preset', 'karaoke', '-o', join(dir, 'never')], env);
    assert.equal(run.status, 12, run.stderr);
    assert.equal(run.stderr.trim().split('\n').length, 1, run.stderr);
    assert.match(
      run.stderr,
      /^stemsplit: preset karaoke needs models not installed here: mel-roformer-karaoke, mel_band_roformer_karaoke_gabox_v2\.ckpt, mel_band_roformer_karaoke_becruily\.ckpt; run: stemsplit models pull mel-roformer-karaoke; .*not in stemsplit's catalog.*stemsplit models add FILE\n$/,
    );
    assert.equal(existsSync(join(dir, 'never')), false);
  });

  test('split --preset with --model is a usage error (exit 2)', () => {
    const both = runCli(['split', song, '--preset', 'mdx_pair', '--model', 'bundled-4s'], env);
    assert.equal(both.status, 2);
    assert.match(both.stderr, /--preset names its models and how they combine; drop --model/);
  });

  test('models list --sort sdr: best published vocals SDR first, each set with its source', () => {
    const listed = runCli(['models', 'list', '--task', 'vocals', '--sort', 'sdr', '--json'], env);
    assert.equal(listed.status, 0, listed.stderr);
    const rows = JSON.parse(listed.stdout) as { name: string; scores: { sdr: Record<string, number>; source: string }[] }[];
    const vocals = rows.map((row) => row.scores[0]?.sdr['vocals'] ?? -Infinity);
    assert.deepEqual(
      vocals,
      [...vocals].sort((a, b) => b - a),
    );
    assert.equal(rows[0]?.name, 'bs-roformer-viperx-1296');
    assert.equal(rows[0]?.scores[0]?.sdr['vocals'], 12.1019);
    assert.match(rows[0]?.scores[0]?.source ?? '', /python-audio-separator.*models-scores\.json.*0a644db/);
    const viperx = rows.find((row) => row.name === 'bs-roformer-viperx-1297');
    assert.match(viperx?.scores[1]?.source ?? '', /MSST docs\/pretrained_models\.md, Multisong/);
  });

  describe('a preset of the MDX-Net fixtures', { skip: MDX === undefined ? 'no ../shared/fixtures/mdx' : false }, () => {
    let server: TestServer | undefined;

    before(() => {
      const added = runCli(['models', 'add', join(MDX as string, VOCALS), join(MDX as string, INSTRUMENTAL)], env);
      assert.equal(added.status, 0, added.stderr);
    });
    after(async () => server?.close());

    test('split --preset runs its members as the ensemble --model A --model B --ensemble avg_fft --ensemble-weights 3,1 does', () => {
      const out = join(dir, 'out');
      const run = runCli(['split', song, '--preset', 'mdx_pair', '-o', out, '--format', 'wav', '--json'], env);
      assert.equal(run.status, 0, run.stderr);
      const result = JSON.parse(run.stdout) as { model: string; stems: Record<string, string> };
      assert.equal(result.model, 'mdx_a_nfft6144_vocals+mdx_b_nfft4096_instrumental');
      assert.deepEqual(Object.keys(result.stems).sort(), ['no_vocals', 'vocals']);
      for (const file of Object.values(result.stems)) assert.ok(readFileSync(file).length > 44_100, file);
      assert.match(run.stderr, /their stems are combined by avg_fft with weights 3, 1/);
    });

    test("the API: GET /v1/presets, a job's preset, a preset with a member missing, and scores in GET /v1/models", async () => {
      server = await startTestServer({ dataDir });
      const presets = await server.request('GET', '/presets');
      assert.equal(presets.status, 200, presets.text);
      const openapi = await servedOpenApi(server);
      openapi.assertMatches('GET', '/presets', 200, presets.json);
      const pair = (presets.json.data.items as PresetJson[]).find((p) => p.id === 'mdx_pair');
      assert.equal(pair?.origin, 'user');
      assert.equal(pair?.installed, true);
      assert.deepEqual(pair?.weights, [3, 1]);
      // Named by file as python-audio-separator names models; run as the library's names for those files.
      assert.deepEqual(
        pair?.members.map((m) => [m.given, m.model, m.installed, m.terms]),
        [
          [VOCALS, 'mdx_a_nfft6144_vocals', true, 'not stated'],
          [INSTRUMENTAL, 'mdx_b_nfft4096_instrumental', true, 'not stated'],
        ],
      );

      const input = await uploadFile(server, readFileSync(song));
      const created = await server.request('POST', '/audio/splits', { body: { input, preset: 'mdx_pair', outputFormat: 'wav' } });
      assert.equal(created.status, 200, created.text);
      const done = await waitForSplit(server, created.json.data.id as string);
      assert.equal(done.json.data.status, 'succeeded', done.text);
      assert.deepEqual(done.json.data.models, ['mdx_a_nfft6144_vocals', 'mdx_b_nfft4096_instrumental']);
      assert.equal(done.json.data.ensemble, 'avg_fft');
      assert.deepEqual(done.json.data.ensembleWeights, [3, 1]);

      const missing = await server.request('POST', '/audio/splits', { body: { input: await uploadFile(server, readFileSync(song)), preset: 'half_there' } });
      assert.equal(missing.status, 422, missing.text);
      assert.equal(missing.json.error.code, 'VALIDATION_ERROR');
      openapi.assertMatches('POST', '/audio/splits', 422, missing.json);
      assert.match(missing.json.error.message, /preset: preset half_there needs models not installed here: melband_roformer_big_beta6x\.ckpt;/);
      const both = await server.request('POST', '/audio/splits', { body: { input, preset: 'mdx_pair', models: ['a', 'b'] } });
      assert.equal(both.status, 422, both.text);
      assert.match(both.json.error.message, /preset names its models and how they combine; drop models/);
      const chained = await server.request('POST', '/audio/splits', {
        body: { input, preset: 'mdx_pair', chain: [{ model: 'mdx_a_nfft6144_vocals' }, { input: 'vocals', model: 'mdx_b_nfft4096_instrumental' }] },
      });
      assert.equal(chained.status, 422, chained.text);
      assert.match(chained.json.error.message, /chain names each step's model; leave out preset/);

      const models = await server.request('GET', '/models');
      const kim = (models.json.data.items as { name: string; scores: { sdr: Record<string, number> }[] }[]).find((m) => m.name === 'kim-vocal-2');
      assert.deepEqual(kim?.scores[0]?.sdr, { vocals: 10.1794, instrumental: 15.3598 });
      const sorted = await server.request('GET', '/models?task=vocals&sort=sdr');
      assert.equal(sorted.status, 200, sorted.text);
      openapi.assertMatches('GET', '/models', 200, sorted.json);
      const names = (sorted.json.data.items as { name: string; task: string }[]).map((m) => m.name);
      assert.equal(names[0], 'bs-roformer-viperx-1296');
      assert.ok(names.indexOf('bs-roformer-viperx-1297') < names.indexOf('kim-vocal-2'), names.join(', '));
      assert.ok((sorted.json.data.items as { task: string }[]).every((m) => m.task === 'vocals'));
      const badSort = await server.request('GET', '/models?sort=speed');
      assert.equal(badSort.status, 422, badSort.text);
      assert.equal(badSort.json.error.code, 'VALIDATION_ERROR');
    });
  });
});
