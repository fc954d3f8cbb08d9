/**
 * UVR MDX-Net `.onnx` models against python-audio-separator's MDX separator, with the reference
 * stems of ../shared/fixtures/mdx (or STEMSPLIT_SHARED_DIR's): every fixture fixtures.json lists,
 * with its own settings (segment size, overlap, denoise, a mono source), through the library
 * (`loadMdx` + the streamed pipeline) and through `stemsplit split --format wav --float32`, each
 * stem at ≥ 90 dB SNR. Also: the FFT sizes UVR uses, UVR's model hash, the model data table and
 * the refusals a user meets.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { Fft } from '../src/dsp/fft.js';
import { loadMdx, mdxGeometry, mdxSources } from '../src/mdx/engine.js';
import { builtInModelData, HASHED_BYTES, readModelData, secondaryStem, uvrModelHash } from '../src/mdx/model-data.js';
import type { MdxOptions } from '../src/mdx/options.js';
import { StemsplitError } from '../src/errors.js';
import { separate } from '../src/separation/index.js';
import { runCli } from './support/process.js';
import { startTestServer, tempDir, uploadFile, waitForSplit } from './support/server.js';
import { fixtureDir, fixtureManifest } from './support/fixtures.js';
import { assertStems, decodePlanar, readF32, writeFloatWav } from './support/reference-audio.js';
import { maxDifference } from './support/assertions.js';

const FIXTURES = fixtureDir('mdx');
const MIN_SNR_DB = 90;
const work = tempDir('stemsplit-mdx-');
after(() => spawnSync('rm', ['-rf', work]));

interface Fixture {
  readonly files: {
    readonly model: { readonly path: string };
    readonly input: { readonly path: string; readonly shape: readonly [number, number] };
    readonly output: { readonly path: string };
  };
  readonly model_data: { readonly primary_stem: string; readonly compensate: number };
  readonly arch_config: {
    readonly segment_size: number;
    readonly overlap: number;
    readonly batch_size: number;
    readonly hop_length: number;
    readonly enable_denoise: boolean;
  };
}

function fixtures(): [string, Fixture][] {
  return fixtureManifest<Fixture>(FIXTURES);
}

function optionsOf(fixture: Fixture): MdxOptions {
  const arch = fixture.arch_config;
  return { segmentSize: arch.segment_size, overlap: arch.overlap, batchSize: arch.batch_size, hopLength: arch.hop_length, denoise: arch.enable_denoise };
}

/** The source as the decoder hands it over: stereo, a mono source duplicated. */
function stereoSource(fixture: Fixture): { data: Float32Array; length: number } {
  const [channels, length] = fixture.files.input.shape;
  const planar = readF32(path.join(FIXTURES as string, fixture.files.input.path));
  if (channels === 2) return { data: planar, length };
  const data = new Float32Array(2 * length);
  data.set(planar.subarray(0, length));
  data.set(planar.subarray(0, length), length);
  return { data, length };
}

/** The channel count in a WAV file's fmt chunk. */
function wavChannels(file: string): number {
  const bytes = readFileSync(file);
  const fmt = bytes.indexOf('fmt ', 12, 'latin1');
  assert.ok(fmt > 0, `${file} has no fmt chunk`);
  return bytes.readUInt16LE(fmt + 10);
}

