/**
 * The RoFormer engine against MSST's reference outputs in ../shared/fixtures/roformer: for
 * every fixture fixtures.json lists, the forward pass of one chunk and the whole-track demix
 * (and any `demix_out_batch<k>` variant), each stem at ≥ 60 dB SNR; the mel band layout
 * against the listed one; and the config errors a user meets.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { melBandBins } from '../src/roformer/bands.js';
import { parseRoformerConfig, readRoformerConfig, type RoformerType } from '../src/roformer/config.js';
import { loadRoformer, RoformerNetwork } from '../src/roformer/engine.js';
import { separate } from '../src/separation/index.js';
import { fixtureDir } from './support/fixtures.js';

const FIXTURES = fixtureDir('roformer');
const MIN_SNR_DB = 60;

interface FileEntry {
  readonly file: string;
  readonly shape: readonly number[];
}
interface Fixture {
  readonly model_type: RoformerType;
  readonly checkpoint: { readonly file: string };
  readonly config: { readonly file: string };
  readonly instruments_out: readonly string[];
  readonly files: Readonly<Record<string, FileEntry>>;
  readonly mel_bands?: { readonly band_bins_start_end_exclusive: readonly (readonly [number, number])[] };
}

const cacheDir = mkdtempSync(path.join(tmpdir(), 'stemsplit-roformer-cache-'));
after(() => rmSync(cacheDir, { recursive: true, force: true }));

function readF32(file: string): Float32Array {
  const bytes = readFileSync(path.join(FIXTURES as string, file));
  return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
}

/** SNR in dB of `actual` against `expected` over `stems` equal planes. */
function snrPerStem(expected: Float32Array, actual: Float32Array, stems: number): number[] {
  assert.equal(actual.length, expected.length, 'output size');
  const plane = expected.length / stems;
  return Array.from({ length: stems }, (_, s) => {
    let signal = 0;
    let noise = 0;
    for (let i = s * plane; i < (s + 1) * plane; i++) {
      signal += (expected[i] as number) ** 2;
      noise += ((expected[i] as number) - (actual[i] as number)) ** 2;
    }
    return 10 * Math.log10(signal / Math.max(noise, 1e-30));
  });
}

function assertSnr(label: string, expected: Float32Array, actual: Float32Array, stems: number): void {
  const snrs = snrPerStem(expected, actual, stems);
  console.log(`${label}: ${snrs.map((s) => s.toFixed(1)).join(' / ')} dB`);
  for (const [i, snr] of snrs.entries()) assert.ok(snr >= MIN_SNR_DB, `${label} stem ${i}: ${snr.toFixed(1)} dB < ${MIN_SNR_DB}`);
}

describe('RoFormer fixtures', { skip: FIXTURES === undefined ? 'no fixtures' : false }, () => {
  const manifest = FIXTURES ? (JSON.parse(readFileSync(path.join(FIXTURES, 'fixtures.json'), 'utf8')) as { fixtures: Record<string, Fixture> }) : { fixtures: {} };
  for (const [name, fixture] of Object.entries(manifest.fixtures)) {
    it(`${name}: forward and demix match MSST`, async () => {
      const dir = FIXTURES as string;
      const network = await RoformerNetwork.open(path.join(dir, fixture.checkpoint.file), {
        cacheDir,
        configPath: path.join(dir, fixture.config.file),
        type: fixture.model_type,
        intraOpThreads: 2,
      });
      try {
        const stems = fixture.instruments_out.length;
        const { files } = fixture;
        const forwardIn = files['forward_in'];
        const forwardOut = files['forward_out'];
        if (forwardIn && forwardOut) {
          assertSnr(`${name} forward`, readF32(forwardOut.file), await network.forward(readF32(forwardIn.file)), stems);
        }
        const demixIn = files['demix_in'];
        assert.ok(demixIn, 'a demix input');
        const track = readF32(demixIn.file);
        for (const [key, entry] of Object.entries(files)) {
          const batch = /^demix_out(?:_batch(\d+))?$/.exec(key);
          if (!batch) continue;
          const batchSize = batch[1] === undefined ? undefined : Number(batch[1]);
          const out = await network.demixTrack(track, batchSize === undefined ? {} : { batchSize });
          assertSnr(`${name} ${key}`, readF32(entry.file), out, stems);
        }
      } finally {
        await network.release();
      }
    });
    it(`${name}: streamed through the pipeline (a window over the track, MSST normalisation, no_<target>) it matches the whole-track demix`, async () => {
      const dir = FIXTURES as string;
      const options = { cacheDir, configPath: path.join(dir, fixture.config.file), type: fixture.model_type, intraOpThreads: 2 };
      const model = await loadRoformer(path.join(dir, fixture.checkpoint.file), options);
      const network = await RoformerNetwork.open(path.join(dir, fixture.checkpoint.file), options);
      try {
        const track = readF32((fixture.files['demix_in'] as { file: string }).file);
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
        const input = network.config.channels === 2 ? track : Float32Array.from({ length }, (_, i) => ((track[i] as number) + (track[length + i] as number)) / 2);
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
        assertSnr(`${name} streamed`, expected, actual, streamed.length);
      } finally {
        await model.dispose();
        await network.release();
      }
    });
    if (fixture.mel_bands) {
      it(`${name}: mel bands as librosa draws them`, () => {
        const config = readRoformerConfig(path.join(FIXTURES as string, fixture.config.file), fixture.model_type);
        const bands = melBandBins(config.sampleRate, config.nFft, config.numBands);
        const expected = fixture.mel_bands?.band_bins_start_end_exclusive ?? [];
        assert.deepEqual(bands.map((b) => [b[0], (b[b.length - 1] as number) + 1]), expected);
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
    assert.throws(() => parseRoformerConfig({ ...base, model: { ...base.model, use_fancy_norm: true } }, 'x.yaml'), /unsupported bs_roformer option use_fancy_norm/);
    assert.throws(() => parseRoformerConfig({ ...base, model: { ...base.model, use_pope: true } }, 'x.yaml'), /use_pope/);
    assert.throws(() => parseRoformerConfig({ ...base, model: { ...base.model, freqs_per_bands: [2, 2] } }, 'x.yaml'), /sums to 4/);
    assert.throws(() => parseRoformerConfig({ ...base, model: { ...base.model, num_stems: 2 } }, 'x.yaml'), /num_stems is 2/);
  });

  it('reads the !!python/tuple tag of MSST yaml files', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'stemsplit-roformer-yaml-'));
    try {
      const file = path.join(dir, 'm.yaml');
      writeFileSync(file, 'audio:\n  chunk_size: 44100\nmodel:\n  dim: 8\n  depth: 1\n  freqs_per_bands: !!python/tuple\n  - 512\n  - 513\ntraining:\n  instruments: [vocals]\n');
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
