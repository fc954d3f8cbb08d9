/**
 * The knobs (issues 47 and 50): each family's options table read by the real CLI (`stemsplit
 * split`) and the real API's modelOptions, and the models they make (real ONNX sessions) on the
 * shared fixtures' small random-weight models and a 2-second clip. Each knob changes the stems as
 * it should, or is refused in one line naming it; an option given to a model whose family ignores
 * it is a usage error naming both.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { separate, type SeparationModel, type StereoTrack } from '../src/separation/index.js';
import { runCli } from './support/process.js';
import { synthesiseSong } from './support/audio.js';
import { fixtureFile } from './support/fixtures.js';
import {
  clip,
  interleave,
  inverted,
  largestDifference as maxDifference,
  loadFixture,
  peak,
  RATE,
  readFloatWav,
  separatedBy,
  usage,
  writeFloatWav,
} from './support/knobs.js';
import { startTestServer, tempDir, uploadFile, waitForSplit } from './support/server.js';

const HTDEMUCS = fixtureFile('demucs', 'htdemucs_small.th');
const SCNET = fixtureFile('msst', 'scnet_2stem.ckpt');
const MDX = fixtureFile('mdx', 'mdx_a_nfft6144_vocals.onnx');
const ROFORMER_VOCALS = fixtureFile('roformer', 'bs_roformer_vocals.ckpt');
const NO_FIXTURES =
  HTDEMUCS === undefined || SCNET === undefined || MDX === undefined || ROFORMER_VOCALS === undefined
    ? 'needs ../shared/fixtures/demucs, msst, roformer and mdx'
    : false;

/** Planar [2, length] with its two channels swapped. */
function swapped(planar: Float32Array): Float32Array {
  const length = planar.length / 2;
  const out = new Float32Array(planar.length);
  out.set(planar.subarray(length), 0);
  out.set(planar.subarray(0, length), length);
  return out;
}

const cacheDir = tempDir();

function load(file: string, values: Record<string, unknown> = {}): Promise<SeparationModel> {
  return loadFixture(file, cacheDir, values);
}

function separated(file: string, track: StereoTrack, values: Record<string, unknown> = {}): Promise<Float32Array[]> {
  return separatedBy(file, cacheDir, track, values);
}

test('tta is the mean of the plain, the channel-swapped and the polarity-inverted separations, each undone (MSST; split --tta checks Demucs below)', {
  skip: NO_FIXTURES,
}, async () => {
  const track = clip();
  for (const file of [SCNET as string]) {
    const augmented = await separated(file, track, { tta: true });
    const plain = await separated(file, track);
    const fromSwapped = await separated(file, { data: swapped(track.data), length: track.length });
    const fromInverted = await separated(file, { data: track.data.map((value) => -value), length: track.length });
    for (const [source, stem] of augmented.entries()) {
      const one = plain[source] as Float32Array;
      const two = swapped(fromSwapped[source] as Float32Array);
      const three = fromInverted[source] as Float32Array;
      const mean = one.map((value, i) => (value + (two[i] as number) - (three[i] as number)) / 3);
      const scale = Math.max(peak(mean), 1e-6);
      assert.ok(maxDifference(stem, mean) < 1e-4 * scale + 1e-6, `${file} stem ${source}: tta is the mean of the three (off by ${maxDifference(stem, mean)})`);
      assert.ok(maxDifference(stem, one) > 1e-3 * scale, `${file} stem ${source}: tta changes the stem`);
    }
  }
});

