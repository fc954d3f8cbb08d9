/**
 * How precise stemsplit is next to the official code, both measured against the exact answer: per family
 * fixture in ../shared/fixtures, the official separation in float32 and `stemsplit split --format wav
 * --float32`, each stem's SNR against the official separation in float64 (the model cast to double,
 * torch's default dtype float64), over every sample of the track. Prints a markdown table (docs/quality.md).
 *
 *   node --import tsx scripts/precision/table.ts --demucs-src /tmp/demucs [--python /usr/bin/python3]
 *        [--threads 1] [--only demucs-calibrated/short,...]
 *
 * The official code runs outside the project: --demucs-src names a checkout of demucs (the folder
 * holding demucs/), run by scripts/precision/demucs_reference.py with Debian's python3-torch; nothing
 * of it is part of stemsplit. Families so far: Demucs v4 (HTDemucs, a bag of them) and v3 (HDemucs).
 * Not yet: Demucs v2 (its resampling needs julius), BS-/Mel-RoFormer, SCNet, MDX23C (MSST's code),
 * VR and MDX-Net (UVR's code).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { runCli } from '../../test/support/process.js';
import { resolveFfmpegPath } from '../../src/audio/ffmpeg.js';
import { wavHeader } from '../../src/audio/wav.js';
import { decodePlanar } from '../../test/support/reference-audio.js';

interface Case {
  /** `family/fixture`, as --only names it. */
  readonly name: string;
  readonly family: string;
  readonly model: string;
  /** A WAV, or a raw planar float32 [2, N] (.f32). */
  readonly input: string;
  readonly sources: readonly string[];
}

const CHANNELS = 2;
const SHARED = path.resolve(process.env['STEMSPLIT_SHARED_DIR'] ?? path.join('..', 'shared'), 'fixtures');

function manifest(folder: string): Record<string, unknown> | undefined {
  const file = path.join(SHARED, folder, 'fixtures.json');
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>) : undefined;
}

/** Every fixture whose official separation demucs_reference.py can run. */
function cases(): Case[] {
  const out: Case[] = [];
  const calibrated = manifest('demucs-calibrated') as { sources: string[]; fixtures: Record<string, { input: string }> } | undefined;
  for (const [name, fixture] of Object.entries(calibrated?.fixtures ?? {})) {
    const dir = path.join(SHARED, 'demucs-calibrated');
    out.push({
      name: `demucs-calibrated/${name}`,
      family: 'Demucs v4 (HTDemucs, calibrated)',
      model: path.join(dir, 'vis_htdemucs.th'),
      input: path.join(dir, fixture.input),
      sources: calibrated?.sources ?? [],
    });
  }
  type Separate = { checkpoint?: string; bag?: string; sources: string[]; separate_in?: [string, number[]] };
  const v4 = manifest('demucs') as { fixtures: Record<string, Separate> } | undefined;
  for (const [name, fixture] of Object.entries(v4?.fixtures ?? {})) {
    const model = fixture.checkpoint ?? fixture.bag;
    if (fixture.separate_in === undefined || model === undefined) continue;
    const dir = path.join(SHARED, 'demucs');
    out.push({
      name: `demucs/${name}`,
      family: fixture.bag ? 'Demucs v4 (HTDemucs bag)' : 'Demucs v4 (HTDemucs)',
      model: path.join(dir, model),
      input: path.join(dir, fixture.separate_in[0]),
      sources: fixture.sources,
    });
  }
  const v3 = manifest('demucs-v3') as { fixtures: Record<string, { bag?: string; class?: string; sources: string[] }> } | undefined;
  for (const [name, fixture] of Object.entries(v3?.fixtures ?? {})) {
    // mdx_small's bag holds a diffq-quantized member (diffq is not packaged) and Demucs v2 members (julius).
    if (fixture.bag === undefined || name !== 'hdemucs_mmi_small') continue;
    const dir = path.join(SHARED, 'demucs-v3');
    out.push({
      name: `demucs-v3/${name}`,
      family: 'Demucs v3 (HDemucs)',
      model: path.join(dir, fixture.bag),
      input: path.join(dir, 'mix.in.f32'),
      sources: fixture.sources,
    });
  }
  return out;
}

function readPlanar(file: string, bytes: 4 | 8): Float64Array {
  const buffer = readFileSync(file);
  const view =
    bytes === 8
      ? new Float64Array(buffer.buffer, buffer.byteOffset, buffer.byteLength / 8)
      : new Float32Array(buffer.buffer, buffer.byteOffset, buffer.byteLength / 4);
  return Float64Array.from(view);
}

