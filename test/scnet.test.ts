/**
 * The SCNet engine against MSST's reference outputs in ../shared/fixtures/msst: for every SCNet
 * fixture fixtures.json lists, the forward pass of one chunk and the whole-track demix at library
 * level, and the demix input split by the real CLI (`stemsplit split x.wav --model NAME.ckpt
 * --format wav --float32`), each stem at ≥ 60 dB SNR; and the config errors a user meets.
 */
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { parse, stringify } from 'yaml';
import { runCli } from './support/process.js';
import { msstModelType, MsstDocument } from '../src/msst/config.js';
import { bandGeometry } from '../src/msst/scnet/graph.js';
import { chunkPadding, ScnetNetwork } from '../src/msst/scnet/engine.js';
import { parseScnetConfig } from '../src/msst/scnet/config.js';
import { fixtureDir } from './support/fixtures.js';
import { checkForwardAndDemix, msstFixtures, splitThroughCli, type FixtureFile } from './support/msst-fixtures.js';
import { assertStems, readF32, writeFloatWav } from './support/reference-audio.js';

const FIXTURES = fixtureDir('msst');
const MIN_SNR_DB = 60;

const work = mkdtempSync(path.join(tmpdir(), 'stemsplit-scnet-'));
const cacheDir = path.join(work, 'cache');
after(() => rmSync(work, { recursive: true, force: true }));

function fixtureFile(file: string): string {
  return path.join(FIXTURES as string, file);
}

function scnetFixtures(): ReturnType<typeof msstFixtures> {
  return msstFixtures(FIXTURES, 'scnet');
}

describe('SCNet fixtures', { skip: FIXTURES === undefined ? 'no fixtures' : false }, () => {
  for (const [name, fixture] of scnetFixtures()) {
    const stems = fixture.instruments_out.length;

    it(`${name}: forward and demix match MSST`, async () => {
      const network = await ScnetNetwork.open(fixtureFile(fixture.checkpoint.file), {
        cacheDir,
        configPath: fixtureFile(fixture.config.file),
        intraOpThreads: 2,
      });
      try {
        await checkForwardAndDemix(network, FIXTURES as string, name, fixture, MIN_SNR_DB);
      } finally {
        await network.release();
      }
    });

    it(`${name}: stemsplit split --format wav --float32 matches MSST's demix`, () => {
      const { actual, expected, stemDir } = splitThroughCli(path.join(work, `cli-${name}`), FIXTURES as string, fixture);
      assert.deepEqual(readdirSync(stemDir).sort(), fixture.instruments_out.map((stem) => `${stem}.wav`).sort());
      assertStems(`${name} through split`, expected, actual, stems, { minDb: MIN_SNR_DB });
    });
  }

  it('split takes --model-config and --model-type scnet, and refuses an unknown model option in one line naming it', () => {
    const fixture = scnetFixtures().find(([name]) => name === 'scnet_2stem')?.[1];
    assert.ok(fixture, 'the scnet_2stem fixture');
    const dir = path.join(work, 'cli-options');
    mkdirSync(dir, { recursive: true });
    const song = path.join(dir, 'song.wav');
    const track = readF32(fixtureFile((fixture.files['demix_in'] as FixtureFile).file));
    writeFloatWav(
      song,
      track.subarray(0, 2 * 50_000).map((v, i) => (i < 50_000 ? v : (track[track.length / 2 + i - 50_000] as number))),
      2,
    );
    const checkpoint = path.join(dir, 'model.ckpt');
    copyFileSync(fixtureFile(fixture.checkpoint.file), checkpoint);
    const env = { STEMSPLIT_DATA_DIR: path.join(dir, 'data'), STEMSPLIT_CACHE_DIR: path.join(dir, 'cache') };
    const named = runCli(
      ['split', song, '--model', checkpoint, '--model-config', fixtureFile(fixture.config.file), '--model-type', 'scnet', '-o', path.join(dir, 'out')],
      env,
    );
    assert.equal(named.status, 0, named.stderr);
    assert.deepEqual(readdirSync(path.join(dir, 'out', 'song')).sort(), ['other.mp3', 'vocals.mp3']);

    const document = parse(readFileSync(fixtureFile(fixture.config.file), 'utf8')) as Record<string, unknown>;
    (document['model'] as Record<string, unknown>)['mamba_layers'] = 2;
    (document['model'] as Record<string, unknown>)['use_flash'] = true;
    writeFileSync(path.join(dir, 'model.yaml'), stringify(document));
    const refused = runCli(['split', song, '--model', checkpoint, '-o', path.join(dir, 'out2')], env);
    // Refused in the split worker, with its own exit code (13, MODEL_INVALID), not the worker's 9.
    assert.equal(refused.status, 13, refused.stderr);
    assert.match(refused.stderr, /model\.yaml: unsupported scnet options mamba_layers, use_flash/);
    assert.equal(
      refused.stderr
        .trim()
        .split('\n')
        .filter((line) => /unsupported/.test(line)).length,
      1,
    );
  });
});