describe('MDX-Net fixtures', { skip: FIXTURES === undefined ? 'no fixtures' : false }, () => {
  for (const [name, fixture] of fixtures()) {
    const modelPath = (): string => path.join(FIXTURES as string, fixture.files.model.path);
    const reference = (): Float32Array => readF32(path.join(FIXTURES as string, fixture.files.output.path));
    const sources = mdxSources(fixture.model_data.primary_stem);

    it(`${name}: the library's streamed demix matches audio-separator, and secondary = mix − primary × compensate`, async () => {
      const progress: number[] = [];
      const model = await loadMdx({ path: modelPath(), options: { mdx: optionsOf(fixture) } }, { intraOpThreads: 2 });
      try {
        assert.deepEqual(model.sources, sources);
        const track = stereoSource(fixture);
        const stems = await separate(model, track, { onProgress: ({ done, total }) => progress.push(done / total) });
        assert.equal(progress.at(-1), 1);
        assertStems(`${name} library`, reference(), stems, sources.length, { minDb: MIN_SNR_DB, names: sources });
        // The primary is scaled by the peak, the secondary uses the (scaled) mix: check the relation exactly.
        let peak = 0;
        for (const v of track.data) peak = Math.max(peak, Math.abs(v));
        const scale = peak > Math.fround(0.9) ? Math.fround(Math.fround(0.9) / peak) : 1;
        const compensate = Math.fround(fixture.model_data.compensate);
        const [primary, secondary] = stems as [Float32Array, Float32Array];
        for (let i = 0; i < primary.length; i += 997) {
          const mix = scale === 1 ? (track.data[i] as number) : Math.fround((track.data[i] as number) * scale);
          assert.equal(secondary[i], Math.fround(Math.fround(-(primary[i] as number) * compensate) + mix));
        }
      } finally {
        await model.dispose();
      }
    });

    it(`${name}: stemsplit split --model ${fixture.files.model.path} --format wav --float32 matches audio-separator`, () => {
      const dir = path.join(work, name);
      mkdirSync(dir, { recursive: true });
      const [channels] = fixture.files.input.shape;
      const song = path.join(dir, 'song.wav');
      writeFloatWav(song, readF32(path.join(FIXTURES as string, fixture.files.input.path)), channels);
      const arch = fixture.arch_config;
      const args = ['split', song, '--model', modelPath(), '--format', 'wav', '--float32', '-o', path.join(dir, 'out')];
      args.push('--mdx-segment-size', String(arch.segment_size), '--mdx-overlap', String(arch.overlap), '--mdx-batch-size', String(arch.batch_size));
      args.push('--mdx_hop_length', String(arch.hop_length));
      if (arch.enable_denoise) args.push('--mdx-denoise');
      const result = runCli(args, { STEMSPLIT_DATA_DIR: path.join(dir, 'data'), STEMSPLIT_CACHE_DIR: path.join(dir, 'cache') });
      assert.equal(result.status, 0, result.stderr);
      assert.match(result.stderr, /terms of its weights: not stated/);
      // The graph's trial run on silence (its refusal, if it fails, comes as it loads) is remembered: the next load skips it.
      assert.equal(readdirSync(path.join(dir, 'cache', 'shape-checks', 'mdx')).length, 1);
      const folder = path.join(dir, 'out', 'song');
      assert.deepEqual(readdirSync(folder).sort(), sources.map((s) => `${s}.wav`).sort());
      // A mono source gets stereo stems, as audio-separator writes them.
      const stems = sources.map((stem) => decodePlanar(path.join(folder, `${stem}.wav`), 2));
      assert.equal(wavChannels(path.join(folder, `${sources[0]}.wav`)), 2);
      assertStems(`${name} split`, reference(), stems, sources.length, { minDb: MIN_SNR_DB, names: sources });
    });
  }

  it('runs a segment size other than the model dim_t (its time axis freed), and honours cancel', async () => {
    const [name, fixture] = fixtures()[0] as [string, Fixture];
    const model = await loadMdx(
      { path: path.join(FIXTURES as string, fixture.files.model.path), options: { mdx: { segmentSize: 64, overlap: 0.5 } } },
      { intraOpThreads: 2 },
    );
    try {
      const track = stereoSource(fixture);
      const stems = await separate(model, track);
      assert.equal(stems[0]?.length, 2 * track.length, name);
      assert.ok(stems.every((stem) => stem.every(Number.isFinite)));
      const controller = new AbortController();
      const run = separate(model, track, { signal: controller.signal, onProgress: () => controller.abort() });
      await assert.rejects(run, { name: 'AbortError' });
    } finally {
      await model.dispose();
    }
  });

  it("takes python-audio-separator's --mdx_hop_length: chunks of hop·(segment − 1) samples, a hop past n_fft refused naming the flag", async () => {
    const [name, fixture] = fixtures()[0] as [string, Fixture];
    const file = path.join(FIXTURES as string, fixture.files.model.path);
    const track = stereoSource(fixture);
    const run = async (hopLength: number) => {
      const model = await loadMdx({ path: file, options: { mdx: { ...optionsOf(fixture), hopLength, segmentSize: 64 } } }, { intraOpThreads: 2 });
      try {
        return await separate(model, track);
      } finally {
        await model.dispose();
      }
    };
    const [half, full] = [await run(512), await run(1024)];
    assert.ok(
      half.every((stem) => stem.length === 2 * track.length && stem.every(Number.isFinite)),
      name,
    );
    assert.ok(maxDifference(half, full) > 1e-4, 'another hop is another STFT: the stems change');
    assert.equal(mdxGeometry({ nFft: 6144, segmentSize: 64, overlap: 0.25, hopLength: 512 }, 1).chunk, 512 * 63);
    const dir = tempDir();
    const song = path.join(dir, 'song.wav');
    writeFloatWav(song, readF32(path.join(FIXTURES as string, fixture.files.input.path)), fixture.files.input.shape[0]);
    const cli = (hop: string) =>
      runCli(['split', song, '--model', file, '--mdx-hop-length', hop, '-o', path.join(dir, 'out')], { STEMSPLIT_DATA_DIR: path.join(dir, 'data') });
    const tooLong = cli('8192');
    assert.equal(tooLong.status, 2, tooLong.stderr);
    assert.match(tooLong.stderr, /--mdx-hop-length 8192 is more than the model's n_fft \d+: frames would leave gaps\n$/);
    const zero = cli('0');
    assert.equal(zero.status, 2, zero.stderr);
    assert.match(zero.stderr, /^stemsplit: --mdx-hop-length must be /);
  });

  it('refuses, in one line, a model neither the table nor a json beside it describes', async () => {
    const [, fixture] = fixtures()[0] as [string, Fixture];
    const dir = path.join(work, 'unknown');
    mkdirSync(dir, { recursive: true });
    const lonely = path.join(dir, 'mystery.onnx');
    copyFileSync(path.join(FIXTURES as string, fixture.files.model.path), lonely);
    assert.throws(
      () => readModelData(lonely),
      /mystery\.onnx: MDX-Net model with hash [0-9a-f]{32} is not in stemsplit's table of UVR models; put its model data \(compensate, mdx_dim_f_set, mdx_dim_t_set, mdx_n_fft_scale_set, primary_stem\) in .*mystery\.json/,
    );
    const song = path.join(dir, 'song.wav');
    writeFloatWav(
      song,
      new Float32Array(2 * 44_100).map((_, i) => Math.sin(i / 10) * 0.1),
      2,
    );
    const result = runCli(['split', song, '--model', lonely, '-o', path.join(dir, 'out')], {
      STEMSPLIT_DATA_DIR: path.join(dir, 'data'),
      STEMSPLIT_CACHE_DIR: path.join(dir, 'cache'),
    });
    // The refusal is made in the split worker and keeps its code across: 13, a model stemsplit cannot run.
    assert.equal(result.status, new StemsplitError('MODEL_INVALID', '').exitCode, result.stderr);
    const refusal = result.stderr.split('\n').filter((line) => /not in stemsplit's table of UVR models; put its model data .* in .*mystery\.json$/.test(line));
    assert.equal(refusal.length, 1, result.stderr);
    // A server whose 4s is that model fails the job as the model failing, with the same sentence.
    const t = await startTestServer({ cacheDir: path.join(dir, 'server-cache'), modelAliases: { '4s': [lonely] } });
    try {
      const created = await t.request('POST', '/audio/splits', { body: { input: await uploadFile(t, readFileSync(song)), stemModel: '4s' } });
      assert.equal(created.status, 200, created.text);
      const failed = (await waitForSplit(t, created.json.data.id)).json.data;
      assert.equal(failed.status, 'failed');
      assert.equal(failed.error.code, 'SEPARATION_FAILED');
      assert.match(
        failed.error.message,
        /could not be loaded: .*mystery\.onnx: MDX-Net model with hash [0-9a-f]{32} is not in stemsplit's table of UVR models/,
      );
    } finally {
      await t.close();
    }
    writeFileSync(path.join(dir, 'mystery.json'), JSON.stringify({ compensate: 1.03, mdx_dim_f_set: 2048, mdx_dim_t_set: 8 }));
    assert.throws(() => readModelData(lonely), /mystery\.json: mdx_n_fft_scale_set must be a whole number from 4 to 32768, got undefined/);
    writeFileSync(path.join(dir, 'mystery.json'), JSON.stringify({ compensate: 1.03, mdx_dim_f_set: 2048, mdx_dim_t_set: 8, mdx_n_fft_scale_set: 7 * 1024 }));
    await assert.rejects(loadMdx({ path: lonely }), /n_fft 7168 has a prime factor other than 2, 3 and 5/);
  });
});

describe('MDX-Net model data', () => {
  it('hashes as UVR does: MD5 of the last 10,240,000 bytes, or of the whole file when smaller', () => {
    const small = path.join(work, 'small.onnx');
    writeFileSync(small, Buffer.from('not really a model'));
    assert.equal(uvrModelHash(small), createHash('md5').update('not really a model').digest('hex'));
    const big = path.join(work, 'big.onnx');
    const bytes = Buffer.alloc(HASHED_BYTES + 4321);
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 7919) & 0xff;
    writeFileSync(big, bytes);
    assert.equal(uvrModelHash(big), createHash('md5').update(bytes.subarray(4321)).digest('hex'));
  });

  it('carries UVR model data for the popular models, dim_t as a power of two', () => {
    assert.deepEqual(builtInModelData('970b3f9492014d18fefeedfe4773cb42'), {
      name: 'Kim_Vocal_2',
      compensate: 1.009,
      mdx_dim_f_set: 3072,
      mdx_dim_t_set: 8,
      mdx_n_fft_scale_set: 7680,
      primary_stem: 'Vocals',
    });
    assert.equal(builtInModelData('1d64a6d2c30f709b8c9b4ce1366d96ee')?.name, 'UVR_MDXNET_KARA_2');
    assert.equal(builtInModelData('0123456789abcdef0123456789abcdef'), undefined);
  });

  it('names stems as UVR does, lower-cased', () => {
    assert.deepEqual(mdxSources('Vocals'), ['vocals', 'instrumental']);
    assert.deepEqual(mdxSources('Instrumental'), ['instrumental', 'vocals']);
    assert.deepEqual(mdxSources('Drums'), ['drums', 'no_drums']);
    assert.deepEqual(mdxSources('No Drums'), ['no_drums', 'drums']);
    assert.deepEqual(mdxSources('Reverb'), ['reverb', 'no_reverb']);
    assert.equal(secondaryStem('Primary Stem'), 'Secondary Stem');
  });
});

describe('FFT sizes UVR uses', () => {
  for (const size of [5120, 6144, 7680, 60]) {
    it(`size ${size} matches the DFT's definition and inverts`, () => {
      const re = Float64Array.from({ length: size }, (_, i) => Math.sin(i * 1.3) + (i % 7) * 0.1);
      const im = Float64Array.from({ length: size }, (_, i) => Math.cos(i * 0.7) * 0.5);
      const [xr, xi] = [Float64Array.from(re), Float64Array.from(im)];
      const fft = new Fft(size);
      fft.forward(re, im);
      let error = 0;
      let magnitude = 0;
      for (const k of [0, 1, 2, 3, 5, size / 4 + 1, size / 2, size - 1]) {
        let sr = 0;
        let si = 0;
        for (let t = 0; t < size; t++) {
          const angle = (-2 * Math.PI * ((k * t) % size)) / size;
          sr += (xr[t] as number) * Math.cos(angle) - (xi[t] as number) * Math.sin(angle);
          si += (xr[t] as number) * Math.sin(angle) + (xi[t] as number) * Math.cos(angle);
        }
        error = Math.max(error, Math.hypot(sr - (re[k] as number), si - (im[k] as number)));
        magnitude = Math.max(magnitude, Math.hypot(sr, si));
      }
      assert.ok(error / magnitude < 1e-13, `relative error ${error / magnitude}`);
      fft.inverse(re, im);
      for (let i = 0; i < size; i++) assert.ok(Math.abs((re[i] as number) / size - (xr[i] as number)) < 1e-12);
    });
  }
  it('refuses sizes with other prime factors', () => {
    assert.throws(() => new Fft(7 * 1024), /no prime factor but 2, 3 and 5/);
    assert.equal(Fft.supports(4096), true);
  });
});
