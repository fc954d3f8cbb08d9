/**
 * RoFormer checkpoints used as a user would: `split --model X.ckpt` (config beside it, or
 * --model-config), and a server whose `4s` is a pulled 4-stem RoFormer, end to end. The
 * checkpoints are the random-weight fixtures of ../shared/fixtures/roformer: they separate
 * nothing, so the tests check the plumbing and that a single-target model's two stems add
 * back up to the mixture.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { resolveFfmpegPath } from '../src/audio/index.js';
import { catalogModel } from '../src/models/catalog.js';
import { modelDir } from '../src/models/registry.js';
import { writeSong } from './support/audio.js';
import { fixtureDir } from './support/fixtures.js';
import { runCli } from './support/process.js';
import { startTestServer, tempDir, uploadFile, waitForSplit } from './support/server.js';

const FIXTURES = fixtureDir('roformer');
const work = tempDir('stemsplit-roformer-use-');
after(() => spawnSync('rm', ['-rf', work]));

function decodeStereo(path: string): Float32Array {
  const result = spawnSync(resolveFfmpegPath(), ['-loglevel', 'error', '-i', path, '-f', 'f32le', '-ac', '2', '-'], { maxBuffer: 1 << 28 });
  assert.equal(result.status, 0, String(result.stderr));
  return new Float32Array(result.stdout.buffer, result.stdout.byteOffset, result.stdout.length / 4);
}

describe('RoFormer checkpoints in use', { skip: FIXTURES === undefined ? 'no fixtures' : false }, () => {
  it('split --model X.ckpt writes the target and no_<target>, which add back up to the song', () => {
    const dir = join(work, 'cli');
    mkdirSync(dir, { recursive: true });
    copyFileSync(join(FIXTURES as string, 'bs_roformer_vocals.ckpt'), join(dir, 'voc.ckpt'));
    copyFileSync(join(FIXTURES as string, 'bs_roformer_vocals.yaml'), join(dir, 'voc.yaml'));
    const song = join(dir, 'song.wav');
    writeSong(song, 2.5);
    const env = { STEMSPLIT_DATA_DIR: join(dir, 'data'), STEMSPLIT_CACHE_DIR: join(dir, 'cache') };
    const result = runCli(['split', song, '--model', join(dir, 'voc.ckpt'), '-o', join(dir, 'out'), '--format', 'wav', '--float32'], env);
    assert.equal(result.status, 0, result.stderr);
    assert.match(result.stderr, /^Loaded model voc \(terms of its weights: not stated\), on CPU$/m);
    assert.deepEqual(readdirSync(join(dir, 'out', 'song')).sort(), ['no_vocals.wav', 'vocals.wav']);
    const mix = decodeStereo(song);
    const vocals = decodeStereo(join(dir, 'out', 'song', 'vocals.wav'));
    const rest = decodeStereo(join(dir, 'out', 'song', 'no_vocals.wav'));
    assert.equal(vocals.length, mix.length);
    let worst = 0;
    for (let i = 0; i < mix.length; i++) worst = Math.max(worst, Math.abs((vocals[i] as number) + (rest[i] as number) - (mix[i] as number)));
    assert.ok(worst < 1e-4, `vocals + no_vocals differs from the mix by ${worst}`);

    const named = runCli(
      ['split', song, '--model', join(dir, 'voc.ckpt'), '--model-config', join(FIXTURES as string, 'bs_roformer_vocals.yaml'), '-o', join(dir, 'out2')],
      env,
    );
    assert.equal(named.status, 0, named.stderr);
    const missing = runCli(['split', song, '--model', join(dir, 'voc.ckpt'), '--model-config', join(dir, 'nope.yaml')], env);
    assert.equal(missing.status, 12, missing.stderr);
    assert.match(missing.stderr, /cannot read the model config .*nope\.yaml/);
    copyFileSync(join(dir, 'voc.ckpt'), join(dir, 'alone.ckpt'));
    const lonely = runCli(['split', song, '--model', join(dir, 'alone.ckpt')], env);
    assert.equal(lonely.status, 12, lonely.stderr);
    assert.match(lonely.stderr, /no config beside .*alone\.ckpt \(expected alone\.yaml\); name one with --model-config/);
  });

  it('a server whose 4s is a pulled 4-stem RoFormer splits through it and names it', async () => {
    const cacheDir = join(work, 'server-cache');
    const model = catalogModel('bs-roformer-zfturbo-4s');
    assert.ok(model);
    const dir = modelDir(cacheDir, 'msst');
    mkdirSync(dir, { recursive: true });
    copyFileSync(join(FIXTURES as string, 'bs_roformer_4stem.ckpt'), join(dir, model.files[0] as string));
    copyFileSync(join(FIXTURES as string, 'bs_roformer_4stem.yaml'), join(dir, model.files[1] as string));
    const t = await startTestServer({ cacheDir, modelAliases: { '4s': ['bs-roformer-zfturbo-4s', 'bundled-4s'] } });
    try {
      const song = join(work, 'server-song.wav');
      writeSong(song, 2);
      const { readFileSync } = await import('node:fs');
      const input = await uploadFile(t, readFileSync(song));
      const created = await t.request('POST', '/audio/splits', { body: { input, stemModel: '4s' } });
      assert.equal(created.status, 200, created.text);
      const done = (await waitForSplit(t, created.json.data.id)).json.data;
      assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
      assert.equal(done.model, 'bs-roformer-zfturbo-4s');
      assert.deepEqual(Object.keys(done.stems).sort(), ['bass', 'drums', 'other', 'vocals']);
    } finally {
      await t.close();
    }
  });
});
