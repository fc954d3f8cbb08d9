/**
 * `--precision int8` (issue 40: offered only where int8 keeps ≥ 40 dB against fp32 on every fixture
 * and full-size network and runs faster than fp32). Demucs takes it: its constant-weight matrix
 * products run as ORT's DynamicQuantizeMatMul, cached apart from fp32, through the library and
 * `stemsplit split`. The others are refused in one line saying why, through `stemsplit split`,
 * `models list` and a server started with int8 (the bundled model, whose ConvInteger rewrite the
 * library keeps and is checked here; the MSST checkpoints).
 * The narrow Demucs fixture keeps ≥ 80 dB against the official reference in int8 (85.9–97.4 dB
 * measured; fp32 is at 125–136), so a wrong quantization (scales, layout) shows at once.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { spawnSync } from 'node:child_process';
import { loadDemucs } from '../src/demucs/index.js';
import { resolveConfig } from '../src/config.js';
import { quantizeConvolutions } from '../src/onnx/quantize-graph.js';
import {} from '../src/separation/index.js';
import { loadManifestModel } from '../src/bundled/manifest.js';
import { synthesiseSong } from './support/audio.js';
import { runCli } from './support/process.js';
import { startTestServer, tempDir, uploadFile } from './support/server.js';
import { fixtureDir } from './support/fixtures.js';
import { msstFixtures } from './support/msst-fixtures.js';
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
    assert.match(entries[0] as string, /-int8-7bit\.v\d+$/);
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
    const result = runCli(
      ['split', song, '--model', path.join(dir, 'htdemucs_small.th'), '--precision', 'int8', '--format', 'wav', '--float32', '-o', out],
      env,
    );
    assert.equal(result.status, 0, result.stderr);
    assert.match(readdirSync(path.join(env.STEMSPLIT_CACHE_DIR, 'demucs')).join(','), /-int8-7bit\.v\d+/);
    const reference = readF32(path.join(dir, 'htdemucs_small.separate.out.f32'));
    const names = ['drums', 'bass', 'other', 'vocals'];
    const stems = names.map((stem) => decodePlanar(path.join(out, 'song', `${stem}.wav`), 2));
    assertStems('htdemucs_small int8 through split', reference, stems, names.length, { minDb: MIN_INT8_DB, names, stride: STRIDE });
  });
});

/** What a refusal says: the model, its family, why (with a measured figure), what to do, on one line. */
const REFUSED = (name: string, family: string) =>
  new RegExp(`^stemsplit: --precision int8: ${name} \\(${family}\\) runs in fp32 only: [^\\n]*\\d[^\\n]*; run it without --precision int8\\n$`);

/**
 * RoFormer, SCNet and MDX23C run in fp32 only: RoFormer's and SCNet's int8 stayed under 40 dB against
 * fp32 on these fixtures (docs/benchmarks.md#int8-fidelity-and-speed-issue-40), MDX23C has no int8.
 * `stemsplit split --precision int8` refuses each fixture's checkpoint before loading it.
 */
describe('MSST checkpoints refuse --precision int8 through stemsplit split', () => {
  const fixtures = [
    ...msstFixtures(fixtureDir('roformer')).map((entry) => ['roformer', ...entry] as const),
    ...msstFixtures(fixtureDir('msst')).map((entry) => ['msst', ...entry] as const),
  ];
  // A missing fixture folder lists no fixtures (and fails under CI).
  for (const [folder, name, fixture] of fixtures) {
    it(`${name} (${fixture.model_type}): exit 2, one line saying why`, () => {
      const song = path.join(work, `${name}.wav`);
      writeFloatWav(song, readF32(path.join(fixtureDir(folder) as string, (fixture.files['demix_in'] as { file: string }).file)), fixture.channels);
      const env = { STEMSPLIT_DATA_DIR: path.join(work, `msst-${name}`), STEMSPLIT_CACHE_DIR: path.join(work, `msst-${name}`, 'cache') };
      const refused = runCli(
        [
          'split',
          song,
          '--model',
          path.join(fixtureDir(folder) as string, fixture.checkpoint.file),
          '--precision',
          'int8',
          '-o',
          path.join(work, `msst-${name}`, 'out'),
        ],
        env,
      );
      assert.equal(refused.status, 2, refused.stderr);
      assert.match(refused.stderr, REFUSED(name, fixture.model_type));
    });
  }
});