test('segment, overlap, shifts and the MSST overrides change the stems; no-split runs one chunk; a segment longer than HTDemucs was trained on, or a track longer than a segment with no-split, is refused', {
  skip: NO_FIXTURES,
}, async () => {
  const track = clip();
  const vocals = async (values: Record<string, unknown>) => (await separated(HTDEMUCS as string, track, values))[3] as Float32Array;
  const changes = (a: Float32Array, b: Float32Array, what: string) => assert.ok(maxDifference(a, b) > 1e-4 * peak(b), `${what} changes the stems`);
  const base = await vocals({});
  const oneSecond = await vocals({ segment: 1 });
  changes(oneSecond, base, 'segment 1 (of 7.8)');
  // The 2 s clip is one chunk at the trained segment: overlap shows with 1 s chunks.
  changes(await vocals({ segment: 1, overlap: 0.5 }), oneSecond, 'overlap 0.5 (of 0.25)');
  changes(await vocals({ shifts: 1 }), base, 'shifts 1');
  const whole = await load(HTDEMUCS as string, { noSplit: true });
  try {
    assert.deepEqual((await separate(whole, track))[3], base, 'no-split on a track shorter than a segment: the one chunk split runs');
    const long = { data: synthesiseSong(9), length: 9 * RATE };
    await assert.rejects(
      separate(whole, long),
      /^StemsplitError: --no-split runs the track in one piece, and htdemucs_small takes at most 7\.80 s in one .*; the track is 9\.00 s$/,
    );
  } finally {
    await whole.dispose();
  }
  await assert.rejects(
    load(HTDEMUCS as string, { segment: 8 }),
    /^StemsplitError: --segment 8: htdemucs_small is a Transformer model trained on 7\.80 s segments; give at most 7\.80$/,
  );
  const [yaml] = await separated(SCNET as string, track);
  const [overlapped] = await separated(SCNET as string, track, { mdxcOverlap: 4 });
  assert.ok(maxDifference(overlapped as Float32Array, yaml as Float32Array) > 0, 'mdxcOverlap 4 changes the stems (the yaml says 2)');
});

test('split takes the knobs as flags (and python-audio-separator spellings); a wrong value or an option the model ignores is a usage error naming both', {
  skip: NO_FIXTURES,
}, async () => {
  const dir = tempDir();
  const track = clip();
  const wav = join(dir, 'clip.wav');
  writeFloatWav(wav, interleave(track));
  const split = (...args: string[]) =>
    runCli(['--data-dir', join(dir, 'data'), 'split', wav, '--format', 'wav', '--float32', ...args], { STEMSPLIT_CACHE_DIR: cacheDir });

  const out = join(dir, 'out');
  const knobs = { tta: true, shifts: 1, overlap: 0.5, segment: 4, noSplit: true };
  const run = split('--model', HTDEMUCS as string, '-o', out, '--tta', '--demucs_shifts', '1', '--overlap', '0.5', '--segment', '4', '--no-split');
  assert.equal(run.status, 0, run.stderr);
  const expected = await separated(HTDEMUCS as string, track, knobs);
  const written = readFloatWav(join(out, 'clip', 'vocals.wav'));
  const want = interleave({ data: expected[3] as Float32Array, length: track.length });
  assert.ok(
    maxDifference(written, want) < 1e-5 * peak(want) + 1e-7,
    `the flags reach the model: the CLI's vocals are the model's with ${JSON.stringify(knobs)}`,
  );

  usage(split('--model', HTDEMUCS as string, '--overlap', '1'), /^stemsplit: --overlap must be a number from 0 to below 1, got "1"$/m);
  usage(
    split('--model', MDX as string, '--shifts', '2'),
    /^stemsplit: --shifts applies to stemsplit model\.json models, Demucs models \(\.th, bag \.yaml\); mdx_a_nfft6144_vocals \(mdx\) is not one$/m,
  );
  usage(
    split('--model', HTDEMUCS as string, '--mdxc_overlap', '4'),
    /^stemsplit: --mdxc-overlap applies to MSST checkpoints \(\.ckpt, \.pth\); htdemucs_small \(demucs\) is not one$/m,
  );
  const help = runCli(['split', '--help']).stdout;
  assert.match(help, /--demucs_shifts +--shifts\n/);
  assert.match(help, /--mdxc_overlap +--mdxc-overlap\n/);
});

