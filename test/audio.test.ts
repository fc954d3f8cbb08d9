/**
 * Real audio through the real ffmpeg: our WAV writer, MP3/FLAC encoding, decoding of
 * every input format the service accepts, resampling, channel handling and probing.
 *
 * @tier quick
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { isStemsplitError } from '../src/errors.js';
import { decodeInterleaved, decodeToPlanar, encodeStem, probeDurationSeconds, resolveFfmpegPath } from '../src/audio/index.js';
import { PlanarBuilder } from '../src/audio/decode.js';
import { paddingPatch } from '../src/audio/mp3-tag.js';

const run = promisify(execFile);
const ffmpeg = resolveFfmpegPath();
const RATE = 44_100;
const LENGTH = 3 * RATE + 311; // not a multiple of any codec's frame size

/** 3 s of stereo: different sines per channel plus a little noise, peaks well below full scale. */
function testSignal(length: number): Float32Array {
  let state = 7;
  const noise = (): number => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state / 2147483648 - 0.5;
  };
  const data = new Float32Array(2 * length);
  for (let t = 0; t < length; t++) {
    data[t] = 0.5 * Math.sin((2 * Math.PI * 440 * t) / RATE) + 0.05 * noise();
    data[length + t] = 0.4 * Math.sin((2 * Math.PI * 660 * t) / RATE + 1) + 0.05 * noise();
  }
  return data;
}

/** Normalised cross-correlation at zero lag over the first `length` samples of each channel. */
function correlation(a: Float32Array, aLength: number, b: Float32Array, bLength: number, length: number): number {
  let dot = 0;
  let ea = 0;
  let eb = 0;
  for (let c = 0; c < 2; c++) {
    for (let t = 0; t < length; t++) {
      const x = a[c * aLength + t]!;
      const y = b[c * bLength + t]!;
      dot += x * y;
      ea += x * x;
      eb += y * y;
    }
  }
  return dot / Math.sqrt(ea * eb);
}

