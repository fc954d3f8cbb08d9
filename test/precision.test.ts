/**
 * `--precision int8`: a converted checkpoint's constant-weight matrix products run as ORT's
 * DynamicQuantizeMatMul (SCNet's LSTMs as DynamicQuantizeLSTM), cached apart from fp32, through
 * the library and `stemsplit split`; the bundled model's learned convolutions as ConvInteger,
 * through the library, `stemsplit split` and a server started with it.
 * The narrow Demucs fixture keeps ≥ 80 dB against the official reference in int8 (85.9–97.4 dB
 * measured; fp32 is at 125–136), so a wrong quantization (scales, layout) shows at once.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { spawnSync } from 'node:child_process';
import { loadDemucs } from '../src/demucs/index.js';
import { resolveConfig } from '../src/config.js';
import { quantizeConvolutions } from '../src/onnx/quantize-graph.js';
import { loadManifestModel } from '../src/separation/index.js';
import { synthesiseSong } from '../harness/audio.js';
import { runCli } from '../harness/process.js';
import { startTestServer, tempDir, uploadFile, waitForSplit } from './support/server.js';
import { fixtureDir } from './support/fixtures.js';
import { msstFixtures, splitThroughCli } from './support/msst-fixtures.js';
import { assertStems, decodePlanar, readF32, writeFloatWav } from './support/reference-audio.js';

const FIXTURES = fixtureDir('demucs');
const MIN_INT8_DB = 80;
const STRIDE = 8;
const work = tempDir('stemsplit-precision-');
after(() => spawnSync('rm', ['-rf', work]));

describe('int8 precision', { skip: FIXTURES === undefined ? 'no fixtures' : false }, () => {
  const dir = FIXTURES as string;

  it('converts to its own cache entry with int8 kernels and stays close to the reference', async () => {
    const cacheDir = path.join(work, 'cache');
    const input = readF32(path.join(dir, 'htdemucs_small.forward.in.f32'));
    const reference = readF32(path.join(dir, 'htdemucs_small.forward.out.f32'));
    const model = await loadDemucs(path.join(dir, 'htdemucs_small.th'), { cacheDir, intraOpThreads: 2, precision: 'int8' });
    const length = model.segmentSamples;
    const out = await model.run(input);
    await model.dispose();
    assert.equal(out.length, model.sources.length * 2 * length);
    assertStems('htdemucs_small int8 forward', reference, out, model.sources.length, { minDb: MIN_INT8_DB, names: model.sources, stride: STRIDE });
    const entries = readdirSync(path.join(cacheDir, 'demucs'));
    assert.equal(entries.length, 1);
    assert.match(entries[0] as string, /-int8\.v\d+$/);
    const graphs = readdirSync(path.join(cacheDir, 'demucs', entries[0] as string)).filter((file) => file.endsWith('.onnx'));
    const text = graphs.map((file) => readFileSync(path.join(cacheDir, 'demucs', entries[0] as string, file)).toString('latin1')).join('');
    assert.match(text, /DynamicQuantizeMatMul/);
  });

  it('stemsplit split --precision int8 separates; a wrong precision is a one-line usage error', () => {
    const env = { STEMSPLIT_DATA_DIR: path.join(work, 'data'), STEMSPLIT_CACHE_DIR: path.join(work, 'cli-cache') };
    const song = path.join(work, 'song.wav');
    const track = readF32(path.join(dir, 'htdemucs_small.separate.in.f32'));
    writeFloatWav(song, track, 2);
    const bad = runCli(['split', song, '--model', path.join(dir, 'htdemucs_small.th'), '--precision', 'int4'], env);
    assert.notEqual(bad.status, 0);
    assert.match(bad.stderr.trim(), /^stemsplit: --precision must be fp32 or int8, got "int4"$/m);

    const out = path.join(work, 'out');
    const result = runCli(['split', song, '--model', path.join(dir, 'htdemucs_small.th'), '--precision', 'int8', '--format', 'wav', '--float32', '-o', out], env);
    assert.equal(result.status, 0, result.stderr);
    assert.match(readdirSync(path.join(env.STEMSPLIT_CACHE_DIR, 'demucs')).join(','), /-int8\.v\d+/);
    const reference = readF32(path.join(dir, 'htdemucs_small.separate.out.f32'));
    const names = ['drums', 'bass', 'other', 'vocals'];
    const stems = names.map((stem) => decodePlanar(path.join(out, 'song', `${stem}.wav`), 2));
    assertStems('htdemucs_small int8 through split', reference, stems, names.length, { minDb: MIN_INT8_DB, names, stride: STRIDE });
  });
});

/** SCNet in int8 measured 34.5–36.7 dB against the official output on these fixtures (fp32: 118–121). */
const MIN_SCNET_INT8_DB = 30;

