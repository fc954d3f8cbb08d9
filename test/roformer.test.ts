/**
 * The RoFormer engine against MSST's reference outputs in ../shared/fixtures/roformer: for
 * every fixture fixtures.json lists, the forward pass of one chunk and the whole-track demix
 * (and any `demix_out_batch<k>` variant), each stem at ≥ 60 dB SNR; the mel band layout
 * against the listed one; and the config errors a user meets.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { melBandBins } from '../src/msst/roformer/bands.js';
import { parseRoformerConfig, readRoformerConfig, type RoformerType } from '../src/msst/roformer/config.js';
import { loadRoformer, RoformerNetwork } from '../src/msst/roformer/engine.js';
import { separate } from '../src/separation/index.js';
import { fixtureDir } from './support/fixtures.js';
import { checkForwardAndDemix, msstFixtures } from './support/msst-fixtures.js';
import { assertStems, readF32 } from './support/reference-audio.js';

const FIXTURES = fixtureDir('roformer');
const MIN_SNR_DB = 60;

const cacheDir = mkdtempSync(path.join(tmpdir(), 'stemsplit-roformer-cache-'));
after(() => rmSync(cacheDir, { recursive: true, force: true }));

function fixtureF32(file: string): Float32Array {
  return readF32(path.join(FIXTURES as string, file));
}

describe('RoFormer fixtures', { skip: FIXTURES === undefined ? 'no fixtures' : false }, () => {
  for (const [name, fixture] of msstFixtures(FIXTURES)) {
    it(`${name}: forward and demix match MSST`, async () => {
      const dir = FIXTURES as string;
      const network = await RoformerNetwork.open(path.join(dir, fixture.checkpoint.file), {
        cacheDir,
        configPath: path.join(dir, fixture.config.file),
        type: fixture.model_type as RoformerType,
        intraOpThreads: 2,
      });
      try {
        await checkForwardAndDemix(network, FIXTURES as string, name, fixture, MIN_SNR_DB);
      } finally {
        await network.release();
      }
    });
    it(`${name}: streamed through the pipeline (a window over the track, MSST normalisation, no_<target>) it matches the whole-track demix`, async () => {
      const dir = FIXTURES as string;
      const options = { cacheDir, configPath: path.join(dir, fixture.config.file), type: fixture.model_type as RoformerType, intraOpThreads: 2 };
      const model = await loadRoformer(path.join(dir, fixture.checkpoint.file), options);
      const network = await RoformerNetwork.open(path.join(dir, fixture.checkpoint.file), options);
      try {
        const track = fixtureF32((fixture.files['demix_in'] as { file: string }).file);
        const length = track.length / 2;
        const streamed = await separate(model, { data: track, length });
        // The reference: MSST's normalize_audio (mean and population std of the channel mean), the
        // whole-track demix in memory, then de-normalised; the mixture minus the target last.
        let sum = 0;
        for (let i = 0; i < length; i++) sum += ((track[i] as number) + (track[length + i] as number)) / 2;
        const mean = sum / length;
        let squares = 0;
        for (let i = 0; i < length; i++) squares += (((track[i] as number) + (track[length + i] as number)) / 2 - mean) ** 2;
        const std = network.config.normalize ? Math.sqrt(squares / length) : 1;
        const shift = network.config.normalize ? mean : 0;
        const input =
          network.config.channels === 2 ? track : Float32Array.from({ length }, (_, i) => ((track[i] as number) + (track[length + i] as number)) / 2);
        const whole = await network.demixTrack(input.map((v) => (v - shift) / std));
        const stems = network.config.numStems;
        const expected = new Float32Array(streamed.length * 2 * length);
        for (let s = 0; s < stems; s++) {
          for (let c = 0; c < 2; c++) {
            const from = (s * network.config.channels + Math.min(c, network.config.channels - 1)) * length;
            for (let i = 0; i < length; i++) expected[(2 * s + c) * length + i] = (whole[from + i] as number) * std + shift;
          }
        }
        if (network.config.target !== null) {
          for (let i = 0; i < 2 * length; i++) expected[2 * stems * length + i] = (track[i] as number) - (expected[i] as number);
        }
        const actual = new Float32Array(expected.length);
        streamed.forEach((stem, s) => actual.set(stem, s * 2 * length));
        assertStems(`${name} streamed`, expected, actual, streamed.length, { minDb: MIN_SNR_DB });
      } finally {
        await model.dispose();
        await network.release();
      }
    });
    if (fixture.mel_bands) {
      it(`${name}: mel bands as librosa draws them`, () => {
        const config = readRoformerConfig(path.join(FIXTURES as string, fixture.config.file), fixture.model_type as RoformerType);
        const bands = melBandBins(config.sampleRate, config.nFft, config.numBands);
        const expected = fixture.mel_bands?.band_bins_start_end_exclusive ?? [];
        assert.deepEqual(
          bands.map((b) => [b[0], (b[b.length - 1] as number) + 1]),
          expected,
        );
      });
    }
  }
});

describe('RoFormer configs', () => {
  const base = {
    audio: { chunk_size: 44100, num_channels: 2, sample_rate: 44100 },
    model: { dim: 32, depth: 1, stereo: true, num_stems: 1, stft_hop_length: 441 },
    training: { instruments: ['vocals', 'other'], target_instrument: 'vocals' },
    inference: { batch_size: 1, num_overlap: 2 },
  };

  it('reads defaults and tells the two types apart', () => {
    const bs = parseRoformerConfig(base, 'bs.yaml');
    assert.equal(bs.type, 'bs_roformer');
    assert.equal(bs.freqsPerBands.length, 62);
    assert.equal(bs.maskEstimatorDepth, 2);
    assert.deepEqual(bs.instruments, ['vocals']);
    const mel = parseRoformerConfig({ ...base, model: { ...base.model, num_bands: 60 } }, 'mel.yaml');
    assert.equal(mel.type, 'mel_band_roformer');
    assert.equal(mel.maskEstimatorDepth, 1);
  });

  it('refuses an option it does not implement, by name', () => {
    assert.throws(
      () => parseRoformerConfig({ ...base, model: { ...base.model, use_fancy_norm: true } }, 'x.yaml'),
      /unsupported bs_roformer option use_fancy_norm/,
    );
    assert.throws(() => parseRoformerConfig({ ...base, model: { ...base.model, use_pope: true } }, 'x.yaml'), /use_pope/);
    assert.throws(() => parseRoformerConfig({ ...base, model: { ...base.model, freqs_per_bands: [2, 2] } }, 'x.yaml'), /sums to 4/);
    assert.throws(() => parseRoformerConfig({ ...base, model: { ...base.model, num_stems: 2 } }, 'x.yaml'), /num_stems is 2/);
  });

  it('reads the !!python/tuple tag of MSST yaml files', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'stemsplit-roformer-yaml-'));
    try {
      const file = path.join(dir, 'm.yaml');
      writeFileSync(
        file,
        'audio:\n  chunk_size: 44100\nmodel:\n  dim: 8\n  depth: 1\n  freqs_per_bands: !!python/tuple\n  - 512\n  - 513\ntraining:\n  instruments: [vocals]\n',
      );
      assert.deepEqual(readRoformerConfig(file).freqsPerBands, [512, 513]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('names a checkpoint without a config beside it', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'stemsplit-roformer-noconf-'));
    try {
      writeFileSync(path.join(dir, 'lonely.ckpt'), 'x');
      await assert.rejects(RoformerNetwork.open(path.join(dir, 'lonely.ckpt'), { cacheDir }), /no config beside .*lonely\.ckpt/);
      assert.ok(!existsSync(path.join(dir, 'lonely.yaml')));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