test('invert-spect: the mix minus the primary where the mix is louder, nothing where the primary is (UVR invert_stem), and split --invert-spect writes it', {
  skip: NO_FIXTURES,
}, async () => {
  const track = clip();
  const scale = peak(track.data);
  // |Y| ≤ |X| in every bin: the time-domain difference; |Y| ≥ |X|: the mix's phase at |Y| minus Y, nothing.
  assert.ok(
    maxDifference(
      await inverted(
        track,
        track.data.map((value) => value * 0.25),
      ),
      track.data.map((value) => value * 0.75),
    ) <
      1e-5 * scale,
  );
  assert.ok(
    peak(
      await inverted(
        track,
        track.data.map((value) => value * 2),
      ),
    ) <
      1e-5 * scale,
  );

  const dir = tempDir();
  const wav = join(dir, 'clip.wav');
  writeFloatWav(wav, interleave(track));
  const stems = (...flags: string[]) => {
    const out = join(dir, `out${flags.length}`);
    const run = runCli(
      ['--data-dir', join(dir, 'data'), 'split', wav, '--model', ROFORMER_VOCALS as string, '--format', 'wav', '--float32', '-o', out, ...flags],
      { STEMSPLIT_CACHE_DIR: cacheDir },
    );
    assert.equal(run.status, 0, run.stderr);
    return { vocals: readFloatWav(join(out, 'clip', 'vocals.wav')), rest: readFloatWav(join(out, 'clip', 'no_vocals.wav')) };
  };
  const plain = stems();
  const spectral = stems('--invert_spect');
  assert.deepEqual(spectral.vocals, plain.vocals);
  const vocals = new Float32Array(2 * track.length);
  for (let i = 0; i < track.length; i++) [vocals[i], vocals[track.length + i]] = [plain.vocals[2 * i] as number, plain.vocals[2 * i + 1] as number];
  const want = interleave({ data: await inverted(track, vocals), length: track.length });
  assert.ok(maxDifference(spectral.rest, want) < 1e-5 * scale, 'no_vocals is the spectral inversion of the mix and the vocals');
  assert.ok(maxDifference(spectral.rest, plain.rest) > 1e-4 * scale, 'and not their difference');
});

test("the API's modelOptions take the same options, checked by the family's table", { skip: NO_FIXTURES }, async () => {
  const dataDir = tempDir();
  const added = runCli(['--data-dir', dataDir, 'models', 'add', SCNET as string, '--terms', 'MIT (a test fixture)']);
  assert.equal(added.status, 0, added.stderr);
  const t = await startTestServer({ dataDir });
  try {
    const song = join(dataDir, 'clip.wav');
    writeFloatWav(song, interleave(clip()));
    const post = async (modelOptions: Record<string, unknown>) => {
      const input = await uploadFile(t, readFileSync(song));
      return t.request('POST', '/audio/splits', { body: { input, model: 'scnet_2stem', modelOptions } });
    };
    const refused = async (modelOptions: Record<string, unknown>, message: RegExp) => {
      const reply = await post(modelOptions);
      assert.equal(reply.status, 422, JSON.stringify(reply.json));
      assert.equal(reply.json.error.code, 'VALIDATION_ERROR');
      assert.match(reply.json.error.message as string, message);
    };
    await refused(
      { shifts: 1 },
      /^modelOptions\.shifts applies to stemsplit model\.json models, Demucs models \(\.th, bag \.yaml\), and scnet_2stem is not one$/,
    );
    await refused({ mdxcOverlap: 0 }, /^modelOptions\.mdxcOverlap must be a whole number from 1 to 50, got "0"$/);
    const made = await post({ mdxcOverlap: 4, tta: true });
    assert.equal(made.status, 200, JSON.stringify(made.json));
    const done = (await waitForSplit(t, made.json.data.id)).json.data;
    assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
    assert.deepEqual(done.modelOptions, { mdxcOverlap: 4, tta: true });
  } finally {
    await t.close();
  }
});
