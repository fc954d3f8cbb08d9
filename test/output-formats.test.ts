/**
 * Outputs (issue 47 item 3): every stem format written by the real CLI and the real API and read
 * back with ffmpeg (codec, rate, channels, length), independently of src/audio; bitrates checked
 * per format and refused for lossless ones; --clip-mode rescale and --normalize measured on a
 * loud input.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { resolveFfmpegPath } from '../src/audio/index.js';
import { decodedSamples, writeSong } from './support/audio.js';
import { runCli } from './support/process.js';
import { startTestServer, tempDir, uploadFile, waitForSplit, type TestServer } from './support/server.js';

const work = tempDir('stemsplit-formats-');
const env = { STEMSPLIT_DATA_DIR: join(work, 'data'), STEMSPLIT_CACHE_DIR: join(work, 'cache') };
const SECONDS = 1;
const song = join(work, 'song.wav');
/** A float WAV far over full scale (peak about 4.5): the stems of it clip unless something stops them. */
const hot = join(work, 'hot.wav');

before(() => {
  writeSong(song, SECONDS);
  const args = [
    '-loglevel',
    'error',
    '-y',
    '-f',
    'lavfi',
    '-i',
    `sine=frequency=220:duration=${SECONDS}:sample_rate=44100`,
    '-f',
    'lavfi',
    '-i',
    `anoisesrc=d=${SECONDS}:a=0.3:r=44100`,
    '-filter_complex',
    '[0][1]amix=inputs=2,volume=30,aformat=channel_layouts=stereo:sample_fmts=flt',
    '-c:a',
    'pcm_f32le',
    hot,
  ];
  const made = spawnSync(resolveFfmpegPath(), args, { encoding: 'utf8' });
  assert.equal(made.status, 0, made.stderr);
  assert.ok(peakOf(hot) > 2, 'the loud input is over full scale');
});
after(() => rmSync(work, { recursive: true, force: true }));

interface Probed {
  readonly codec: string;
  readonly rate: number;
  readonly channels: string;
  readonly detail: string;
}

/** ffmpeg's reading of a file's audio stream: codec, rate, channel layout and the rest of its line. */
function probe(path: string): Probed {
  const result = spawnSync(resolveFfmpegPath(), ['-hide_banner', '-i', path], { encoding: 'utf8' });
  const line = /Stream #0:0.*?Audio: (\w+)[^,]*, (\d+) Hz, (\w+)(.*)/.exec(result.stderr);
  assert.ok(line, result.stderr);
  return { codec: line[1] as string, rate: Number(line[2]), channels: line[3] as string, detail: line[4] as string };
}

/** The largest |sample| of a file, decoded as float by ffmpeg. */
function peakOf(path: string): number {
  const result = spawnSync(resolveFfmpegPath(), ['-loglevel', 'error', '-i', path, '-f', 'f32le', '-'], { maxBuffer: 1 << 30 });
  assert.equal(result.status, 0, result.stderr.toString());
  const samples = new Float32Array(result.stdout.buffer, result.stdout.byteOffset, result.stdout.length / 4);
  let peak = 0;
  for (const sample of samples) peak = Math.max(peak, Math.abs(sample));
  return peak;
}

/**
 * The stem lasts as long as the song, within 10 ms (a codec's priming is trimmed by its container);
 * AAC and Vorbis may end up to one codec frame late (`padding`), ffmpeg's encoders pad their last frame.
 */
function assertSongLength(path: string, padding = 0): void {
  const frames = decodedSamples(path);
  const expected = SECONDS * 44_100;
  assert.ok(frames >= expected - 441 && frames <= expected + 441 + padding, `${path}: ${frames} frames decoded, ${expected} expected`);
}

