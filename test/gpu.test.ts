/**
 * `--device gpu` gives the stems `--device cpu` gives, for every family: the shared fixtures'
 * models (test/support/fixture-cases.ts) split through the real CLI on both devices, every stem of
 * the GPU's ≥ 60 dB against the CPU's, and the split saying which adapter ran it; the bundled model
 * and an ensemble the same way; and jobs of two families through the API (a server with
 * `device: 'gpu'`), each job saying it ran on the GPU and its stems ≥ 60 dB against the CLI's on
 * the CPU.
 *
 * One small fixture per family by default (HTDemucs; the Demucs v3/v2 bag, with its diffq member;
 * BS-RoFormer; SCNet; MDX23C; MDX-Net; VR; the bundled model; an ensemble of BS- and Mel-Band
 * RoFormer), the
 * inputs cut to SECONDS: lavapipe, the software Vulkan this runs on where there is no GPU, is
 * slow. STEMSPLIT_GPU_TEST=all runs every fixture. The whole file skips, saying why, where no GPU
 * adapter is found or the shared fixtures are absent.
 */
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { writeSong } from './support/audio.js';
import { runCli } from './support/process.js';
import { tempDir } from './support/temp-dir.js';
import { describeDevice, resolveDevice, surveyAdapters } from '../src/devices/index.js';
import { demucsCases, demucsV3Cases, mdxCases, msstCases, prepareCase, vrCases, type FixtureCase } from './support/fixture-cases.js';
import { assertSnrs, decodePlanar, snrDb } from './support/reference-audio.js';
import { startTestServer, uploadFile, waitForSplit, type TestServer } from './support/server.js';

const MIN_DB = 60;
/** Each fixture's input is cut to its first SECONDS (Demucs still runs one whole segment). */
const SECONDS = 2;
/** One fixture per family; STEMSPLIT_GPU_TEST=all runs them all. */
const PICKED = [
  'demucs/htdemucs_small',
  'demucs-v3/mdx_small',
  'roformer/bs_roformer_vocals',
  'msst/scnet_2stem',
  'msst/mdx23c_4stem',
  'mdx/mdx_a_nfft6144_vocals',
  'vr/vr_c_v51_4band_v3_noecho_tta',
];
/** The families whose jobs also run through the API. */
const THROUGH_API = ['mdx/mdx_a_nfft6144_vocals', 'roformer/bs_roformer_vocals'];

const survey = surveyAdapters();
const sharedFixtures = resolve(process.env['STEMSPLIT_SHARED_DIR'] ?? join('..', 'shared'), 'fixtures');
const skip =
  survey.adapters.length === 0
    ? `no GPU adapter here (${survey.missing.join('; ') || 'none found'}; Debian: mesa-vulkan-drivers from bookworm-backports gives lavapipe, .ci/run installs it)`
    : !existsSync(sharedFixtures)
      ? `${sharedFixtures} is missing`
      : false;
/** What a GPU split says it ran on: "GPU: llvmpipe (Vulkan, software)" here. */
const gpuDevice = skip === false ? describeDevice(resolveDevice('gpu', survey)) : '';

function allCases(): FixtureCase[] {
  const cases = [...demucsCases(), ...demucsV3Cases(), ...msstCases('roformer'), ...msstCases('msst'), ...mdxCases(), ...vrCases()];
  return process.env['STEMSPLIT_GPU_TEST'] === 'all' ? cases : cases.filter((c) => PICKED.includes(c.name));
}
const CASES = skip === false ? allCases() : [];

const work = tempDir('stemsplit-gpu-');
const cacheDir = join(work, 'cache');
const env = { STEMSPLIT_CACHE_DIR: cacheDir, STEMSPLIT_DEVICE: '', ...runtimeDir() };

/** Dawn wants a runtime folder (XDG_RUNTIME_DIR, private to the user); a bare CI shell has none. */
function runtimeDir(): Record<string, string> {
  if (process.env['XDG_RUNTIME_DIR']) return {};
  const dir = join(work, 'xdg');
  mkdirSync(dir, { recursive: true });
  chmodSync(dir, 0o700);
  // The API's GPU workers are child processes of this one and inherit its environment.
  process.env['XDG_RUNTIME_DIR'] = dir;
  return { XDG_RUNTIME_DIR: dir };
}

/** `split SONG ARGS --device DEVICE` as float WAVs into `out`; the stem files by name. */
function split(song: string, args: readonly string[], device: 'gpu' | 'cpu', out: string, dataDir: string): { files: Map<string, string>; stderr: string } {
  const result = runCli(['split', song, ...args, '--device', device, '--format', 'wav', '--float32', '-o', out], { ...env, STEMSPLIT_DATA_DIR: dataDir });
  assert.equal(result.status, 0, result.stderr);
  const dir = join(out, 'song');
  return { files: new Map(readdirSync(dir).map((file) => [file.replace(/\.wav$/, ''), join(dir, file)])), stderr: result.stderr };
}