describe('SCNet --precision int8 through stemsplit split', () => {
  const dir = fixtureDir('msst');
  // A missing fixture folder lists no fixtures (and fails under CI).
  for (const [name, fixture] of msstFixtures(dir, 'scnet')) {
    it(`${name}: int8 LSTMs, within ${MIN_SCNET_INT8_DB} dB of the official stems`, () => {
      const caseDir = path.join(work, `scnet-${name}`);
      const { actual, expected } = splitThroughCli(caseDir, dir as string, fixture, ['--precision', 'int8']);
      assertStems(`${name} int8 through split`, expected, actual, fixture.instruments_out.length, { minDb: MIN_SCNET_INT8_DB });
      const graphs = readdirSync(path.join(caseDir, 'cache', 'scnet'), { recursive: true, withFileTypes: true }).filter((entry) => entry.name.endsWith('.onnx'));
      assert.ok(graphs.some((entry) => readFileSync(path.join(entry.parentPath, entry.name)).includes('DynamicQuantizeLSTM')), 'the cached graphs hold int8 LSTMs');
    });
  }
});

/**
 * The bundled model in int8 against itself in fp32, per stem, on the 12-s synthetic song: 43.9–52.3
 * dB measured on one segment through the library, 44.6–54.4 on the whole song through split and
 * serve (AMD Zen 4, VNNI; a CPU without VNNI sums u8×s8 pairs in 16 bits and may round worse).
 */
const MIN_BUNDLED_INT8_DB = 35;
const BUNDLED = 'stemsplit-small-4s';
const STEMS = ['drums', 'bass', 'other', 'vocals'];

describe(`the bundled model (${BUNDLED}) with --precision int8`, () => {
  const dir = path.join(work, 'bundled');
  const song = path.join(dir, 'song.wav');
  const manifest = path.join(resolveConfig({}, {}).bundledModelsDir, BUNDLED, 'model.json');
  const env = { STEMSPLIT_DATA_DIR: path.join(dir, 'data'), STEMSPLIT_CACHE_DIR: path.join(dir, 'cache') };
  mkdirSync(dir, { recursive: true });
  writeFloatWav(song, synthesiseSong(12), 2);
  const splitStems = (args: readonly string[], out: string): Float32Array[] => {
    const result = runCli(['split', song, '--model', BUNDLED, ...args, '--format', 'wav', '--float32', '-o', out], env);
    assert.equal(result.status, 0, result.stderr);
    return STEMS.map((stem) => decodePlanar(path.join(out, 'song', `${stem}.wav`), 2));
  };
  let fp32Stems: Float32Array[] | undefined;
  const fp32 = (): Float32Array[] => (fp32Stems ??= splitStems([], path.join(dir, 'fp32')));

  it('quantizes the learned convolutions but the first and last, and stays close to fp32 (library)', async () => {
    const graph = readFileSync(path.join(path.dirname(manifest), 'model.onnx'));
    const rewritten = quantizeConvolutions(graph);
    assert.equal(rewritten.convolutions, 14, '16 learned Conv nodes, the first and last kept in fp32');
    assert.ok(rewritten.model.byteLength < graph.byteLength / 3, 'the int8 weights replace the float ones');
    assert.ok(Buffer.from(rewritten.model).includes('ConvInteger'));

    const segment = decodePlanar(song, 2);
    const outputs: Float32Array[] = [];
    for (const precision of ['fp32', 'int8'] as const) {
      const model = await loadManifestModel(manifest, { intraOpThreads: 2, precision });
      const length = model.segmentSamples;
      const input = new Float32Array(2 * length);
      for (let c = 0; c < 2; c++) input.set(segment.subarray(c * (segment.length / 2), c * (segment.length / 2) + length), c * length);
      outputs.push(await model.run(input));
      await model.dispose();
    }
    assertStems('bundled int8 vs fp32, one segment', outputs[0] as Float32Array, outputs[1] as Float32Array, STEMS.length, { minDb: MIN_BUNDLED_INT8_DB, names: STEMS });
  });

  it('stemsplit split --precision int8', () => {
    const int8 = splitStems(['--precision', 'int8'], path.join(dir, 'int8'));
    assertStems('bundled int8 vs fp32 through split', fp32(), int8, STEMS.length, { minDb: MIN_BUNDLED_INT8_DB, names: STEMS });
  });

  it('a server started with precision int8 splits through the API', async () => {
    const t = await startTestServer({ cacheDir: env.STEMSPLIT_CACHE_DIR, precision: 'int8', modelAliases: { '4s': [BUNDLED] } });
    try {
      const created = await t.request('POST', '/audio/splits', { body: { input: await uploadFile(t, readFileSync(song)), stemModel: '4s', outputFormat: 'wav' } });
      assert.equal(created.status, 200, created.text);
      const done = (await waitForSplit(t, created.json.data.id, 300_000)).json.data;
      assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
      const downloads = path.join(dir, 'api');
      mkdirSync(downloads, { recursive: true });
      const int8: Float32Array[] = [];
      for (const stem of STEMS) {
        const response = await fetch(done.stems[stem] as string);
        assert.equal(response.status, 200);
        writeFileSync(path.join(downloads, `${stem}.wav`), Buffer.from(await response.arrayBuffer()));
        int8.push(decodePlanar(path.join(downloads, `${stem}.wav`), 2));
      }
      assertStems('bundled int8 (API, 16-bit WAV) vs fp32 (split)', fp32(), int8, STEMS.length, { minDb: MIN_BUNDLED_INT8_DB, names: STEMS });
    } finally {
      await t.close();
    }
  });
});