/** What the formats the CLI tests leave out are read back as through the API: codec, extension, content type, rate, last-frame padding. */
const EXPECTED = {
  ogg: { codec: 'vorbis', extension: 'ogg', contentType: 'audio/ogg', rate: 44_100, padding: 2048 },
  m4a: { codec: 'aac', extension: 'm4a', contentType: 'audio/mp4', rate: 44_100, padding: 1024 },
  aiff: { codec: 'pcm_s16be', extension: 'aiff', contentType: 'audio/aiff', rate: 44_100, padding: 0 },
} as const;

describe('stemsplit split writes the new formats', () => {
  it("--format opus --bitrate 96: Opus at 48 kHz (the rate Opus holds), stereo, the song's length", () => {
    const out = join(work, 'cli-opus');
    const result = runCli(['split', song, '--format', 'opus', '--bitrate', '96', '--single-stem', 'vocals', '-o', out], env);
    assert.equal(result.status, 0, result.stderr);
    const stem = join(out, 'song', 'vocals.opus');
    const probed = probe(stem);
    assert.deepEqual([probed.codec, probed.rate, probed.channels], ['opus', 48_000, 'stereo']);
    assertSongLength(stem);
  });

  it('--format alac --int24: 24-bit Apple Lossless in .m4a', () => {
    const out = join(work, 'cli-alac');
    const result = runCli(['split', song, '--format', 'ALAC', '--int24', '--single-stem', 'drums', '-o', out], env);
    assert.equal(result.status, 0, result.stderr);
    const stem = join(out, 'song', 'drums.m4a');
    const probed = probe(stem);
    assert.deepEqual([probed.codec, probed.rate, probed.channels], ['alac', 44_100, 'stereo']);
    assert.match(probed.detail, /24 bit/);
    assertSongLength(stem);
  });

  it('refuses a bitrate for a lossless format, one out of range, and unknown formats and modes, exit 2, before any model loads', () => {
    const cases: Array<[string[], RegExp]> = [
      // python-audio-separator's spellings: --output_format FLAC --output_bitrate 320k.
      [['--output_format', 'FLAC', '--output_bitrate', '320k'], /--bitrate applies to lossy formats \(mp3, ogg, opus, m4a\); flac is lossless/],
      [['--format', 'opus', '--bitrate', '600k'], /--bitrate for opus must be a whole number of kb\/s from 6 to 512, got 600/],
      [['--format', 'wma'], /--format must be mp3, wav, flac, ogg, opus, m4a, aiff, alac, got "wma"/],
      [['--clip-mode', 'soft'], /--clip-mode must be rescale, clamp, none, got "soft"/],
    ];
    for (const [flags, message] of cases) {
      const result = runCli(['split', song, ...flags, '-o', join(work, 'refused')], env);
      assert.equal(result.status, 2, `${flags.join(' ')}: ${result.stderr}`);
      assert.match(result.stderr, message);
      assert.equal(result.stderr.trim().split('\n').length, 1, 'one line');
    }
  });
});

