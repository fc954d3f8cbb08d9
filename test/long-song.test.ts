/** The acceptance check: a 3-minute song split through the API yields stems of the source's length. */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { resolveFfmpegPath } from '../src/audio/index.js';
import { decodedSamples } from './support/audio.js';
import { startTestServer, tempDir, uploadFile, waitForSplit } from './support/server.js';
import { spawnSync } from 'node:child_process';

test('a 3-minute MP3 through the API gives 6 MP3 stems, each as long as the source', async () => {
  const dir = tempDir();
  const song = join(dir, 'three-minutes.mp3');
  const made = spawnSync(resolveFfmpegPath(), [
    '-loglevel',
    'error',
    '-y',
    '-f',
    'lavfi',
    '-i',
    'sine=frequency=98:duration=180',
    '-f',
    'lavfi',
    '-i',
    'anoisesrc=d=180:a=0.05',
    '-filter_complex',
    '[0][1]amix=inputs=2,aformat=channel_layouts=stereo',
    '-ar',
    '44100',
    '-b:a',
    '192k',
    song,
  ]);
  assert.equal(made.status, 0, made.stderr.toString());
  const sourceSamples = decodedSamples(song);
  const t = await startTestServer();
  try {
    const input = await uploadFile(t, readFileSync(song), 'three-minutes.mp3', 'audio/mpeg');
    const created = await t.request('POST', '/audio/splits', { body: { input, stemModel: '6s' } });
    assert.equal(created.status, 200, created.text);
    assert.equal(created.json.data.creditsUsed, 180);
    const split = (await waitForSplit(t, created.json.data.id, 600_000)).json.data;
    assert.equal(split.status, 'succeeded', JSON.stringify(split.error));
    assert.equal(Object.keys(split.stems).length, 6);
    for (const [stem, url] of Object.entries(split.stems as Record<string, string>)) {
      const file = join(dir, `${stem}.mp3`);
      writeFileSync(file, Buffer.from(await (await fetch(url)).arrayBuffer()));
      assert.equal(decodedSamples(file), sourceSamples, `${stem} is as long as the source`);
    }
  } finally {
    await t.close();
  }
});
