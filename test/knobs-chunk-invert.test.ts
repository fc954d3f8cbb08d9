/**
 * The last knobs of issue 47.4: MSST's chunk size (`--mdxc-segment-size`, python-audio-separator's
 * `--mdxc_segment_size` with `--mdxc_override_model_segment_size`), `--invert-spect` for MDX-Net and
 * VR, and `--invert-spect` with `--two-stems X` for a multi-stem MSST model (no_X by spectral
 * inversion of the mix and X, as UVR makes it). Run through the real CLI and the real API on the
 * shared fixtures' random-weight models (real ONNX sessions, real conversions in a real cache).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { familyById } from '../src/models/families.js';
import { separate } from '../src/separation/index.js';
import { fixtureFile } from './support/fixtures.js';
import { clip, clipSplitter, interleave, inverted, largestDifference, peak, planar, readFloatWav, separatedBy, usage, writeFloatWav } from './support/knobs.js';
import { runCli } from './support/process.js';
import { startTestServer, tempDir, uploadFile, waitForSplit } from './support/server.js';

const ROFORMER = fixtureFile('roformer', 'bs_roformer_vocals.ckpt');
const MDX23C = fixtureFile('msst', 'mdx23c_2stem.ckpt');
const SCNET_4 = fixtureFile('msst', 'scnet_4stem.ckpt');
const MDX = fixtureFile('mdx', 'mdx_a_nfft6144_vocals.onnx');
const VR = fixtureFile('vr', 'vr_a_v50_1band_inst.pth');
const NO_MSST = ROFORMER === undefined || MDX23C === undefined || SCNET_4 === undefined ? 'needs ../shared/fixtures/roformer and msst' : false;
const NO_UVR = MDX === undefined || VR === undefined ? 'needs ../shared/fixtures/mdx and vr' : false;

/** The converted graphs in a cache folder of one engine. */
function conversions(cacheDir: string, engine: string): string[] {
  try {
    return readdirSync(join(cacheDir, engine)).filter((entry) => /\.v\d+$/.test(entry));
  } catch {
    return [];
  }
}