/** Every stem of the GPU's against the CPU's (the same stems, each ≥ MIN_DB). */
function assertSameStems(label: string, gpu: ReadonlyMap<string, string>, cpu: ReadonlyMap<string, string>, channels: number): void {
  const names = [...cpu.keys()].sort();
  assert.deepEqual([...gpu.keys()].sort(), names, `${label}: the same stems`);
  const snrs = names.map((name) => snrDb(decodePlanar(cpu.get(name) as string, channels), decodePlanar(gpu.get(name) as string, channels)));
  assertSnrs(`${label} GPU vs CPU`, snrs, MIN_DB, names);
}

/** Splits on both devices and compares; the GPU split's stderr says which adapter ran it. */
function assertGpuMatchesCpu(label: string, song: string, args: readonly string[], dir: string, channels: number): void {
  const gpu = split(song, args, 'gpu', join(dir, 'gpu'), join(dir, 'data'));
  assert.match(gpu.stderr, new RegExp(`^Loaded models? .*, on ${escape(gpuDevice)}$`, 'm'), gpu.stderr);
  const cpu = split(song, args, 'cpu', join(dir, 'cpu'), join(dir, 'data'));
  assert.match(cpu.stderr, /^Loaded models? .*, on CPU$/m);
  assertSameStems(label, gpu.files, cpu.files, channels);
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

describe('--device gpu splits as --device cpu does, every family (stemsplit split)', { skip }, () => {
  for (const c of CASES) {
    it(`${c.name} (first ${SECONDS} s)`, () => {
      const dir = join(work, 'cli', c.name);
      const { model, song } = prepareCase(c, dir, SECONDS);
      assertGpuMatchesCpu(c.name, song, ['--model', model, ...(c.cliArgs ?? [])], dir, c.channels);
    });
  }

  it('the bundled model', () => {
    const dir = join(work, 'cli', 'bundled');
    mkdirSync(dir, { recursive: true });
    const song = join(dir, 'song.wav');
    writeSong(song, SECONDS);
    assertGpuMatchesCpu('bundled-4s', song, ['--model', 'bundled-4s'], dir, 2);
  });

  it('an ensemble (BS-RoFormer + Mel-Band RoFormer, avg_fft)', () => {
    const dir = join(work, 'cli', 'ensemble');
    const members = ['roformer/bs_roformer_vocals', 'roformer/mel_band_roformer_vocals'].map((name) => {
      const found = msstCases('roformer').find((c) => c.name === name);
      assert.ok(found, name);
      return prepareCase(found, join(dir, name), SECONDS);
    });
    const song = (members[0] as { song: string }).song;
    assertGpuMatchesCpu('ensemble', song, [...members.flatMap(({ model }) => ['--model', model]), '--ensemble', 'avg_fft'], dir, 2);
  });
});

describe("--device gpu through the API: a job runs on the GPU, with the CPU's stems", { skip }, () => {
  for (const name of THROUGH_API) {
    describe(name, () => {
      const c = CASES.find((one) => one.name === name) as FixtureCase;
      const dir = join(work, 'api', name);
      let t: TestServer;
      let song: string;
      let model: string;
      before(async () => {
        ({ model, song } = prepareCase(c, dir, SECONDS));
        t = await startTestServer({ cacheDir, device: 'gpu', modelAliases: { '4s': [model], '6s': [model] } });
      });
      after(() => t?.close());

      it("says it ran on the GPU, and its stems are the CPU's", async () => {
        const input = await uploadFile(t, readFileSync(song));
        const modelOptions = c.modelOptions ?? {};
        const created = await t.request('POST', '/audio/splits', {
          body: { input, stemModel: '4s', outputFormat: 'wav', ...(Object.keys(modelOptions).length > 0 ? { modelOptions } : {}) },
        });
        assert.equal(created.status, 200, created.text);
        const done = (await waitForSplit(t, created.json.data.id, 600_000)).json.data;
        assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
        assert.equal(done.device, gpuDevice);
        const gpu = new Map<string, string>();
        mkdirSync(join(dir, 'api-stems'), { recursive: true });
        for (const [stem, url] of Object.entries(done.stems as Record<string, string>)) {
          const response = await fetch(url);
          assert.equal(response.status, 200);
          const file = join(dir, 'api-stems', `${stem}.wav`);
          writeFileSync(file, Buffer.from(await response.arrayBuffer()));
          gpu.set(stem, file);
        }
        const cpu = split(song, ['--model', model, ...(c.cliArgs ?? [])], 'cpu', join(dir, 'cpu'), join(dir, 'data'));
        assertSameStems(`${name} API`, gpu, cpu.files, c.channels);
      });
    });
  }
});
