/**
 * Throughput of the stem pipeline's stages on a 3-minute track: decode (MP3 → planar
 * float32), separation with a bundled model, MP3 encode of every stem. Prints seconds of
 * work per minute of audio (lower is better) and the realtime factor.
 *
 *   node --import tsx scripts/bench/pipeline.ts [--input FILE] [--model bundled-4s] [--threads N] [--seconds 180] [--precision fp32|int8]
 *
 * `--precision int8` loads the model as `split --precision int8` does (its learned convolutions in int8).
 *
 * Without --input it synthesises a song-like track (bass line, chords, noise hi-hats,
 * a panned lead) and encodes it to MP3 first, so decode measures real MP3 decoding.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { decodeToPlanar, encodeStem } from '../../src/audio/index.js';
import { loadManifestModel } from '../../src/bundled/manifest.js';
import { separate } from '../../src/separation/index.js';
import { parsePrecision } from '../../src/onnx/quantize.js';
import { synthesiseSong } from '../../test/support/audio.js';

const { values } = parseArgs({
  options: {
    input: { type: 'string' },
    model: { type: 'string', default: 'bundled-4s' },
    threads: { type: 'string', default: '1' },
    seconds: { type: 'string', default: '180' },
    precision: { type: 'string', default: 'fp32' },
  },
});

const RATE = 44_100;
const precision = parsePrecision(values.precision);

async function timed<T>(work: () => Promise<T>): Promise<[T, number]> {
  const start = performance.now();
  const result = await work();
  return [result, (performance.now() - start) / 1000];
}

const dir = await mkdtemp(path.join(tmpdir(), 'stemsplit-bench-'));
try {
  let input = values.input;
  if (input === undefined) {
    const seconds = Number(values.seconds);
    input = path.join(dir, 'song.mp3');
    await encodeStem(synthesiseSong(seconds), Math.round(seconds * RATE), input, { format: 'mp3' });
  }
  const [audio, decodeSeconds] = await timed(() => decodeToPlanar(input));
  const minutes = audio.length / RATE / 60;

  const model = await loadManifestModel(path.join('models', values.model, 'model.json'), { intraOpThreads: Number(values.threads), precision });
  const [stems, separateSeconds] = await timed(() => separate(model, audio));
  await model.dispose();

  const [, encodeSeconds] = await timed(async () => {
    for (const [i, stem] of stems.entries()) await encodeStem(stem, audio.length, path.join(dir, `${i}.mp3`), { format: 'mp3' });
  });

  const rows: [string, number, number][] = [
    ['decode (mp3 → f32)', decodeSeconds, 1],
    [`separate (${values.model} ${precision}, ${values.threads} thread)`, separateSeconds, 1],
    [`encode (${stems.length} stems, mp3 320k)`, encodeSeconds, stems.length],
  ];
  console.log(`audio: ${(minutes * 60).toFixed(1)} s; peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB`);
  console.log('stage                                 s/min audio   × realtime   (per stem)');
  for (const [stage, seconds, count] of rows) {
    const perMinute = seconds / minutes;
    const perStem = count > 1 ? `${(perMinute / count).toFixed(3)} s/min` : '';
    console.log(`${stage.padEnd(38)}${perMinute.toFixed(3).padStart(11)}${(60 / perMinute).toFixed(1).padStart(13)}   ${perStem}`);
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
