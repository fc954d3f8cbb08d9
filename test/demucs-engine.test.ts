/**
 * The Demucs engine against the official reference outputs in ../shared/fixtures/demucs:
 * every forward fixture (one model call) and every whole-track fixture (through the
 * separation pipeline), each source at ≥ 60 dB SNR. Also the conversion cache.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { convertCheckpoint, loadDemucs } from '../src/demucs/index.js';
import { separate } from '../src/separation/index.js';
import type { SegmentModel } from '../src/separation/index.js';
import { fixtureDir } from './support/fixtures.js';
import { assertStems, readF32 } from './support/reference-audio.js';

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

/** A fixture file, by its name in fixtures.json. */
const fixture32 = (file: string): Float32Array => readF32(path.join(FIXTURES, file));

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
    const {
      checkpoint,
      forward_in: [inFile, inShape],
      forward_out: [outFile],
    } = fixture;
    it(`${name} matches the reference at ≥ ${MIN_SNR_DB} dB per source`, async () => {
      const input = fixture32(inFile);
      const reference = fixture32(outFile);
      const length = inShape[2] as number;
      await withModel(checkpoint, async (model) => {
        assert.deepEqual(model.sources, fixture.sources);
        assert.equal(model.segmentSamples, length);
        assert.equal(model.normalize, true);
        const output = await model.run(input);
        assert.equal(output.length, fixture.sources.length * 2 * length);
        assertStems(`${name} forward`, reference, output, fixture.sources.length, { minDb: MIN_SNR_DB, names: fixture.sources, stride: STRIDE });
      });
    });
  }
});

describe('demucs whole-track separation (through the pipeline, as demucs.api)', () => {
  for (const [name, fixture] of Object.entries(manifest.fixtures)) {
    if (fixture.separate_in === undefined || fixture.separate_out === undefined) continue;
    const file = fixture.bag ?? fixture.checkpoint;
    if (file === undefined) continue;
    const {
      separate_in: [inFile, inShape],
      separate_out: [outFile],
    } = fixture;
    it(`${name}${fixture.bag ? ' (bag)' : ''} matches the reference at ≥ ${MIN_SNR_DB} dB per source`, async () => {
      const track = { data: fixture32(inFile), length: inShape[1] as number };
      const reference = fixture32(outFile);
      await withModel(file, async (model) => {
        const stems = await separate(model, track, { overlap: 0.25, shifts: 0 });
        assert.equal(stems.length, fixture.sources.length);
        assertStems(`${name} separate`, reference, stems, fixture.sources.length, { minDb: MIN_SNR_DB, names: fixture.sources, stride: STRIDE });
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
    assert.deepEqual(
      files.map((f) => statSync(path.join(first.directory, f)).mtimeMs),
      stamps,
      'cached files are not rewritten',
    );
    assert.match(path.basename(first.directory), /^2e02b16c636d9b1a93e5815247bccf997e45eb59a1c5306a8c0bfde0034200bb\./, 'keyed by the checkpoint SHA-256');
    assert.deepEqual(
      readdirSync(path.dirname(first.directory)).filter((f) => f.includes('.tmp-')),
      [],
      'no temporary leftovers',
    );
  });
});
