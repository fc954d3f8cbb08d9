/**
 * The Demucs engine against the official reference outputs in ../shared/fixtures/demucs:
 * every forward fixture (one model call) and every whole-track fixture (through the
 * separation pipeline), each source at ≥ 60 dB SNR. Also the conversion cache.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it, type TestContext } from 'node:test';
import { convertCheckpoint, loadDemucs } from '../src/demucs/index.js';
import { separate } from '../src/separation/index.js';
import type { SegmentModel } from '../src/separation/index.js';
import { fixtureDir } from './support/fixtures.js';

const FIXTURES = fixtureDir('demucs') ?? '';
const skip = FIXTURES === '' ? 'no fixtures' : false;
const MIN_SNR_DB = 60;

interface Fixture {
  readonly checkpoint?: string;
  readonly bag?: string;
  readonly sources: readonly string[];
  readonly forward_in?: [string, number[]];
  readonly forward_out?: [string, number[]];
  readonly separate_in?: [string, number[]];
  readonly separate_out?: [string, number[]];
}
const manifest = (skip ? { output_stride: 1, fixtures: {} } : JSON.parse(readFileSync(path.join(FIXTURES, 'fixtures.json'), 'utf8'))) as {
  output_stride: number;
  fixtures: Record<string, Fixture>;
};
const STRIDE = manifest.output_stride;

const cacheDir = mkdtempSync(path.join(tmpdir(), 'stemsplit-demucs-cache-'));
after(() => rmSync(cacheDir, { recursive: true, force: true }));

function readF32(file: string): Float32Array {
  const bytes = readFileSync(path.join(FIXTURES, file));
  return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
}

/** SNR per source of `ours` (planar [sources, 2, length]) against a reference kept every STRIDE-th sample. */
function snrPerSource(reference: Float32Array, ours: (source: number, channel: number, index: number) => number, sources: number, kept: number): number[] {
  return Array.from({ length: sources }, (_, source) => {
    let signal = 0;
    let noise = 0;
    for (let channel = 0; channel < 2; channel++) {
      for (let j = 0; j < kept; j++) {
        const ref = reference[(source * 2 + channel) * kept + j] as number;
        signal += ref * ref;
        noise += (ref - ours(source, channel, j * STRIDE)) ** 2;
      }
    }
    return 10 * Math.log10(signal / noise);
  });
}

function assertFidelity(t: TestContext, name: string, fixture: Fixture, snrs: number[]): void {
  t.diagnostic(`SNR per source (${fixture.sources.join(' / ')}): ${snrs.map((snr) => snr.toFixed(1)).join(' / ')} dB`);
  snrs.forEach((snr, source) => {
    assert.ok(snr >= MIN_SNR_DB, `${name} ${fixture.sources[source]}: ${snr.toFixed(1)} dB < ${MIN_SNR_DB} dB`);
  });
}

async function withModel<T>(file: string, use: (model: SegmentModel) => Promise<T>): Promise<T> {
  const model = await loadDemucs(path.join(FIXTURES, file), { cacheDir, intraOpThreads: 2 });
  try {
    return await use(model);
  } finally {
    await model.dispose();
  }
}

describe('demucs forward pass (one segment, as HTDemucs.forward)', () => {
  for (const [name, fixture] of Object.entries(manifest.fixtures)) {
    if (fixture.forward_in === undefined || fixture.forward_out === undefined || fixture.checkpoint === undefined) continue;
    const { checkpoint, forward_in: [inFile, inShape], forward_out: [outFile, outShape] } = fixture;
    it(`${name} matches the reference at ≥ ${MIN_SNR_DB} dB per source`, async (t) => {
      const input = readF32(inFile);
      const reference = readF32(outFile);
      const length = inShape[2] as number;
      await withModel(checkpoint, async (model) => {
        assert.deepEqual(model.sources, fixture.sources);
        assert.equal(model.segmentSamples, length);
        assert.equal(model.normalize, true);
        const output = await model.run(input);
        assert.equal(output.length, fixture.sources.length * 2 * length);
        const snrs = snrPerSource(reference, (s, c, i) => output[(s * 2 + c) * length + i] as number, fixture.sources.length, outShape[3] as number);
        assertFidelity(t, name, fixture, snrs);
      });
    });
  }
});

describe('demucs whole-track separation (through the pipeline, as demucs.api)', () => {
  for (const [name, fixture] of Object.entries(manifest.fixtures)) {
    if (fixture.separate_in === undefined || fixture.separate_out === undefined) continue;
    const file = fixture.bag ?? fixture.checkpoint;
    if (file === undefined) continue;
    const { separate_in: [inFile, inShape], separate_out: [outFile, outShape] } = fixture;
    it(`${name}${fixture.bag ? ' (bag)' : ''} matches the reference at ≥ ${MIN_SNR_DB} dB per source`, async (t) => {
      const track = { data: readF32(inFile), length: inShape[1] as number };
      const reference = readF32(outFile);
      await withModel(file, async (model) => {
        const stems = await separate(model, track, { overlap: 0.25, shifts: 0 });
        assert.equal(stems.length, fixture.sources.length);
        const snrs = snrPerSource(reference, (s, c, i) => stems[s]?.[c * track.length + i] as number, fixture.sources.length, outShape[2] as number);
        assertFidelity(t, name, fixture, snrs);
      });
    });
  }
});

describe('demucs conversion cache', { skip }, () => {
  it('converts a checkpoint once and reuses the cached graphs', async () => {
    const checkpoint = path.join(FIXTURES, 'htdemucs_small.th');
    const first = await convertCheckpoint(checkpoint, cacheDir);
    const files = readdirSync(first.directory);
    assert.ok(files.includes('model.json'));
    assert.equal(files.filter((f) => f.endsWith('.onnx')).length, first.stages.length);
    const stamps = files.map((f) => statSync(path.join(first.directory, f)).mtimeMs);

    const second = await convertCheckpoint(checkpoint, cacheDir);
    assert.equal(second.directory, first.directory);
    assert.deepEqual(second.stages, first.stages);
    assert.deepEqual(files.map((f) => statSync(path.join(first.directory, f)).mtimeMs), stamps, 'cached files are not rewritten');
    assert.match(path.basename(first.directory), /^2e02b16c636d9b1a93e5815247bccf997e45eb59a1c5306a8c0bfde0034200bb\./, 'keyed by the checkpoint SHA-256');
    assert.deepEqual(readdirSync(path.dirname(first.directory)).filter((f) => f.includes('.tmp-')), [], 'no temporary leftovers');
  });
});
