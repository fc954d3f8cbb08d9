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
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCli } from '../harness/process.js';
import { startTestServer, tempDir, uploadFile, waitForSplit, type TestServer } from './support/server.js';
import { MDX_DEFAULTS } from '../src/mdx/options.js';
import { fixtureDir, fixtureManifest } from './support/fixtures.js';
import { msstFixtures } from './support/msst-fixtures.js';
import { assertStems, decodePlanar, readF32, writeFloatWav } from './support/reference-audio.js';

interface Case {
  readonly name: string;
  /** The files a user has: the model file first, then what must sit beside it. */
  readonly files: readonly string[];
  readonly input: string;
  readonly channels: number;
  readonly reference: string;
  readonly stems: readonly string[];
  /** The reference keeps every `stride`-th sample. */
  readonly stride: number;
  readonly minSnrDb: number;
  /** Settings the fixture was made with, as `split` flags. */
  readonly cliArgs?: readonly string[];
  /** Why the API cannot make this fixture's split (it takes no per-job model settings). */
  readonly apiSkip?: string;
}

/** RoFormer, SCNet and MDX23C fixtures share MSST's manifest layout. */
function msstCases(family: string): Case[] {
  const dir = fixtureDir(family);
  return msstFixtures(dir).flatMap(([name, fixture]) => {
    const input = fixture.files['demix_in'];
    const output = fixture.files['demix_out'];
    if (!input || !output) return [];
    return [{
      name: `${family}/${name}`,
      files: [join(dir as string, fixture.checkpoint.file), join(dir as string, fixture.config.file)],
      input: join(dir as string, input.file),
      channels: input.shape[0] as number,
      reference: join(dir as string, output.file),
      // stemsplit lower-cases the yaml's names (`Vocals` → vocals.wav).
      stems: fixture.instruments_out.map((stem) => stem.toLowerCase()),
      stride: 1,
      minSnrDb: 60,
    }];
  });
}

interface DemucsFixture {
  readonly checkpoint?: string;
  readonly bag?: string;
  readonly members?: string[];
  readonly sources: string[];
  readonly separate_in?: [string, number[]];
  readonly separate_out?: [string, number[]];
}

function demucsCases(): Case[] {
  const dir = fixtureDir('demucs');
  // Demucs' outputs keep every `output_stride`-th sample, a top-level field of its manifest.
  const stride = dir ? (JSON.parse(readFileSync(join(dir, 'fixtures.json'), 'utf8')) as { output_stride?: number }).output_stride ?? 1 : 1;
  return fixtureManifest<DemucsFixture>(dir).flatMap(([name, fixture]) => {
    if (!fixture.separate_in || !fixture.separate_out) return [];
    const model = fixture.checkpoint ?? fixture.bag;
    if (!model) return [];
    return [{
      name: `demucs/${name}`,
      files: [model, ...(fixture.members ?? [])].map((file) => join(dir as string, file)),
      input: join(dir as string, fixture.separate_in[0]),
      channels: 2,
      reference: join(dir as string, fixture.separate_out[0]),
      stems: fixture.sources,
      stride,
      minSnrDb: 60,
    }];
  });
}

/** MDX-Net fixtures: the .onnx with its model data beside it, python-audio-separator's stems (named as stemsplit names them). */
interface MdxFixture {
  readonly files: { model: { path: string }; model_data?: { path: string }; input: { path: string; shape: number[] }; output: { path: string; stems: string[] } };
  readonly arch_config: { segment_size: number; overlap: number; batch_size: number; enable_denoise: boolean };
}

function mdxCases(): Case[] {
  const dir = fixtureDir('mdx');
  return fixtureManifest<MdxFixture>(dir).flatMap(([name, fixture]) => {
    const { files, arch_config: arch } = fixture;
    const settings = [
      ...(arch.segment_size !== MDX_DEFAULTS.segmentSize ? ['--mdx-segment-size', String(arch.segment_size)] : []),
      ...(arch.overlap !== MDX_DEFAULTS.overlap ? ['--mdx-overlap', String(arch.overlap)] : []),
      ...(arch.batch_size !== MDX_DEFAULTS.batchSize ? ['--mdx-batch-size', String(arch.batch_size)] : []),
      ...(arch.enable_denoise ? ['--mdx-denoise'] : []),
    ];
    return [{
      name: `mdx/${name}`,
      files: [join(dir as string, files.model.path), ...(files.model_data ? [join(dir as string, files.model_data.path)] : [])],
      input: join(dir as string, files.input.path),
      channels: files.input.shape[0] as number,
      reference: join(dir as string, files.output.path),
      stems: files.output.stems.map((stem) => stem.toLowerCase().replace(/\s+/g, '_')),
      stride: 1,
      minSnrDb: 90,
      cliArgs: settings,
      ...(settings.length > 0 ? { apiSkip: 'the API runs MDX-Net models with the official default settings' } : {}),
    }];
  });
}

const CASES: readonly Case[] = [...demucsCases(), ...msstCases('roformer'), ...msstCases('msst'), ...mdxCases()];
const work = tempDir('stemsplit-through-split-');
after(() => rmSync(work, { recursive: true, force: true }));

/** Copies the model's files into `dir` (as a user keeps them) and writes the fixture's input as a float WAV. */
function prepare(c: Case, dir: string): { model: string; song: string } {
  mkdirSync(dir, { recursive: true });
  for (const file of c.files) copyFileSync(file, join(dir, file.split('/').pop() as string));
  const song = join(dir, 'song.wav');
  writeFloatWav(song, readF32(c.input), c.channels);
  return { model: join(dir, (c.files[0] as string).split('/').pop() as string), song };
}

/** Each stem file against the reference, at every `stride`-th sample. */
function assertStemFiles(c: Case, label: string, stemFile: (stem: string) => string): void {
  const decoded = c.stems.map((stem) => decodePlanar(stemFile(stem), c.channels));
  assertStems(`${c.name} ${label}`, readF32(c.reference), decoded, c.stems.length, { minDb: c.minSnrDb, names: c.stems, channels: c.channels, stride: c.stride });
}

describe('reference fixtures through `stemsplit split`', { skip: CASES.length === 0 ? 'no fixtures' : false }, () => {
  const cacheDir = join(work, 'cache');
  for (const c of CASES) {
    it(c.name, () => {
      const dir = join(work, 'cli', c.name);
      const { model, song } = prepare(c, dir);
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
    describe(c.name, { skip: c.apiSkip ?? false }, () => {
      let t: TestServer;
      let song: string;
      before(async () => {
        const prepared = prepare(c, join(work, 'api', c.name));
        song = prepared.song;
        t = await startTestServer({ cacheDir, modelAliases: { '4s': [prepared.model], '6s': [prepared.model] } });
      });
      after(() => t?.close());
      it('splits as the official code does', async () => {
        const input = await uploadFile(t, readFileSync(song));
        const created = await t.request('POST', '/audio/splits', { body: { input, stemModel: '4s', outputFormat: 'wav' } });
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