describe('audio through ffmpeg', () => {
  let dir = '';
  const signal = testSignal(LENGTH);
  const file = (name: string): string => path.join(dir, name);

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'stemsplit-audio-'));
    await encodeStem(signal, LENGTH, file('source.wav'), { format: 'wav', float32: true });
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('the bundled or system ffmpeg has the codecs stemsplit needs', async () => {
    const { stdout: encoders } = await run(ffmpeg, ['-hide_banner', '-encoders']);
    for (const codec of ['libmp3lame', 'flac']) assert.match(encoders, new RegExp(`\\b${codec}\\b`));
    const { stdout: decoders } = await run(ffmpeg, ['-hide_banner', '-decoders']);
    for (const codec of ['mp3', 'aac', 'flac', 'opus', 'vorbis']) assert.match(decoders, new RegExp(`\\b${codec}\\b`));
  });

  it('a 32-bit float WAV we write decodes bit-exactly', async () => {
    const decoded = await decodeToPlanar(file('source.wav'));
    assert.equal(decoded.sampleRate, RATE);
    assert.equal(decoded.length, LENGTH);
    assert.deepEqual(decoded.data, signal);
  });

  it('a 16-bit WAV we write decodes to within one quantisation step', async () => {
    await encodeStem(signal, LENGTH, file('pcm16.wav'), { format: 'wav' });
    const decoded = await decodeToPlanar(file('pcm16.wav'));
    assert.equal(decoded.length, LENGTH);
    let worst = 0;
    for (let i = 0; i < 2 * LENGTH; i++) worst = Math.max(worst, Math.abs(decoded.data[i]! - signal[i]!));
    assert.ok(worst <= 0.5 / 32768, `max error ${worst}`);
  });

  for (const format of ['mp3', 'flac'] as const) {
    it(`${format}: encoded stems decode to exactly the source length and the same content`, async () => {
      await encodeStem(signal, LENGTH, file(`stem.${format}`), { format });
      const decoded = await decodeToPlanar(file(`stem.${format}`));
      assert.equal(decoded.length, LENGTH, 'encoder delay and padding must be trimmed');
      assert.ok(correlation(signal, LENGTH, decoded.data, decoded.length, LENGTH) > 0.999);
      await assert.rejects(readFile(file(`stem.${format}.partial`)), { code: 'ENOENT' });
    });
  }

  it('mp3 stems decode to their exact length just past a frame boundary too (LAME tag padding corrected)', async () => {
    for (const length of [1, 1152 * 9 + 1, 1152 * 9 + 23, 1152 * 9 + 46, 1152 * 9 + 47]) {
      const stem = testSignal(length);
      await encodeStem(stem, length, file('edge.mp3'), { format: 'mp3', bitrateKbps: 192 });
      const decoded = await decodeToPlanar(file('edge.mp3'));
      assert.equal(decoded.length, length);
    }
    assert.equal(paddingPatch(Buffer.from('not an mp3 at all, just some text'.repeat(20)), 100), undefined);
  });

  it('mp3 bitrate is constant and as asked', async () => {
    await encodeStem(signal, LENGTH, file('128.mp3'), { format: 'mp3', bitrateKbps: 128 });
    const { stderr } = await run(ffmpeg, ['-hide_banner', '-i', file('128.mp3')]).catch((e: { stderr: string }) => e);
    assert.match(stderr, /Audio: mp3, 44100 Hz, stereo, \w+, 128 kb\/s/);
  });

  it('mono input is copied to both channels at its own level', async () => {
    await run(ffmpeg, ['-v', 'error', '-i', file('source.wav'), '-af', 'pan=mono|c0=c0', '-c:a', 'pcm_f32le', file('mono.wav')]);
    const decoded = await decodeToPlanar(file('mono.wav'));
    assert.equal(decoded.length, LENGTH);
    for (let t = 0; t < LENGTH; t++) {
      assert.equal(decoded.data[t], signal[t]);
      assert.equal(decoded.data[LENGTH + t], signal[t]);
    }
  });

  it('22.05 kHz input is resampled to 44.1 kHz', async () => {
    await run(ffmpeg, ['-v', 'error', '-i', file('source.wav'), '-ar', '22050', '-c:a', 'pcm_s16le', file('22k.wav')]);
    const decoded = await decodeToPlanar(file('22k.wav'));
    assert.equal(decoded.sampleRate, RATE);
    assert.ok(Math.abs(decoded.length - LENGTH) <= 2, `length ${decoded.length}`);
    assert.ok(correlation(signal, LENGTH, decoded.data, decoded.length, LENGTH - 2) > 0.99);
  });

  for (const [name, codecArgs, tolerance] of [
    ['m4a', ['-c:a', 'aac', '-b:a', '192k'], 0.05],
    ['webm', ['-c:a', 'libopus', '-b:a', '128k'], 0.03],
    ['ogg', ['-c:a', 'libvorbis', '-q:a', '5'], 0.03],
  ] as const) {
    it(`decodes ${name} and probes its duration`, async () => {
      await run(ffmpeg, ['-v', 'error', '-i', file('source.wav'), ...codecArgs, file(`lossy.${name}`)]);
      const decoded = await decodeToPlanar(file(`lossy.${name}`));
      assert.ok(Math.abs(decoded.length / RATE - LENGTH / RATE) < tolerance, `decoded ${decoded.length / RATE} s`);
      assert.ok(Math.abs((await probeDurationSeconds(file(`lossy.${name}`))) - LENGTH / RATE) < tolerance);
    });
  }

  it('probes WAV, CBR MP3 and a header-less VBR MP3 accurately', async () => {
    const seconds = LENGTH / RATE;
    assert.ok(Math.abs((await probeDurationSeconds(file('source.wav'))) - seconds) < 0.01);
    assert.ok(Math.abs((await probeDurationSeconds(file('stem.mp3'))) - seconds) < 0.01);
    // Loud then near-silent: the bitrate varies, and without a Xing frame the header estimate is wrong.
    await run(ffmpeg, [
      '-v',
      'error',
      '-i',
      file('source.wav'),
      '-af',
      "volume=enable='gt(t,1)':volume=0.001",
      '-c:a',
      'libmp3lame',
      '-q:a',
      '2',
      '-write_xing',
      '0',
      file('vbr.mp3'),
    ]);
    const probed = await probeDurationSeconds(file('vbr.mp3'));
    // Without the LAME header the decoder cannot trim the 1105-sample priming delay.
    assert.ok(Math.abs(probed - seconds) < 0.06, `probed ${probed} s for ${seconds} s`);
    // Decoding it outgrows the buffer sized from the lying header, and still gets every sample.
    const decoded = await decodeToPlanar(file('vbr.mp3'));
    assert.ok(Math.abs(decoded.length / RATE - probed) < 0.001, `decoded ${decoded.length / RATE} s, probed ${probed} s`);
  });

  it('streams interleaved chunks of whole frames', async () => {
    let frames = 0;
    for await (const chunk of decodeInterleaved(file('stem.flac'))) {
      assert.equal(chunk.length % 2, 0);
      frames += chunk.length / 2;
    }
    assert.equal(frames, LENGTH);
  });

  it('reports encode progress as the share of the stem fed to ffmpeg, rising to 1', async () => {
    const seen: number[] = [];
    await encodeStem(signal, LENGTH, file('progress.mp3'), { format: 'mp3', onProgress: (fraction) => seen.push(fraction) });
    assert.ok(seen.length >= 2, `several reports for ${LENGTH} frames: ${seen.join(', ')}`);
    assert.ok(
      seen.every((f, i) => f > 0 && (i === 0 || f > (seen[i - 1] as number))),
      seen.join(', '),
    );
    assert.equal(seen.at(-1), 1);
  });

  it('reports decode progress up to the full length', async () => {
    const seen: number[] = [];
    await decodeToPlanar(file('stem.flac'), { onProgress: (p) => seen.push(p.decodedSeconds) });
    assert.ok(seen.length > 0);
    assert.ok(Math.abs(seen.at(-1)! - LENGTH / RATE) < 1e-9);
  });

  it('undecodable, missing and audio-less inputs fail with AUDIO_DECODE_FAILED', async () => {
    await writeFile(file('notes.txt'), 'these are not the samples you are looking for\n'.repeat(50));
    await run(ffmpeg, ['-v', 'error', '-f', 'lavfi', '-i', 'color=c=black:s=32x32:d=0.2', '-c:v', 'mpeg4', file('silent-film.mkv')]);
    for (const input of ['notes.txt', 'missing.mp3', 'silent-film.mkv']) {
      for (const attempt of [() => decodeToPlanar(file(input)), () => probeDurationSeconds(file(input))]) {
        await assert.rejects(attempt(), (error) => {
          assert.ok(isStemsplitError(error) && error.code === 'AUDIO_DECODE_FAILED', String(error));
          assert.ok(!error.message.includes('\n') && error.message.includes(input), error.message);
          return true;
        });
      }
    }
  });
});

