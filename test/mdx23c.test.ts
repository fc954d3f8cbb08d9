/**
 * MDX23C against MSST's reference outputs in ../shared/fixtures/msst: for every `mdx23c` fixture
 * fixtures.json lists, the forward pass of one chunk and the whole-track demix (library level),
 * and the fixture's track through `stemsplit split --format wav --float32` as a user runs it,
 * each stem at ≥ 60 dB SNR; then the config errors a user meets.
 */
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { runCli } from './support/process.js';
import { parseMdx23cConfig, readMdx23cConfig, type Mdx23cConfig } from '../src/msst/mdx23c/config.js';
import { Mdx23cNetwork } from '../src/msst/mdx23c/engine.js';
import { ChunkSpectrum } from '../src/msst/mdx23c/spectrum.js';
import { TorchStft } from '../src/dsp/stft.js';
import { msstModelType, MsstDocument } from '../src/msst/config.js';
import { readStateDict } from '../src/torch/checkpoint.js';
import { fixtureDir } from './support/fixtures.js';
import { checkForwardAndDemix, msstFixtures, splitThroughCli } from './support/msst-fixtures.js';
import { assertStems, decodePlanar, writeFloatWav } from './support/reference-audio.js';

const FIXTURES = fixtureDir('msst');
const MIN_SNR_DB = 60;

const work = mkdtempSync(path.join(tmpdir(), 'stemsplit-mdx23c-'));
const cacheDir = path.join(work, 'cache');
after(() => rmSync(work, { recursive: true, force: true }));

describe('MDX23C fixtures', { skip: FIXTURES === undefined ? 'no fixtures' : false }, () => {
  for (const [name, fixture] of msstFixtures(FIXTURES, 'mdx23c')) {
    const dir = FIXTURES as string;
    const stems = fixture.instruments_out.length;

    it(`${name}: forward and demix match MSST`, async () => {
      const network = await Mdx23cNetwork.open(path.join(dir, fixture.checkpoint.file), {
        cacheDir,
        configPath: path.join(dir, fixture.config.file),
        intraOpThreads: 2,
      });
      try {
        assert.deepEqual(network.config.instruments, fixture.instruments_out);
        await checkForwardAndDemix(network, dir, name, fixture, MIN_SNR_DB);
      } finally {
        await network.release();
      }
    });

    it(`${name}: with its 3×3 convolutions as Winograd F(4×4, 3×3) down to 1 channel, forward and demix match MSST`, async () => {
      const config = readMdx23cConfig(path.join(dir, fixture.config.file));
      const stagesDir = mkdtempSync(path.join(work, 'winograd-'));
      const stages = Mdx23cNetwork.writeStages(config, readStateDict(path.join(dir, fixture.checkpoint.file)), stagesDir, { winogradMinChannels: 1 });
      const network = await Mdx23cNetwork.fromStages(config, stagesDir, stages, { intraOpThreads: 2 });
      try {
        await checkForwardAndDemix(network, dir, name, fixture, MIN_SNR_DB);
      } finally {
        await network.release();
      }
    });

    it(`${name}: stemsplit split --format wav --float32 matches MSST's demix`, () => {
      const { actual, expected } = splitThroughCli(path.join(work, `split-${name}`), dir, fixture);
      assertStems(`${name} split`, expected, actual, stems, { minDb: MIN_SNR_DB });
    });
  }
});