describe('a server started with precision int8 and an MSST checkpoint in its library', () => {
  const dir = fixtureDir('msst');
  it("refuses its jobs with 422 saying why, the job's modelOptions applied (the model type)", { skip: dir === undefined ? 'no fixtures' : false }, async () => {
    const dataDir = path.join(work, 'msst-api');
    const added = runCli(['--data-dir', dataDir, 'models', 'add', path.join(dir as string, 'scnet_4stem.ckpt'), '--terms', 'MIT (a test fixture)']);
    assert.equal(added.status, 0, added.stderr);
    const song = path.join(work, 'msst-api.wav');
    writeFloatWav(song, readF32(path.join(dir as string, 'scnet_4stem.demix.in.f32')), 2);
    const t = await startTestServer({ dataDir, precision: 'int8' });
    try {
      const listed = (await t.request('GET', '/models')).json.data.items as Array<{ name: string; int8Refused: string | null }>;
      const why = listed.find((model) => model.name === 'scnet_4stem')?.int8Refused;
      assert.match(why ?? '', /SCNet fixtures/);
      const refused = async (body: Record<string, unknown>): Promise<string> => {
        const reply = await t.request('POST', '/audio/splits', { body: { input: await uploadFile(t, readFileSync(song)), outputFormat: 'wav', ...body } });
        assert.equal(reply.status, 422, reply.text);
        assert.equal(reply.json.error.code, 'VALIDATION_ERROR');
        return String(reply.json.error.message);
      };
      assert.equal(await refused({ model: 'scnet_4stem' }), `scnet_4stem runs in fp32 only and this server computes in int8 (serve --precision int8): ${why}`);
      assert.match(
        await refused({ model: 'scnet_4stem', modelOptions: { modelType: 'mdx23c' } }),
        /^scnet_4stem runs in fp32 only and this server computes in int8 \(serve --precision int8\): int8 is not implemented for MDX23C: .*\d/,
      );
    } finally {
      await t.close();
    }
  });
});

/**
 * The bundled model keeps its int8 graph rewrite (ConvInteger; scripts/eval/quality.ts measures it),
 * but `--precision int8` refuses it: its int8 stems fell to 33.4 dB against fp32 on real clips, under
 * issue 40's 40 dB, and ran slower than fp32 (docs/quality.md#int8). The rewrite is checked at library
 * level; the refusal through `stemsplit split`, `models list` and a server started with int8.
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
    assertStems('bundled int8 vs fp32, one segment', outputs[0] as Float32Array, outputs[1] as Float32Array, STEMS.length, {
      minDb: MIN_BUNDLED_INT8_DB,
      names: STEMS,
    });
  });

  it('stemsplit split --precision int8 is refused in one line saying why (exit 2), and models list says so', () => {
    const refused = runCli(['split', song, '--model', BUNDLED, '--precision', 'int8'], env);
    assert.equal(refused.status, 2, refused.stderr);
    assert.match(refused.stderr, REFUSED(BUNDLED, 'bundled'));
    assert.match(refused.stderr, /\d dB against fp32/);
    const defaultModel = runCli(['split', song, '--precision', 'int8'], env);
    assert.equal(defaultModel.status, 2, 'the default model is the bundled one');

    const listed = runCli(['models', 'list', '--json'], env);
    assert.equal(listed.status, 0, listed.stderr);
    const rows = JSON.parse(listed.stdout) as Array<{ name: string; family: string; int8Refused: string | null }>;
    const why = rows.find((row) => row.name === BUNDLED)?.int8Refused;
    assert.ok(why && refused.stderr.includes(why), 'models list --json gives the reason split gives');
    assert.equal(rows.find((row) => row.family === 'demucs')?.int8Refused, null, 'Demucs computes in int8');
    const table = runCli(['models', 'list'], env).stdout;
    const note = new RegExp(`^\\[(\\d+)\\] fp32 only \\(--precision int8 refused\\): ${why.split(' ')[0]}`, 'm').exec(table);
    assert.ok(note, `the table gives the reason once, as a note: ${table}`);
    assert.match(table, new RegExp(`fp32 only \\[${note[1]}\\]`), 'the rows point to it');
  });

  it('a server started with precision int8 refuses its jobs (422, saying why) and GET /v1/models says which', async () => {
    const t = await startTestServer({ cacheDir: env.STEMSPLIT_CACHE_DIR, precision: 'int8', modelAliases: { '4s': [BUNDLED] } });
    try {
      const models = (await t.request('GET', '/models')).json.data.items as Array<{ name: string; family: string; int8Refused: string | null }>;
      const why = models.find((model) => model.name === BUNDLED)?.int8Refused;
      assert.match(why ?? '', /\d dB/);
      assert.equal(models.find((model) => model.family === 'demucs')?.int8Refused, null);
      const created = await t.request('POST', '/audio/splits', {
        body: { input: await uploadFile(t, readFileSync(song)), stemModel: '4s', outputFormat: 'wav' },
      });
      assert.equal(created.status, 422, created.text);
      assert.equal(created.json.error.code, 'VALIDATION_ERROR');
      assert.ok(
        String(created.json.error.message).includes(`${BUNDLED} runs in fp32 only`) && String(created.json.error.message).includes(why as string),
        created.text,
      );
    } finally {
      await t.close();
    }
  });
});
