/**
 * Stems as a studio wants them: the source's rate, depth and channel layout kept (the model runs
 * at 44.1 kHz stereo in between), --int24 / --float32 / --sample-rate to choose, and MP3 at the
 * source's rate where MP3 allows it. Read back with ffmpeg, independently of src/audio.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { resolveFfmpegPath } from '../src/audio/index.js';
import { stemOutput } from '../src/split-worker/split-audio-file.js';
import { runCli } from './support/process.js';
import { tempDir } from './support/server.js';

const work = tempDir('stemsplit-output-');
after(() => rmSync(work, { recursive: true, force: true }));
const env = { STEMSPLIT_DATA_DIR: join(work, 'data'), STEMSPLIT_CACHE_DIR: join(work, 'cache') };

/** A tone and noise at `rate`, `channels`, in `codec` (pcm_s24le, pcm_s16le, flac …). */
function writeSource(path: string, rate: number, channels: 1 | 2, codec: string, extra: string[] = []): void {
  const layout = channels === 1 ? 'mono' : 'stereo';
  const args = [
    '-loglevel',
    'error',
    '-y',
    '-f',
    'lavfi',
    '-i',
    `sine=frequency=220:duration=2:sample_rate=${rate}`,
    '-f',
    'lavfi',
    '-i',
    `anoisesrc=d=2:a=0.05:r=${rate}`,
    '-filter_complex',
    `[0][1]amix=inputs=2,aformat=channel_layouts=${layout}`,
    '-ar',
    String(rate),
    '-c:a',
    codec,
    ...extra,
    path,
  ];
  const result = spawnSync(resolveFfmpegPath(), args, { encoding: 'utf8' });
  assert.equal(result.status, 0, result.stderr);
}

/** ffmpeg's one-line summary of a file's audio stream, e.g. `pcm_s24le (…), 48000 Hz, stereo, s32 (24 bit)`. */
function streamOf(path: string): string {
  const result = spawnSync(resolveFfmpegPath(), ['-hide_banner', '-i', path], { encoding: 'utf8' });
  const line = /Stream #0:0.*Audio: (.*)/.exec(result.stderr);
  assert.ok(line, result.stderr);
  return line[1] as string;
}

describe('stem output format', () => {
  it('a 48 kHz / 24-bit WAV gives 48 kHz / 24-bit WAV stems', () => {
    const dir = join(work, 'hires');
    mkdirSync(dir);
    writeSource(join(dir, 'take.wav'), 48_000, 2, 'pcm_s24le');
    const result = runCli(['split', join(dir, 'take.wav'), '--format', 'wav', '-o', join(dir, 'out')], env);
    assert.equal(result.status, 0, result.stderr);
    const stream = streamOf(join(dir, 'out', 'take', 'vocals.wav'));
    assert.match(stream, /^pcm_s24le/);
    assert.match(stream, /48000 Hz, stereo/);
  });

  it('a mono source gives mono stems; --int24 FLAC and --sample-rate are honoured', () => {
    const dir = join(work, 'mono');
    mkdirSync(dir);
    writeSource(join(dir, 'voice.flac'), 44_100, 1, 'flac', ['-sample_fmt', 's16']);
    const plain = runCli(['split', join(dir, 'voice.flac'), '--format', 'flac', '-o', join(dir, 'out')], env);
    assert.equal(plain.status, 0, plain.stderr);
    assert.match(streamOf(join(dir, 'out', 'voice', 'drums.flac')), /44100 Hz, mono, s16/);
    const forced = runCli(['split', join(dir, 'voice.flac'), '--format', 'flac', '--int24', '--sample-rate', '96000', '-o', join(dir, 'out24')], env);
    assert.equal(forced.status, 0, forced.stderr);
    assert.match(streamOf(join(dir, 'out24', 'voice', 'bass.flac')), /96000 Hz, mono, s32 \(24 bit\)/);
  });

  it('MP3 stems keep the source rate where MP3 allows it, and refuse a rate it cannot hold', () => {
    const dir = join(work, 'mp3');
    mkdirSync(dir);
    writeSource(join(dir, 'take.wav'), 48_000, 2, 'pcm_s16le');
    const result = runCli(['split', join(dir, 'take.wav'), '-o', join(dir, 'out')], env);
    assert.equal(result.status, 0, result.stderr);
    assert.match(streamOf(join(dir, 'out', 'take', 'other.mp3')), /^mp3.*48000 Hz, stereo/);
    const refused = runCli(['split', join(dir, 'take.wav'), '--sample-rate', '96000', '-o', join(dir, 'out2')], env);
    assert.equal(refused.status, 2);
    assert.match(refused.stderr, /MP3 cannot hold 96000 Hz/);
    assert.deepEqual(stemOutput({ sampleRate: 96_000, channels: 2, bitDepth: 24 }, 44_100, { format: 'mp3' }), {
      outputSampleRate: 48_000,
      channels: 2,
      depth: 24,
    });
    assert.deepEqual(stemOutput({ sampleRate: 44_100, channels: 6, bitDepth: 'float' }, 44_100, { format: 'flac' }), {
      outputSampleRate: 44_100,
      channels: 2,
      depth: 24,
    });
    assert.deepEqual(stemOutput({ sampleRate: undefined, channels: 2, bitDepth: undefined }, 44_100, { format: 'wav', bitDepth: 32 }), {
      outputSampleRate: 44_100,
      channels: 2,
      depth: 'float',
    });
  });
});