describe('MDX23C configs', () => {
  const base = {
    audio: { chunk_size: 7168, dim_f: 256, dim_t: 8, hop_length: 1024, n_fft: 2048, num_channels: 2, sample_rate: 44100 },
    model: {
      act: 'gelu',
      bottleneck_factor: 4,
      growth: 8,
      norm: 'InstanceNorm',
      num_blocks_per_scale: 1,
      num_channels: 8,
      num_scales: 2,
      num_subbands: 2,
      scale: [2, 2],
    },
    training: { instruments: ['vocals', 'other'], target_instrument: null },
    inference: { batch_size: 1, num_overlap: 2 },
  };
  const parse = (overrides: { audio?: object; model?: object; training?: object }): Mdx23cConfig =>
    parseMdx23cConfig(
      {
        ...base,
        audio: { ...base.audio, ...overrides.audio },
        model: { ...base.model, ...overrides.model },
        training: { ...base.training, ...overrides.training },
      },
      'm.yaml',
    );

  it('is told from its yaml keys and reads every option as the official get_norm/get_act do', () => {
    assert.equal(msstModelType(new MsstDocument(base, 'm.yaml')), 'mdx23c');
    const config = parse({});
    assert.equal(config.frames, 8);
    assert.deepEqual(config.norm, { kind: 'instance' });
    assert.deepEqual(parse({ model: { norm: 'GroupNorm4' } }).norm, { kind: 'group', groups: 4 });
    assert.deepEqual(parse({ model: { norm: 'BatchNorm' } }).norm, { kind: 'batch' });
    assert.deepEqual(parse({ model: { norm: 'LayerNorm' } }).norm, { kind: 'identity' });
    assert.deepEqual(parse({ model: { act: 'elu0.5' } }).act, { kind: 'elu', alpha: 0.5 });
    assert.deepEqual(parse({ model: { act: 'relu' } }).act, { kind: 'relu' });
    assert.deepEqual(parse({ training: { target_instrument: 'vocals' } }).instruments, ['vocals']);
  });

  it('refuses what the official network cannot run, in one line naming it', () => {
    assert.throws(() => parse({ model: { fancy: 1, other_thing: 2 } }), /unsupported mdx23c options fancy, other_thing/);
    assert.throws(() => parse({ model: { act: 'swish' } }), /act swish is not one of gelu, relu, elu<alpha>/);
    assert.throws(() => parse({ model: { act: 'elu' } }), /elu needs its alpha/);
    assert.throws(() => parse({ model: { norm: 'GroupNorm3' } }), /GroupNorm3 cannot split 8 channels/);
    assert.throws(() => parse({ audio: { chunk_size: 7000 } }), /not a multiple of hop_length 1024/);
    assert.throws(() => parse({ audio: { chunk_size: 6144 } }), /7 STFT frames, not divisible by scale\[0\]\^num_scales = 4/);
    assert.throws(() => parse({ audio: { dim_f: 2000 } }), /dim_f 2000 is more than the 1025 bins/);
    assert.throws(() => parse({ audio: { n_fft: 7000 } }), /m\.yaml: n_fft 7000 has a prime factor other than 2, 3 and 5/);
    assert.throws(() => parse({ model: { scale: [2] } }), /scale must be \[time, frequency\]/);
    const gapped = parse({ audio: { hop_length: 2048, chunk_size: 14336 } });
    assert.throws(() => new ChunkSpectrum(gapped, gapped.chunkSize), /hop_length 2048 leaves gaps between n_fft 2048 Hann windows/);
  });

  it('takes an n_fft that is not a power of two (the 12K-FFT models): its STFT round trip is exact, and split runs it', (t) => {
    for (const nFft of [3072, 12288]) {
      assert.equal(parse({ audio: { n_fft: nFft } }).nFft, nFft);
      // MDX23C's transform pair as ChunkSpectrum sets it up (periodic Hann of n_fft, hop 1024), on a 64512-sample chunk.
      const length = 64512;
      const stft = new TorchStft({ nFft, hop: 1024, winLength: nFft, window: 'hann', normalized: false, outputLength: length }, length);
      const signal = Float32Array.from({ length }, (_, i) => Math.sin(i / 7) * 0.3 + Math.sin(i / 61 + 1) * 0.2 + (((i * 7919) % 1000) / 1000 - 0.5) * 0.1);
      const real = new Float32Array(stft.bins * stft.frames);
      const imag = new Float32Array(stft.bins * stft.frames);
      stft.analyze(signal, real, imag);
      const back = new Float32Array(length);
      stft.synthesize(real, imag, back);
      let worst = 0;
      for (let i = 0; i < length; i++) worst = Math.max(worst, Math.abs((back[i] as number) - (signal[i] as number)));
      t.diagnostic(`n_fft ${nFft}: STFT → iSTFT differs from the signal by at most ${worst.toExponential(1)}`);
      assert.ok(worst < 1e-6, `n_fft ${nFft}: round trip off by ${worst}`);
    }
    if (FIXTURES === undefined) return;
    // The fixture's random network: its weights depend on dim_f, not n_fft, so the 12K FFT fits them.
    const dir = mkdtempSync(path.join(work, 'fft12k-'));
    copyFileSync(path.join(FIXTURES, 'mdx23c_2stem.ckpt'), path.join(dir, 'twelve.ckpt'));
    writeFileSync(path.join(dir, 'twelve.yaml'), readFileSync(path.join(FIXTURES, 'mdx23c_2stem.yaml'), 'utf8').replace('n_fft: 8192', 'n_fft: 12288'));
    const song = path.join(dir, 'song.wav');
    const frames = 70_000;
    writeFloatWav(
      song,
      Float32Array.from({ length: 2 * frames }, (_, i) => 0.3 * Math.sin(i / (i < frames ? 7 : 11)) + 0.1 * Math.sin(i / 173)),
      2,
    );
    const env = { STEMSPLIT_DATA_DIR: path.join(dir, 'data'), STEMSPLIT_CACHE_DIR: path.join(dir, 'cache') };
    const result = runCli(['split', song, '--model', path.join(dir, 'twelve.ckpt'), '-o', path.join(dir, 'out'), '--format', 'wav', '--float32'], env);
    assert.equal(result.status, 0, result.stderr);
    for (const stem of ['vocals', 'other']) {
      const planes = decodePlanar(path.join(dir, 'out', 'song', `${stem}.wav`), 2);
      assert.equal(planes.length, 2 * frames, stem);
      assert.ok(planes.every(Number.isFinite), `${stem}: finite`);
      assert.ok(
        planes.some((v) => Math.abs(v) > 1e-4),
        `${stem}: not silent`,
      );
    }
    const refused = path.join(dir, 'seven.yaml');
    copyFileSync(path.join(dir, 'twelve.ckpt'), path.join(dir, 'seven.ckpt'));
    writeFileSync(refused, readFileSync(path.join(FIXTURES, 'mdx23c_2stem.yaml'), 'utf8').replace('n_fft: 8192', 'n_fft: 7000'));
    const seven = runCli(['split', song, '--model', path.join(dir, 'seven.ckpt'), '-o', path.join(dir, 'out7')], env);
    assert.equal(seven.status, 13, seven.stderr);
    assert.equal(
      seven.stderr
        .trim()
        .split('\n')
        .filter((line) => /seven\.yaml: n_fft 7000 has a prime factor other than 2, 3 and 5/.test(line)).length,
      1,
      seven.stderr,
    );
  });

  it('split takes a config named with --model-config and --model-type mdx23c, and names a missing one', () => {
    if (FIXTURES === undefined) return;
    const dir = mkdtempSync(path.join(work, 'named-'));
    const song = path.join(dir, 'song.wav');
    writeFloatWav(
      song,
      Float32Array.from({ length: 2 * 44100 }, (_, i) => 0.2 * Math.sin(i / 7)),
      2,
    );
    const env = { STEMSPLIT_DATA_DIR: path.join(dir, 'data'), STEMSPLIT_CACHE_DIR: path.join(dir, 'cache') };
    const checkpoint = path.join(dir, 'drums.ckpt');
    copyFileSync(path.join(FIXTURES, 'mdx23c_4stem.ckpt'), checkpoint);
    const config = ['--model-config', path.join(FIXTURES, 'mdx23c_4stem.yaml'), '--model-type', 'mdx23c'];
    const result = runCli(['split', song, '--model', checkpoint, ...config, '-o', path.join(dir, 'out'), '--format', 'wav'], env);
    assert.equal(result.status, 0, result.stderr);
    assert.deepEqual(readdirSync(path.join(dir, 'out', 'song')).sort(), ['bass.wav', 'drums.wav', 'other.wav', 'vocals.wav']);
    const lonely = runCli(['split', song, '--model', checkpoint, '-o', path.join(dir, 'out2')], env);
    assert.equal(lonely.status, 12, lonely.stderr);
    assert.match(lonely.stderr, /no config beside .*drums\.ckpt/);
  });

  it('names a layer the checkpoint lacks or shapes that differ from the config', async () => {
    if (FIXTURES === undefined) return;
    const fixtureConfig = path.join(FIXTURES, 'mdx23c_2stem.yaml');
    const dir = mkdtempSync(path.join(work, 'wrong-'));
    const { writeFileSync } = await import('node:fs');
    const wider = path.join(dir, 'wider.yaml');
    writeFileSync(wider, readFileSync(fixtureConfig, 'utf8').replace('num_channels: 8', 'num_channels: 16'));
    await assert.rejects(
      Mdx23cNetwork.open(path.join(FIXTURES, 'mdx23c_2stem.ckpt'), { cacheDir, configPath: wider }),
      /first_conv\.weight is \[8, 16, 1, 1\], the config implies \[16, 16, 1, 1\]/,
    );
  });
});
