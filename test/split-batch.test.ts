/**
 * `stemsplit split` with several files, as a user runs it on a folder: an unreadable file is
 * refused up front and the others are still split (and `--json` lists it too); same-named tracks
 * get their own folders; --two-stems writes a stem and the sum of the rest, which add back up to
 * the song; what a SIGKILLed run left half-written is cleared by the next run.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { resolveFfmpegPath } from '../src/audio/index.js';
import { outputFolders } from '../src/cli/filename-template.js';
import { writeSong } from './support/audio.js';
import { runCli, spawnCli } from './support/process.js';
import { until } from './support/wait.js';
import { tempDir } from './support/server.js';

const work = tempDir('stemsplit-batch-');
after(() => rmSync(work, { recursive: true, force: true }));
const env = { STEMSPLIT_DATA_DIR: join(work, 'data'), STEMSPLIT_CACHE_DIR: join(work, 'cache') };

function decode(path: string): Float32Array {
  const result = spawnSync(resolveFfmpegPath(), ['-loglevel', 'error', '-i', path, '-f', 'f32le', '-ac', '2', '-'], { maxBuffer: 1 << 28 });
  assert.equal(result.status, 0, String(result.stderr));
  return new Float32Array(result.stdout.buffer, result.stdout.byteOffset, result.stdout.length / 4);
}

describe('split batches', () => {
  it('refuses an unreadable file up front, splits the others and exits non-zero with a summary', () => {
    const dir = join(work, 'batch');
    mkdirSync(dir);
    writeSong(join(dir, 'a.wav'), 1.5);
    writeFileSync(join(dir, 'notes.txt'), 'these are not sounds\n');
    writeSong(join(dir, 'b.wav'), 1.5);
    const result = runCli(['split', join(dir, 'a.wav'), join(dir, 'notes.txt'), join(dir, 'b.wav'), '-o', join(dir, 'out'), '--json'], env);
    assert.equal(result.status, 8, `a batch whose failures are all unreadable files exits with the decode code: ${result.stderr}`);
    assert.deepEqual(readdirSync(join(dir, 'out')).sort(), ['a', 'b']);
    const listed = JSON.parse(result.stdout) as { input: string; stems?: Record<string, string>; error?: { code: string; message: string } }[];
    assert.deepEqual(
      listed.map((entry) => [entry.input, entry.stems ? 'split' : entry.error?.code]),
      [
        [join(dir, 'a.wav'), 'split'],
        [join(dir, 'notes.txt'), 'AUDIO_DECODE_FAILED'],
        [join(dir, 'b.wav'), 'split'],
      ],
    );
    assert.match(listed[1]?.error?.message ?? '', /notes\.txt is not audio stemsplit can read/);
    const lines = result.stderr.split('\n');
    const refusal = lines.findIndex((line) => /notes\.txt is not audio stemsplit can read/.test(line));
    const loading = lines.findIndex((line) => line.startsWith('Loaded model'));
    assert.ok(refusal >= 0 && refusal < loading, 'the unreadable file is named before any model loads');
    assert.match(result.stderr, /stemsplit: 1 of 3 files failed: notes\.txt$/m);
  });

  it('a folder splits the audio files under it, every level, skipping and counting the others; a mistyped name does not stop the batch', () => {
    const dir = join(work, 'folder');
    mkdirSync(join(dir, 'album', 'disc 2'), { recursive: true });
    writeSong(join(dir, 'album', 'one.wav'), 1);
    writeSong(join(dir, 'album', 'disc 2', 'two.flac'), 1);
    writeFileSync(join(dir, 'album', 'cover.jpg'), 'not a picture either');
    writeFileSync(join(dir, 'album', 'notes.txt'), 'liner notes');
    const missing = join(dir, 'tpyo.wav');
    const result = runCli(['split', join(dir, 'album'), missing, '-o', join(dir, 'out'), '--json'], env);
    assert.equal(result.status, 6, `a batch whose only failure is a missing name exits 6 (no such file): ${result.stderr}`);
    assert.match(result.stderr, new RegExp(`^${join(dir, 'album')}: 2 audio files, 2 other files skipped$`, 'm'));
    assert.match(result.stderr, new RegExp(`^stemsplit: no such file: ${missing}$`, 'm'));
    assert.deepEqual(readdirSync(join(dir, 'out')).sort(), ['one', 'two']);
    const listed = JSON.parse(result.stdout) as { input: string; error?: { code: string } }[];
    assert.deepEqual(
      listed.map((entry) => [entry.input, entry.error?.code ?? 'split']),
      [
        [join(dir, 'album', 'disc 2', 'two.flac'), 'split'],
        [join(dir, 'album', 'one.wav'), 'split'],
        [missing, 'NOT_FOUND'],
      ],
    );
  });

  it('--filename places each stem from {track}, {stem}, {model} and {ext}; same-named tracks still get their own files', () => {
    const dir = join(work, 'template');
    mkdirSync(join(dir, 'x'), { recursive: true });
    mkdirSync(join(dir, 'y'), { recursive: true });
    writeSong(join(dir, 'x', 'song.wav'), 1);
    writeSong(join(dir, 'y', 'song.wav'), 1);
    const out = join(dir, 'out');
    const result = runCli(
      [
        'split',
        join(dir, 'x', 'song.wav'),
        join(dir, 'y', 'song.wav'),
        '-o',
        out,
        '--format',
        'flac',
        '--two-stems',
        'vocals',
        '--filename',
        '{model}/{track} - {stem}.{ext}',
        '--json',
      ],
      env,
    );
    assert.equal(result.status, 0, result.stderr);
    const [model] = readdirSync(out);
    assert.match(model ?? '', /^stemsplit-small-4s$/);
    assert.deepEqual(readdirSync(join(out, model as string)).sort(), ['song - no_vocals.flac', 'song - vocals.flac']);
    assert.deepEqual(readdirSync(join(out, `${model}-2`)).sort(), ['song - no_vocals.flac', 'song - vocals.flac']);
    const flat = runCli(
      ['split', join(dir, 'x', 'song.wav'), join(dir, 'y', 'song.wav'), '-o', join(dir, 'flat'), '--two-stems', 'vocals', '--filename', '{track}_{stem}.{ext}'],
      env,
    );
    assert.equal(flat.status, 0, flat.stderr);
    assert.deepEqual(readdirSync(join(dir, 'flat')).sort(), ['song_no_vocals-2.mp3', 'song_no_vocals.mp3', 'song_vocals-2.mp3', 'song_vocals.mp3']);
    for (const bad of ['{track}/{stem}/x.{ext}', '../{stem}.{ext}', '{track}/{name}.{ext}', '{track}.{ext}']) {
      const refused = runCli(['split', join(dir, 'x', 'song.wav'), '--filename', bad], env);
      assert.equal(refused.status, 2, `${bad}: ${refused.stderr}`);
      assert.match(refused.stderr, /^stemsplit: --filename /);
    }
  });

  it('a lone file that is not audio fails before loading a model, with its own exit code', () => {
    const file = join(work, 'lonely.mp3');
    writeFileSync(file, 'not an mp3');
    const result = runCli(['split', file, '-o', join(work, 'out-lonely')], env);
    assert.equal(result.status, 8, result.stderr);
    assert.doesNotMatch(result.stderr, /Loaded model/);
    assert.match(result.stderr, /lonely\.mp3 is not audio stemsplit can read/);
  });

  it('gives same-named tracks distinct folders, in the order given', () => {
    assert.deepEqual(outputFolders(['x/song.flac', 'y/song.flac', 'z/other.wav', 'w/song.mp3'], '/out'), [
      '/out/song',
      '/out/song-2',
      '/out/other',
      '/out/song-3',
    ]);
    const dir = join(work, 'names');
    mkdirSync(join(dir, 'x'), { recursive: true });
    mkdirSync(join(dir, 'y'), { recursive: true });
    writeSong(join(dir, 'x', 'song.wav'), 1);
    writeSong(join(dir, 'y', 'song.wav'), 1.2);
    const result = runCli(['split', join(dir, 'x', 'song.wav'), join(dir, 'y', 'song.wav'), '-o', join(dir, 'out')], env);
    assert.equal(result.status, 0, result.stderr);
    assert.deepEqual(readdirSync(join(dir, 'out')).sort(), ['song', 'song-2']);
  });

  it('--two-stems Vocals (as UVR names it) writes vocals and no_vocals, which add back up to the song', () => {
    const dir = join(work, 'two');
    mkdirSync(dir);
    const song = join(dir, 'song.wav');
    writeSong(song, 2);
    const result = runCli(['split', song, '--two-stems', 'Vocals', '--format', 'wav', '--float32', '-o', join(dir, 'out')], env);
    assert.equal(result.status, 0, result.stderr);
    assert.deepEqual(readdirSync(join(dir, 'out', 'song')).sort(), ['no_vocals.wav', 'vocals.wav']);
    const mix = decode(song);
    const vocals = decode(join(dir, 'out', 'song', 'vocals.wav'));
    const rest = decode(join(dir, 'out', 'song', 'no_vocals.wav'));
    let worst = 0;
    for (let i = 0; i < mix.length; i++) worst = Math.max(worst, Math.abs((vocals[i] as number) + (rest[i] as number) - (mix[i] as number)));
    // The bundled model's masks sum to one; 16-bit input quantisation and float rounding are all that is left.
    assert.ok(worst < 1e-3, `vocals + no_vocals differs from the song by ${worst}`);
    const wrong = runCli(['split', song, '--two-stems', 'kazoo', '-o', join(dir, 'out2')], env);
    assert.equal(wrong.status, 2);
    assert.match(wrong.stderr, /--two-stems kazoo: stemsplit-small-4s writes no such stem \(it writes drums, bass, other, vocals\)/);
  });
});

describe('signals from another process', () => {
  for (const [signal, code] of [
    ['SIGTERM', 143],
    ['SIGINT', 130],
  ] as const) {
    it(`${signal} mid-separation ends split with exit ${code}, one line and no partial output`, async () => {
      const dir = join(work, `signal-${signal}`);
      mkdirSync(dir);
      writeSong(join(dir, 'long.wav'), 120);
      const out = join(dir, 'out');
      const child = spawnCli(['split', join(dir, 'long.wav'), '-o', out], env);
      let stderr = '';
      child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const exited = new Promise<number | null>((resolve) => child.once('close', (status) => resolve(status)));
      await until(
        () => /\d+% separate/.test(stderr),
        60_000,
        () => `separation never began: ${stderr}`,
      );
      child.kill(signal);
      assert.equal(await exited, code, stderr);
      assert.match(stderr, new RegExp(`\nstemsplit: stopped by ${signal}; nothing was written for long\n$`));
      assert.doesNotMatch(stderr, /terminate called|Napi::Error|core dumped/);
      assert.deepEqual(existsSync(out) ? readdirSync(out) : [], [], 'no stems and no staging folder');
    });
  }
});

describe('a killed run', () => {
  it('leaves a staging folder that the next run on the same output folder removes, finished stems kept', async () => {
    const dir = join(work, 'killed');
    mkdirSync(dir);
    const out = join(dir, 'out');
    writeSong(join(dir, 'done.wav'), 1);
    writeSong(join(dir, 'long.wav'), 120);
    writeSong(join(dir, 'next.wav'), 1);
    assert.equal(runCli(['split', join(dir, 'done.wav'), '-o', out], env).status, 0);
    const finished = readdirSync(join(out, 'done')).sort();
    assert.deepEqual(finished, ['bass.mp3', 'drums.mp3', 'other.mp3', 'vocals.mp3']);

    const child = spawnCli(['split', join(dir, 'long.wav'), '-o', out], env);
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise((resolve) => child.once('close', resolve));
    await until(
      () => /\d+% separate/.test(stderr),
      60_000,
      () => `separation never began: ${stderr}`,
    );
    child.kill('SIGKILL');
    await exited;
    const staging = readdirSync(out).filter((name) => name.startsWith('long.partial-'));
    assert.equal(staging.length, 1, `the killed run left its staging folder: ${readdirSync(out).join(', ')}`);
    assert.ok(
      readdirSync(join(out, staging[0] as string)).some((name) => name.endsWith('.partial')),
      'with half-encoded stems in it',
    );

    const next = runCli(['split', join(dir, 'next.wav'), '-o', out], env);
    assert.equal(next.status, 0, next.stderr);
    assert.match(next.stderr, new RegExp(`removed ${join(out, staging[0] as string).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}, left by an interrupted run`));
    assert.deepEqual(readdirSync(out).sort(), ['done', 'next'], 'the staging folder is gone; no long/ was ever made');
    assert.deepEqual(readdirSync(join(out, 'done')).sort(), finished, 'the finished stems are untouched');
  });
});
