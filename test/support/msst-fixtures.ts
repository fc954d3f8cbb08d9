/**
 * MSST reference fixtures (../shared/fixtures/roformer, …/msst), checked the same way for every
 * family: one chunk's forward pass and each whole-track demix at library level, and the demix
 * input through the real CLI (`stemsplit split x.wav --model NAME.ckpt --format wav --float32`).
 */
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { runCli } from './process.js';
import type { DemixRunOptions } from '../../src/msst/network.js';
import { fixtureManifest } from './fixtures.js';
import { assertStems, decodePlanar, readF32, writeFloatWav } from './reference-audio.js';

export interface FixtureFile {
  readonly file: string;
  readonly shape: readonly number[];
}

export interface MsstFixture {
  readonly model_type: string;
  readonly checkpoint: { readonly file: string };
  readonly config: { readonly file: string };
  readonly instruments_out: readonly string[];
  readonly channels: number;
  readonly files: Readonly<Record<string, FixtureFile>>;
  readonly mel_bands?: { readonly band_bins_start_end_exclusive: readonly (readonly [number, number])[] };
}

/** The fixtures of `dir` of one model type (all when none is named). */
export function msstFixtures(dir: string | undefined, modelType?: string): [string, MsstFixture][] {
  return fixtureManifest<MsstFixture>(dir).filter(([, fixture]) => modelType === undefined || fixture.model_type === modelType);
}

interface FixtureNetwork {
  forward(chunk: Float32Array): Promise<Float32Array>;
  demixTrack(track: Float32Array, options?: DemixRunOptions): Promise<Float32Array>;
}

/** The fixture's forward pass (when it has one) and every `demix_out` / `demix_out_batch<k>` against the network. */
export async function checkForwardAndDemix(network: FixtureNetwork, dir: string, name: string, fixture: MsstFixture, minDb: number): Promise<void> {
  const stems = fixture.instruments_out.length;
  const read = (entry: FixtureFile): Float32Array => readF32(path.join(dir, entry.file));
  const { files } = fixture;
  const forwardIn = files['forward_in'];
  const forwardOut = files['forward_out'];
  if (forwardIn && forwardOut) assertStems(`${name} forward`, read(forwardOut), await network.forward(read(forwardIn)), stems, { minDb });
  const demixIn = files['demix_in'];
  assert.ok(demixIn, 'a demix input');
  const track = read(demixIn);
  for (const [key, entry] of Object.entries(files)) {
    const batch = /^demix_out(?:_batch(\d+))?$/.exec(key);
    if (!batch) continue;
    const out = await network.demixTrack(track, batch[1] === undefined ? {} : { batchSize: Number(batch[1]) });
    assertStems(`${name} ${key}`, read(entry), out, stems, { minDb });
  }
}

/**
 * Writes the fixture's demix input as a float WAV (`<work>/x.wav`), splits it with the CLI into
 * `<work>/out/x/` (with `extraArgs`, e.g. a precision), and returns the stems it wrote, decoded,
 * as [stems, channels, length] with the reference demix_out.
 */
export function splitThroughCli(
  work: string,
  dir: string,
  fixture: MsstFixture,
  extraArgs: readonly string[] = [],
): { actual: Float32Array; expected: Float32Array; stemDir: string } {
  mkdirSync(work, { recursive: true });
  const { channels } = fixture;
  const song = path.join(work, 'x.wav');
  writeFloatWav(song, readF32(path.join(dir, (fixture.files['demix_in'] as FixtureFile).file)), channels);
  const env = { STEMSPLIT_DATA_DIR: path.join(work, 'data'), STEMSPLIT_CACHE_DIR: path.join(work, 'cache') };
  const out = path.join(work, 'out');
  const result = runCli(['split', song, '--model', path.join(dir, fixture.checkpoint.file), '--format', 'wav', '--float32', '-o', out, ...extraArgs], env);
  assert.equal(result.status, 0, result.stderr);
  const expected = readF32(path.join(dir, (fixture.files['demix_out'] as FixtureFile).file));
  const actual = new Float32Array(expected.length);
  const plane = expected.length / fixture.instruments_out.length;
  const stemDir = path.join(out, 'x');
  fixture.instruments_out.forEach((stem, s) => actual.set(decodePlanar(path.join(stemDir, `${stem.toLowerCase()}.wav`), channels), s * plane));
  return { actual, expected, stemDir };
}
