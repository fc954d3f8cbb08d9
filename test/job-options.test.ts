/**
 * A job's recorded options (store/job-options.ts) are checked when read back: what stemsplit
 * writes comes back as it was; anything else (a hand-edited row, an older or newer stemsplit's
 * field) is refused in words naming the field, instead of reaching the worker.
 *
 * @tier quick
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseJobOptions, serializeJobOptions, type JobOptions } from '../src/store/index.js';
import { jobOptionsOf } from '../src/store/job-options.js';

test('what the service writes reads back unchanged; no options is none', () => {
  const written: JobOptions = {
    ensemble: 'avg_fft',
    ensembleWeights: [2, 1],
    bitDepth: 24,
    bitrateKbps: 192,
    clipMode: 'rescale',
    normalize: 0.9,
    modelOptions: { mdxSegmentSize: 512, tta: true },
    chain: [{ model: 'a' }, { input: 'vocals', models: ['b', 'c'], ensemble: 'max_wave' }],
    keepIntermediate: true,
  };
  assert.deepEqual(parseJobOptions(serializeJobOptions(written)), written);
  assert.deepEqual(parseJobOptions(null), {});
  assert.equal(serializeJobOptions({}), null);
});

test('a row stemsplit did not write is refused naming the field', () => {
  const cases: Array<[string, RegExp]> = [
    ['{"bitDepth": 20}', /recorded options are not what stemsplit writes: bitDepth/],
    ['{"ensemble": "loudest"}', /: ensemble/],
    ['{"chain": [{"model": "a", "run": "rm -rf /"}]}', /: chain\.0/],
    ['{"shifts": 2}', /not what stemsplit writes/],
    ['[1, 2]', /not what stemsplit writes: the record/],
    ['{not json', /are not JSON/],
  ];
  for (const [column, message] of cases) {
    assert.throws(
      () => parseJobOptions(column),
      (error: Error & { code?: string }) => error.code === 'INTERNAL_ERROR' && message.test(error.message),
      column,
    );
  }
});

test('what a request keeps: its own fields, normalize as its peak, no model name, format or empty options', () => {
  const kept = jobOptionsOf({ model: 'x', outputFormat: 'wav', bitDepth: 24, normalize: true, twoStems: 'vocals', modelOptions: {}, clipMode: 'clamp' });
  assert.deepEqual(kept, { bitDepth: 24, twoStems: 'vocals', clipMode: 'clamp', normalize: 0.9 });
  assert.deepEqual(parseJobOptions(serializeJobOptions(kept)), kept);
  assert.deepEqual(jobOptionsOf({ outputFormat: 'mp3', keepIntermediate: true }), {});
});