/** The input as a 32-bit float WAV (what `split` reads), bit for bit. */
function asWav(input: string, dir: string): string {
  if (!input.endsWith('.f32')) return input;
  const planar = readPlanar(input, 4);
  const length = planar.length / CHANNELS;
  const interleaved = new Float32Array(planar.length);
  for (let c = 0; c < CHANNELS; c++) for (let i = 0; i < length; i++) interleaved[i * CHANNELS + c] = planar[c * length + i] as number;
  const file = path.join(dir, `${path.basename(input, '.f32')}.wav`);
  writeFileSync(file, Buffer.concat([wavHeader(length, 44_100, 'float32', CHANNELS), Buffer.from(interleaved.buffer)]));
  return file;
}

function snrDb(reference: Float64Array, actual: Float64Array): number {
  if (reference.length !== actual.length) throw new Error(`${actual.length} samples for ${reference.length}`);
  let signal = 0;
  let noise = 0;
  for (let i = 0; i < reference.length; i++) {
    signal += (reference[i] as number) ** 2;
    noise += ((reference[i] as number) - (actual[i] as number)) ** 2;
  }
  return 10 * Math.log10(signal / Math.max(noise, 1e-300));
}

const range = (values: readonly number[]): string => {
  const low = Math.min(...values).toFixed(1);
  const high = Math.max(...values).toFixed(1);
  return low === high ? low : `${low}–${high}`;
};

function main(): void {
  const { values } = parseArgs({
    options: {
      'demucs-src': { type: 'string' },
      python: { type: 'string', default: '/usr/bin/python3' },
      threads: { type: 'string', default: '1' },
      only: { type: 'string' },
    },
  });
  const demucsSrc = values['demucs-src'];
  if (demucsSrc === undefined) throw new Error('--demucs-src DIR: a checkout of the official demucs');
  const only = values.only?.split(',');
  const work = mkdtempSync(path.join(tmpdir(), 'stemsplit-precision-table-'));
  const helper = path.join(import.meta.dirname, 'demucs_reference.py');
  try {
    console.log(`| family | fixture | official float32 vs float64 (dB per stem) | stemsplit vs float64 | stemsplit − official (worst stem) |`);
    console.log('|---|---|---|---|---|');
    for (const c of cases()) {
      if (only !== undefined && !only.includes(c.name)) continue;
      const dir = mkdtempSync(path.join(work, 'case-'));
      const song = asWav(c.input, dir);
      const official = (dtype: 'float32' | 'float64'): Float64Array => {
        const out = path.join(dir, `${dtype}.raw`);
        const result = spawnSync(
          values.python as string,
          [
            helper,
            '--demucs-src',
            demucsSrc,
            '--model',
            c.model,
            '--input',
            song,
            '--dtype',
            dtype,
            '--threads',
            values.threads as string,
            '--ffmpeg',
            resolveFfmpegPath(),
            '--out',
            out,
          ],
          { encoding: 'utf8' },
        );
        if (result.status !== 0) throw new Error(`${c.name}: the official code (${dtype}) failed: ${result.stderr}`);
        return readPlanar(out, dtype === 'float64' ? 8 : 4);
      };
      const exact = official('float64');
      const float32 = official('float32');
      const stems = path.join(dir, 'stems');
      const split = runCli(['split', song, '--model', c.model, '--format', 'wav', '--float32', '-o', stems], {
        STEMSPLIT_DATA_DIR: path.join(dir, 'data'),
        STEMSPLIT_CACHE_DIR: path.join(work, 'cache'),
      });
      if (split.status !== 0) throw new Error(`${c.name}: stemsplit split failed: ${split.stderr}`);
      const plane = exact.length / c.sources.length;
      const track = path.basename(song, path.extname(song));
      const theirs = c.sources.map((_, s) => snrDb(exact.subarray(s * plane, (s + 1) * plane), float32.subarray(s * plane, (s + 1) * plane)));
      const ours = c.sources.map((source, s) =>
        snrDb(exact.subarray(s * plane, (s + 1) * plane), Float64Array.from(decodePlanar(path.join(stems, track, `${source}.wav`), CHANNELS))),
      );
      const worst = Math.min(...ours.map((snr, s) => snr - (theirs[s] as number)));
      const perStem = (snrs: number[]) => `${snrs.map((snr) => snr.toFixed(1)).join(' / ')} (${range(snrs)})`;
      console.log(
        `| ${c.family} | ${c.name} (${c.sources.join(', ')}) | ${perStem(theirs)} | ${perStem(ours)} | ${worst >= 0 ? '+' : ''}${worst.toFixed(1)} |`,
      );
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

main();