describe('SCNet configs', () => {
  const base = {
    audio: { chunk_size: 44100, num_channels: 2, sample_rate: 44100 },
    model: { sources: ['vocals', 'other'], dims: [4, 8, 16] },
    training: { instruments: ['vocals', 'other'] },
    inference: { batch_size: 1, num_overlap: 2 },
  };
  const withModel = (model: Record<string, unknown>) => ({ ...base, model: { ...base.model, ...model } });

  it('reads the official defaults', () => {
    const config = parseScnetConfig(base, 'x.yaml');
    assert.equal(config.nFft, 4096);
    assert.equal(config.hop, 1024);
    assert.equal(config.winLength, 4096);
    assert.equal(config.normalized, true);
    assert.deepEqual(config.bands, [
      { share: 0.175, stride: 1, kernel: 3 },
      { share: 0.392, stride: 4, kernel: 4 },
      { share: 0.433, stride: 16, kernel: 16 },
    ]);
    assert.deepEqual(config.convDepths, [3, 2, 1]);
    assert.equal(config.numDualPathLayers, 6);
    assert.equal(config.compress, 4);
    assert.equal(config.convKernel, 3);
    assert.equal(config.expand, 1);
    assert.deepEqual(config.instruments, ['vocals', 'other']);
  });

  it('is told from any of its own options, not only the band ones', () => {
    for (const model of [{ expand: 2 }, { dims: [4, 8, 16] }, { nfft: 4096, hop_size: 1024 }, { conv_depths: [3, 2, 1] }]) {
      assert.equal(msstModelType(new MsstDocument({ ...base, model }, 'x.yaml')), 'scnet', JSON.stringify(model));
    }
  });

  it('refuses what the official code cannot run, naming the key', () => {
    assert.throws(() => parseScnetConfig(withModel({ rnn: 'gru' }), 'x.yaml'), /x\.yaml: unsupported scnet option rnn$/);
    assert.throws(() => parseScnetConfig(withModel({ num_dplayer: 3 }), 'x.yaml'), /num_dplayer must be even/);
    assert.throws(() => parseScnetConfig(withModel({ dims: [2, 8] }), 'x.yaml'), /dims\[0\] must be 2 · audio_channels = 4/);
    assert.throws(() => parseScnetConfig(withModel({ band_SR: [0.5, 0.5] }), 'x.yaml'), /band_SR must list 3 values/);
    assert.throws(() => parseScnetConfig(withModel({ conv_kernel: 4 }), 'x.yaml'), /conv_kernel must be odd/);
    assert.throws(() => parseScnetConfig(withModel({ sources: ['vocals'] }), 'x.yaml'), /the number of model.sources is 1 but the config names 2/);
    assert.equal(parseScnetConfig({ ...withModel({ audio_channels: 1, dims: [2, 8] }), audio: { chunk_size: 44100 } }, 'x.yaml').channels, 1);
  });

  it('pads a chunk to an even frame count and lays the bands out as SDlayer does', () => {
    assert.equal(chunkPadding(88200, 1024), 888); // 89088 = 87 hops → 88 frames
    assert.equal(chunkPadding(485100, 1024), 1300); // 474 hops is even → 475
    const config = parseScnetConfig(withModel({ band_SR: [0.225, 0.372, 0.403] }), 'x.yaml');
    const geometry = bandGeometry(config, 2049, 'x.yaml');
    assert.deepEqual(
      geometry.map((g) => [g.start, g.length, g.outLength]),
      [
        [0, 462, 462],
        [462, 762, 191],
        [1224, 825, 52],
      ],
    );
  });
});

it('a checkpoint without a config beside it is named', async () => {
  const dir = path.join(work, 'lonely');
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'lonely.ckpt'), 'x');
  await assert.rejects(ScnetNetwork.open(path.join(dir, 'lonely.ckpt'), { cacheDir }), /no config beside .*lonely\.ckpt/);
});