test("mdxc-segment-size: a chunk of hop·(frames − 1) samples, as a yaml of that chunk_size gives, converted apart; the yaml's own size is no override; a size the network cannot take is one usage line", {
  skip: NO_MSST,
}, async () => {
  const cacheDir = tempDir();
  const track = clip();
  const plain = await separatedBy(ROFORMER as string, cacheDir, track);
  const [converted] = conversions(cacheDir, 'roformer');
  assert.ok(converted !== undefined);
  // The yaml's chunk_size 44100 is 441 · (101 − 1): the same graphs, the same stems.
  assert.deepEqual(await separatedBy(ROFORMER as string, cacheDir, track, { mdxcSegmentSize: 101 }), plain);
  assert.deepEqual(conversions(cacheDir, 'roformer'), [converted]);

  const half = await separatedBy(ROFORMER as string, cacheDir, track, { mdxcSegmentSize: 51 });
  assert.equal(conversions(cacheDir, 'roformer').length, 2, 'a chunk of 22050 samples is a conversion of its own');
  assert.ok(largestDifference(half[0] as Float32Array, plain[0] as Float32Array) > 1e-4 * peak(plain[0] as Float32Array), 'the chunk size changes the stems');
  // The same checkpoint with a yaml that says chunk_size 22050.
  const dir = tempDir();
  const yaml = join(dir, 'bs_roformer_vocals.yaml');
  writeFileSync(yaml, readFileSync((ROFORMER as string).replace(/\.ckpt$/, '.yaml'), 'utf8').replace(/chunk_size: 44100\b/, 'chunk_size: 22050'));
  const checkpoint = join(dir, 'bs_roformer_vocals.ckpt');
  copyFileSync(ROFORMER as string, checkpoint);
  const direct = await familyById('msst').load({ name: 'direct', path: checkpoint, configPath: yaml }, { cacheDir, intraOpThreads: 1 });
  try {
    assert.deepEqual(await separate(direct, track), half, '--mdxc-segment-size 51 is chunk_size 441 · 50');
  } finally {
    await direct.dispose();
  }

  const split = clipSplitter(tempDir(), track, cacheDir);
  const out = join(tempDir(), 'out');
  const run = split('--model', MDX23C as string, '-o', out, '--mdxc_segment_size', '32');
  assert.equal(run.status, 0, run.stderr);
  const [vocals] = await separatedBy(MDX23C as string, cacheDir, track, { mdxcSegmentSize: 32 });
  const [yamlVocals] = await separatedBy(MDX23C as string, cacheDir, track);
  const written = planar(readFloatWav(join(out, 'clip', 'vocals.wav')));
  assert.ok(largestDifference(written, vocals as Float32Array) < 1e-6, "the flag reaches the model: the CLI writes the model's stems at 32 frames");
  assert.ok(largestDifference(written, yamlVocals as Float32Array) > 1e-4 * peak(yamlVocals as Float32Array), "and not the yaml's 64");
  assert.equal(conversions(cacheDir, 'mdx23c').length, 2);

  usage(
    split('--model', MDX23C as string, '--mdxc-segment-size', '33'),
    /^stemsplit: model mdx23c_2stem \(.*\) could not be loaded: --mdxc-segment-size 33: this model cannot take it: chunk_size 32768 gives 33 STFT frames, not divisible by scale\[0\]\^num_scales = 4 /m,
  );
  usage(
    split('--model', ROFORMER as string, '--mdxc-segment-size', '3'),
    /^stemsplit: model bs_roformer_vocals \(.*\) could not be loaded: --mdxc-segment-size 3: this model cannot take it: a chunk of 882 samples \(hop 441 × 2\) is too short for its STFT's padding of n_fft \/ 2 = 1024$/m,
  );
  usage(split('--model', ROFORMER as string, '--mdxc-segment-size', '1'), /^stemsplit: --mdxc-segment-size must be a whole number from 2 to 4096, got "1"$/m);
  usage(
    split('--model', MDX as string, '--mdxc-segment-size', '64'),
    /^stemsplit: --mdxc-segment-size applies to MSST checkpoints \(\.ckpt, \.pth\); mdx_a_nfft6144_vocals \(mdx\) is not one$/m,
  );
  // python-audio-separator's override switch alone takes its default segment size, 256.
  assert.deepEqual(familyById('msst').options({ mdxcOverrideModelSegmentSize: true }), { segmentSize: 256, overrideSegmentSize: true });
});

/** `split` of the clip with `flags`, the stems it wrote (planar) by name. */
function stemsOf(split: ReturnType<typeof clipSplitter>, model: string, names: readonly string[], ...flags: string[]): Record<string, Float32Array> {
  const out = join(tempDir(), 'out');
  const run = split('--model', model, '-o', out, ...flags);
  assert.equal(run.status, 0, run.stderr);
  return Object.fromEntries(names.map((name) => [name, planar(readFloatWav(join(out, 'clip', `${name}.wav`)))]));
}

test('invert-spect for MDX-Net and VR: the primary as before, the secondary the spectral inversion of the mix and the primary (× compensate for MDX-Net), not what the model made', {
  skip: NO_UVR,
}, async () => {
  const cacheDir = tempDir();
  const track = clip();
  const scale = peak(track.data);
  // Under audio-separator's 0.9 normalisation threshold, so the mix MDX-Net inverts against is the track itself.
  assert.ok(scale <= 0.9);
  const split = clipSplitter(tempDir(), track, cacheDir);
  const cases = [
    { model: MDX as string, primary: 'vocals', secondary: 'instrumental', compensate: Math.fround(1.035) },
    { model: VR as string, primary: 'instrumental', secondary: 'vocals', compensate: 1 },
  ];
  for (const { model, primary, secondary, compensate } of cases) {
    const plain = stemsOf(split, model, [primary, secondary]);
    const spectral = stemsOf(split, model, [primary, secondary], '--invert_spect');
    assert.deepEqual(spectral[primary], plain[primary], `${model}: the primary is unchanged`);
    const against = (plain[primary] as Float32Array).map((value) => Math.fround(value * compensate));
    const want = await inverted(track, against);
    assert.ok(largestDifference(spectral[secondary] as Float32Array, want) < 1e-5 * scale, `${model}: the secondary is the spectral inversion`);
    assert.ok(largestDifference(spectral[secondary] as Float32Array, plain[secondary] as Float32Array) > 1e-4 * scale, `${model}: and not the model's own`);
  }
});