describe('the API writes the new formats and levels', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer();
  });
  after(() => t.close());

  /** Runs a split of `source` (an upload is used once) and returns it once it succeeded. */
  async function split(body: Record<string, unknown>, source = song): Promise<{ stems: Record<string, string>; [field: string]: unknown }> {
    const input = await uploadFile(t, readFileSync(source), 'song.wav');
    const created = await t.request('POST', '/audio/splits', { body: { input, stemModel: '4s', ...body } });
    assert.equal(created.status, 200, created.text);
    const done = (await waitForSplit(t, created.json.data.id)).json.data;
    assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
    return done;
  }

  /** GETs a stem URL, checks its content type, and keeps it as `name`. */
  async function download(url: string, contentType: string, name: string): Promise<string> {
    const response = await fetch(url);
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('content-type'), contentType);
    const path = join(work, name);
    writeFileSync(path, Buffer.from(await response.arrayBuffer()));
    return path;
  }

  for (const [format, expected] of Object.entries(EXPECTED)) {
    it(`outputFormat ${format}: ${expected.codec} in .${expected.extension}, served as ${expected.contentType}`, async () => {
      const lossy = format !== 'aiff';
      const done = await split({ outputFormat: format, ...(lossy ? { bitrateKbps: 128 } : {}) });
      assert.equal(done['outputFormat'], format);
      assert.equal(done['bitrateKbps'], lossy ? 128 : null);
      const url = done.stems['vocals'] as string;
      assert.match(new URL(url).pathname, new RegExp(`/vocals\\.${expected.extension}$`));
      const stem = await download(url, expected.contentType, `api-vocals-${format}.${expected.extension}`);
      const probed = probe(stem);
      assert.deepEqual([probed.codec, probed.rate, probed.channels], [expected.codec, expected.rate, 'stereo']);
      assertSongLength(stem, expected.padding);
    });
  }

  it('refuses bitrateKbps for a lossless format or out of range, and an unknown format, as VALIDATION_ERROR', async () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ outputFormat: 'flac', bitrateKbps: 128 }, /bitrateKbps applies to lossy formats .*flac is lossless/],
      [{ outputFormat: 'm4a', bitrateKbps: 1000 }, /bitrateKbps for m4a must be a whole number of kb\/s from 32 to 512/],
      [{ outputFormat: 'opus', bitrateKbps: 600 }, /bitrateKbps for opus must be a whole number of kb\/s from 6 to 512, got 600/],
      [{ outputFormat: 'wma' }, /outputFormat/],
      [{ outputFormat: 'ogg', bitDepth: 24 }, /bitDepth applies to outputFormat wav, flac, aiff, alac/],
      [{ clipMode: 'soft' }, /clipMode/],
      [{ normalize: 2 }, /normalize/],
    ];
    const input = await uploadFile(t, readFileSync(song));
    for (const [body, message] of cases) {
      const response = await t.request('POST', '/audio/splits', { body: { input, ...body } });
      assert.equal(response.status, 422, `${JSON.stringify(body)}: ${response.text}`);
      assert.equal(response.json.error.code, 'VALIDATION_ERROR');
      assert.match(response.json.error.message, message);
    }
  });

  it("clipMode rescale keeps a loud input's stems at or under full scale; normalize scales the loud ones to its peak", async () => {
    const loud = hot;
    const plain = await split({ outputFormat: 'wav', bitDepth: 32 }, loud);
    const plainPeaks = await peaks(plain.stems, 'plain');
    const loudest = Math.max(...Object.values(plainPeaks));
    assert.ok(loudest > 1.01, `a stem of the loud input clips unless told (peak ${loudest})`);

    const rescaled = await split({ outputFormat: 'wav', bitDepth: 32, clipMode: 'rescale' }, loud);
    assert.equal(rescaled['clipMode'], 'rescale');
    for (const [stem, peak] of Object.entries(await peaks(rescaled.stems, 'rescaled'))) {
      const before = plainPeaks[stem] as number;
      // demucs: wav / max(1.01 * peak, 1).
      const expected = before / Math.max(1.01 * before, 1);
      assert.ok(peak <= 1, `${stem}: ${peak}`);
      assert.ok(Math.abs(peak - expected) < 1e-4, `${stem}: ${peak}, expected ${expected}`);
    }

    const normalized = await split({ outputFormat: 'wav', bitDepth: 32, normalize: 0.5 }, loud);
    assert.equal(normalized['normalize'], 0.5);
    for (const [stem, peak] of Object.entries(await peaks(normalized.stems, 'normalized'))) {
      const before = plainPeaks[stem] as number;
      const expected = Math.min(before, 0.5);
      assert.ok(Math.abs(peak - expected) < 1e-4, `${stem}: ${peak}, expected ${expected} (was ${before})`);
    }
  });

  /** Each stem's peak, downloaded. */
  async function peaks(stems: Record<string, string>, label: string): Promise<Record<string, number>> {
    const measured: Record<string, number> = {};
    for (const [stem, url] of Object.entries(stems)) measured[stem] = peakOf(await download(url, 'audio/wav', `${label}-${stem}.wav`));
    return measured;
  }
});
