/**
 * One shape for a split (src/split-request/): the API's request schema, the CLI's flags and the
 * store's record are checked by the same fields and rules; a rule speaks the caller's words (the
 * API's field names, the CLI's flags), and the output part reaches the worker in one copy.
 *
 * @tier quick
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { SplitRequest as ApiSplitRequest } from '../src/api/split-schemas.js';
import { splitRequestOf, type SplitOptions } from '../src/cli/split-request.js';
import { parseJobOptions } from '../src/store/index.js';
import { API_WORDS, checkSplitRequest, SplitRequest, splitRequestFields, stemOutputOf } from '../src/split-request/split-request.js';

const input = { type: 'direct_url', url: 'https://example.com/song.mp3' };

/** The API's first issue for a body, or undefined when it passes. */
function apiProblem(body: Record<string, unknown>): string | undefined {
  const parsed = ApiSplitRequest.safeParse({ input, ...body });
  return parsed.success ? undefined : parsed.error.issues[0]?.message;
}

/** The CLI's usage error for `split` flags, or undefined when they pass. */
function cliProblem(flags: Partial<SplitOptions>): string | undefined {
  try {
    splitRequestOf({ model: [], output: 'out', format: 'mp3', ...flags });
    return undefined;
  } catch (error) {
    assert.equal((error as { code?: string }).code, 'USAGE');
    return (error as Error).message;
  }
}

describe('each rule once, in the words of whoever asks', () => {
  const cases: Array<{ rule: string; api: Record<string, unknown>; cli: Partial<SplitOptions>; apiWords: RegExp; cliWords: RegExp }> = [
    {
      rule: 'a depth the format holds',
      api: { outputFormat: 'flac', bitDepth: 32 },
      cli: { format: 'flac', float32: true },
      apiWords: /^bitDepth 32 \(float\) applies to outputFormat wav only$/,
      cliWords: /^--float32 applies to --format wav only$/,
    },
    {
      rule: 'a bitrate for a lossy format',
      api: { outputFormat: 'flac', bitrateKbps: 320 },
      cli: { format: 'FLAC', bitrate: '320k' },
      apiWords: /^bitrateKbps applies to lossy formats .*flac is lossless$/,
      cliWords: /^--bitrate applies to lossy formats .*flac is lossless$/,
    },
    {
      rule: 'an ensemble method needs an ensemble',
      api: { model: 'a', ensemble: 'avg_fft' },
      cli: { model: ['a'], ensemble: 'avg_fft' },
      apiWords: /^ensemble and ensembleWeights combine two or more models: name each with models$/,
      cliWords: /^--ensemble and --ensemble-weights combine two or more models: name each with --model$/,
    },
    {
      rule: 'one weight per member',
      api: { models: ['a', 'b'], ensembleWeights: [1, 2, 3] },
      cli: { model: ['a+b'], ensembleWeights: '1,2,3' },
      apiWords: /^ensembleWeights needs one weight per model \(2\), got 3$/,
      cliWords: /^--ensemble-weights needs one weight per model \(2\), got 3$/,
    },
    {
      rule: 'a preset names its models',
      api: { preset: 'vocal_balanced', model: 'a' },
      cli: { preset: 'vocal_balanced', model: ['a'] },
      apiWords: /^preset names its models and how they combine; drop model$/,
      cliWords: /^--preset names its models and how they combine; drop --model$/,
    },
    {
      rule: 'keepIntermediate needs a chain',
      api: { keepIntermediate: true },
      cli: { keepIntermediate: true },
      apiWords: /^keepIntermediate applies to a chain$/,
      cliWords: /^--keep-intermediate applies to a chain$/,
    },
    {
      rule: 'twoStems applies to one model',
      api: { chain: [{ model: 'a' }, { input: 'vocals', model: 'b' }], twoStems: 'vocals' },
      cli: { model: ['a'], then: ['vocals=b'], twoStems: 'vocals' },
      apiWords: /^twoStems applies to one model; a chain writes the stems no later step splits \(keepIntermediate: those too\)$/,
      cliWords: /^--two-stems applies to one model; a chain writes the stems no later step splits \(--keep-intermediate: those too\)$/,
    },
  ];
  for (const { rule, api, cli, apiWords, cliWords } of cases) {
    test(rule, () => {
      assert.match(apiProblem(api) ?? 'passed', apiWords);
      assert.match(cliProblem(cli) ?? 'passed', cliWords);
    });
  }

  test('what passes one passes the other, and the CLI builds the API’s object', () => {
    assert.equal(apiProblem({ models: ['a', 'b'], ensemble: 'avg_fft', ensembleWeights: [3, 1], outputFormat: 'wav', bitDepth: 24 }), undefined);
    const request = splitRequestOf({ model: ['a', 'b'], ensemble: 'avg_fft', ensembleWeights: '3,1', output: 'out', format: 'wav', int24: true });
    assert.deepEqual(request, { models: ['a', 'b'], ensemble: 'avg_fft', ensembleWeights: [3, 1], outputFormat: 'wav', bitDepth: 24 });
    assert.deepEqual(SplitRequest.parse(request), request);
    // --then makes the chain the API's `chain` is: --model is its first step.
    assert.deepEqual(splitRequestOf({ model: ['a'], then: ['vocals=b'], output: 'out', format: 'mp3', keepIntermediate: true }).chain, [
      { model: 'a' },
      { input: 'vocals', model: 'b' },
    ]);
  });

  test('the API covers every field of the shape; a path is a CLI model, not an API one', () => {
    const documented = Object.keys((ApiSplitRequest as unknown as { shape: Record<string, unknown> }).shape);
    for (const field of Object.keys(splitRequestFields)) assert.ok(documented.includes(field), field);
    assert.ok('request' in checkSplitRequest({ model: '/models/Kim_Vocal_2.onnx' }, API_WORDS));
    assert.match(apiProblem({ model: '/models/Kim_Vocal_2.onnx' }) ?? '', /must be a model name from GET \/v1\/models/);
  });
});

describe('the output reaches the worker in one copy, and the store keeps the shape', () => {
  test('stemOutputOf: the format, depth, bitrate and levels as the worker takes them', () => {
    assert.deepEqual(stemOutputOf({ outputFormat: 'flac', bitDepth: 24, clipMode: 'rescale', normalize: true, twoStems: 'vocals' }), {
      format: 'flac',
      bitDepth: 24,
      clipMode: 'rescale',
      normalizePeak: 0.9,
      twoStems: 'vocals',
    });
    assert.deepEqual(stemOutputOf({ outputFormat: 'opus', bitrateKbps: 128, normalize: false }), { format: 'opus', bitrateKbps: 128 });
  });

  test("a row is checked by the shape's own fields", () => {
    assert.throws(() => parseJobOptions('{"twoStems": "Vocals"}'), /twoStems: must be a stem name/);
    assert.throws(() => parseJobOptions('{"normalize": true}'), /normalize/);
    assert.deepEqual(parseJobOptions('{"normalize": 0.5, "clipMode": "clamp"}'), { normalize: 0.5, clipMode: 'clamp' });
  });
});