describe('resolveFfmpegPath', () => {
  it('prefers STEMSPLIT_FFMPEG, then ffmpeg on PATH, then the bundled binary', async () => {
    assert.equal(resolveFfmpegPath({ STEMSPLIT_FFMPEG: '/opt/ff/ffmpeg', PATH: '/usr/bin' }), '/opt/ff/ffmpeg');
    const dir = await mkdtemp(path.join(tmpdir(), 'stemsplit-path-'));
    try {
      await writeFile(path.join(dir, 'ffmpeg'), '#!/bin/sh\n', { mode: 0o755 });
      assert.equal(resolveFfmpegPath({ PATH: `/nonexistent${path.delimiter}${dir}` }), path.join(dir, 'ffmpeg'));
      const bundled = resolveFfmpegPath({ PATH: '/nonexistent' });
      assert.match(bundled, /@ffmpeg-installer/);
      const { stdout } = await run(bundled, ['-hide_banner', '-version']);
      assert.match(stdout, /--enable-libmp3lame/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a missing binary fails with one clear line', async () => {
    await assert.rejects(probeDurationSeconds('x.mp3', '/nonexistent/ffmpeg'), /cannot run ffmpeg \(\/nonexistent\/ffmpeg\)/);
  });
});

describe('PlanarBuilder', () => {
  it('de-interleaves into planar order across regrowth and trims to the decoded length', () => {
    const builder = new PlanarBuilder(3);
    const frames = 50;
    for (let start = 0; start < frames; start += 7) {
      const count = Math.min(7, frames - start);
      builder.append(Float32Array.from({ length: 2 * count }, (_, i) => (i % 2 === 0 ? 1 : -1) * (start + Math.floor(i / 2))));
    }
    const planar = builder.finish();
    assert.equal(builder.length, frames);
    assert.deepEqual(Array.from(planar), [...Array.from({ length: frames }, (_, t) => t), ...Array.from({ length: frames }, (_, t) => -t)]);
  });
});
