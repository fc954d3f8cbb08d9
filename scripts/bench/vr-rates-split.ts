/**
 * `stemsplit split` against python-audio-separator's own VR inference for the params not at
 * 44.1 kHz, on the outputs scripts/bench/vr_official_rates.py writes (run outside the project):
 *
 *   python3 scripts/bench/vr_official_rates.py ASEP_ROOT ../shared/fixtures/vr /tmp/vr-rates
 *   node --import tsx scripts/bench/vr-rates-split.ts /tmp/vr-rates [WORK_DIR]
 *
 * Prints per params file each stem's SNR over the official stem's M samples, the stems' length
 * and whether they are silent after M (stemsplit's stems have the track's length).
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { decodePlanar, readF32, snrDb } from '../../test/support/reference-audio.js';

interface Entry {
  readonly params: string;
  readonly shape: readonly [number, number, number];
  readonly options: Record<string, unknown>;
  readonly stems: readonly string[];
}

const reference = process.argv[2];
if (reference === undefined) throw new Error('usage: vr-rates-split.ts REFERENCE_DIR [WORK_DIR]');
const work = process.argv[3] ?? mkdtempSync(path.join(tmpdir(), 'vr-rates-'));
const cli = fileURLToPath(new URL('../../src/cli/run.ts', import.meta.url));
const manifest = JSON.parse(readFileSync(path.join(reference, 'manifest.json'), 'utf8')) as Record<string, Entry>;
for (const [name, entry] of Object.entries(manifest)) {
  const dir = path.join(work, name);
  mkdirSync(dir, { recursive: true });
  for (const ext of ['pth', 'json']) copyFileSync(path.join(reference, `${name}.${ext}`), path.join(dir, `${name}.${ext}`));
  const out = path.join(dir, 'out');
  const flags = entry.options['high_end_process'] === true ? ['--vr-high-end-process'] : [];
  const started = performance.now();
  const args = [
    '--import',
    'tsx',
    cli,
    'split',
    path.join(reference, 'song.wav'),
    '--model',
    path.join(dir, `${name}.pth`),
    ...flags,
    '--format',
    'wav',
    '--float32',
    '-o',
    out,
  ];
  const result = spawnSync(process.execPath, args, {
    encoding: 'utf8',
    env: { ...process.env, STEMSPLIT_DATA_DIR: path.join(dir, 'data'), STEMSPLIT_CACHE_DIR: path.join(dir, 'cache') },
  });
  if (result.status !== 0) {
    console.log(`${entry.params}: split failed\n${result.stderr}`);
    continue;
  }
  const official = readF32(path.join(reference, `${name}.out.f32`));
  const [, channels, m] = entry.shape;
  const figures = entry.stems.map((stem, s) => {
    const decoded = decodePlanar(path.join(out, 'song', `${stem.toLowerCase().replace(/\s+/g, '_')}.wav`), channels);
    const length = decoded.length / channels;
    const head = new Float32Array(channels * m);
    let silentAfter = true;
    for (let c = 0; c < channels; c++) {
      head.set(decoded.subarray(c * length, c * length + m), c * m);
      silentAfter &&= decoded.subarray(c * length + m, (c + 1) * length).every((v) => v === 0);
    }
    return (
      `${stem} ${snrDb(official.subarray(s * channels * m, (s + 1) * channels * m), head).toFixed(1)} dB` +
      ` (${length} samples, official ${m}, silent after: ${silentAfter})`
    );
  });
  console.log(`${entry.params}${flags.length > 0 ? ' (high_end_process)' : ''}: ${figures.join('; ')}; ${((performance.now() - started) / 1000).toFixed(1)} s`);
}
