/**
 * `--precision int8`: a converted checkpoint's constant-weight matrix products run as ORT's
 * DynamicQuantizeMatMul (SCNet's LSTMs as DynamicQuantizeLSTM), cached apart from fp32, through
 * the library and `stemsplit split`.
 * The narrow Demucs fixture keeps ≥ 80 dB against the official reference in int8 (85.9–97.4 dB
 * measured; fp32 is at 125–136), so a wrong quantization (scales, layout) shows at once.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { spawnSync } from 'node:child_process';
import { loadDemucs } from '../src/demucs/index.js';
import { runCli } from '../harness/process.js';
import { tempDir } from './support/server.js';
import { fixtureDir } from './support/fixtures.js';
import { msstFixtures, splitThroughCli } from './support/msst-fixtures.js';
import { assertSnrs, decodePlanar, readF32, stemSnrs, writeFloatWav } from './support/reference-audio.js';

const FIXTURES = fixtureDir('demucs');
const MIN_INT8_DB = 80;
const STRIDE = 8;
const work = tempDir('stemsplit-precision-');
after(() => spawnSync('rm', ['-rf', work]));

/** SNR of a full-rate stem [2 × length] against a reference kept every STRIDE-th sample [2 × kept]. */
function stridedSnr(reference: Float32Array, ours: Float32Array, length: number): number {
  const kept = reference.length / 2;
  let signal = 0;
  let noise = 0;
  for (let c = 0; c < 2; c++) {
    for (let j = 0; j < kept; j++) {
      const r = reference[c * kept + j] as number;
      signal += r * r;
      noise += (r - (ours[c * length + j * STRIDE] as number)) ** 2;
    }
  }
  return 10 * Math.log10(signal / noise);
}

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
    const kept = reference.length / model.sources.length;
    model.sources.forEach((source, s) => {
      const snr = stridedSnr(reference.subarray(s * kept, (s + 1) * kept), out.subarray(s * 2 * length, (s + 1) * 2 * length), length);
      assert.ok(snr >= MIN_INT8_DB, `${source}: ${snr.toFixed(1)} dB < ${MIN_INT8_DB}`);
    });
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
    const length = track.length / 2;
    const kept = reference.length / 4;
    ['drums', 'bass', 'other', 'vocals'].forEach((stem, s) => {
      const ours = decodePlanar(path.join(out, 'song', `${stem}.wav`), 2);
      const snr = stridedSnr(reference.subarray(s * kept, (s + 1) * kept), ours, length);
      assert.ok(snr >= MIN_INT8_DB, `${stem}: ${snr.toFixed(1)} dB < ${MIN_INT8_DB}`);
    });
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
      assertSnrs(`${name} int8 through split`, stemSnrs(expected, actual, fixture.instruments_out.length), MIN_SCNET_INT8_DB);
      const graphs = readdirSync(path.join(caseDir, 'cache', 'scnet'), { recursive: true, withFileTypes: true }).filter((entry) => entry.name.endsWith('.onnx'));
      assert.ok(graphs.some((entry) => readFileSync(path.join(entry.parentPath, entry.name)).includes('DynamicQuantizeLSTM')), 'the cached graphs hold int8 LSTMs');
    });
  }
});