test('invert-spect with --two-stems X on a multi-stem MSST model: X as the model makes it, no_X the spectral inversion of the mix and X (UVR); alone it is one usage line; through the API too', {
  skip: NO_MSST,
}, async () => {
  const cacheDir = tempDir();
  const track = clip();
  const scale = peak(track.data);
  const split = clipSplitter(tempDir(), track, cacheDir);
  const plain = stemsOf(split, SCNET_4 as string, ['vocals', 'drums', 'bass', 'other']);
  const pair = stemsOf(split, SCNET_4 as string, ['vocals', 'no_vocals'], '--two-stems', 'vocals', '--invert-spect');
  assert.deepEqual(pair['vocals'], plain['vocals']);
  const want = await inverted(track, plain['vocals'] as Float32Array);
  assert.ok(largestDifference(pair['no_vocals'] as Float32Array, want) < 1e-5 * scale, 'no_vocals is the spectral inversion of the mix and the vocals');
  const sum = (plain['drums'] as Float32Array).map((value, i) => value + (plain['bass']?.[i] as number) + (plain['other']?.[i] as number));
  assert.ok(largestDifference(pair['no_vocals'] as Float32Array, sum) > 1e-4 * scale, 'and not the sum of the other stems');
  // Refused once the model is loaded (its stems are known then), before the track is read.
  const alone = split('--model', SCNET_4 as string, '-o', join(tempDir(), 'out'), '--invert-spect');
  assert.equal(alone.status, 2, alone.stderr);
  assert.deepEqual(alone.stderr.trim().split('\n').slice(1), [
    'stemsplit: --invert-spect: scnet_4stem writes drums, bass, other, vocals and no secondary stem; give --two-stems STEM for no_STEM by spectral inversion of the mix and STEM (alone, not in an ensemble)',
  ]);

  const dataDir = tempDir();
  const added = runCli(['--data-dir', dataDir, 'models', 'add', SCNET_4 as string, '--terms', 'MIT (a test fixture)']);
  assert.equal(added.status, 0, added.stderr);
  const t = await startTestServer({ dataDir });
  try {
    const song = join(dataDir, 'clip.wav');
    writeFloatWav(song, interleave(track));
    const post = async (body: Record<string, unknown>) => {
      const input = await uploadFile(t, readFileSync(song));
      return t.request('POST', '/audio/splits', { body: { input, model: 'scnet_4stem', ...body } });
    };
    const refused = await post({ modelOptions: { mdxcSegmentSize: 4097 } });
    assert.equal(refused.status, 422, JSON.stringify(refused.json));
    assert.match(refused.json.error.message as string, /^modelOptions\.mdxcSegmentSize must be a whole number from 2 to 4096, got "4097"$/);
    const made = await post({ twoStems: 'vocals', modelOptions: { invertSpect: true, mdxcSegmentSize: 64 } });
    assert.equal(made.status, 200, JSON.stringify(made.json));
    const done = (await waitForSplit(t, made.json.data.id)).json.data;
    assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
    assert.deepEqual(Object.keys(done.stems).sort(), ['no_vocals', 'vocals']);
    assert.deepEqual(done.modelOptions, { invertSpect: true, mdxcSegmentSize: 64 });
  } finally {
    await t.close();
  }
});
