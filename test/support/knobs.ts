/**
 * What the knob tests share (test/knobs*.test.ts): a 2-second clip as a float WAV, the real CLI's
 * `split` on it, a fixture model loaded through its family's record with the CLI's attributes, and
 * the spectral inversion (separation/spectral-inversion.ts) computed directly for a primary stem.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FamilyOptions } from '../../src/contract/family.js';
import { familyById, familyOptionsFrom } from '../../src/models/families.js';
import { separate, type SeparationModel, type StereoTrack } from '../../src/separation/index.js';
import { InvertedStemWriter } from '../../src/separation/spectral-inversion.js';
import { synthesiseSong } from './audio.js';
import { runCli } from './process.js';

export const RATE = 44_100;

/** Interleaved stereo float32 as a 32-bit float WAV. */
export function writeFloatWav(path: string, interleaved: Float32Array): void {
  const header = Buffer.alloc(44);
  header.write('RIFF', 0);
  header.writeUInt32LE(36 + interleaved.byteLength, 4);
  header.write('WAVEfmt ', 8);
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(3, 20);
  header.writeUInt16LE(2, 22);
  header.writeUInt32LE(RATE, 24);
  header.writeUInt32LE(RATE * 8, 28);
  header.writeUInt16LE(8, 32);
  header.writeUInt16LE(32, 34);
  header.write('data', 36);
  header.writeUInt32LE(interleaved.byteLength, 40);
  writeFileSync(path, Buffer.concat([header, Buffer.from(interleaved.buffer, interleaved.byteOffset, interleaved.byteLength)]));
}

/** A float WAV's interleaved samples (its `data` chunk). */
export function readFloatWav(path: string): Float32Array {
  const bytes = readFileSync(path);
  let at = 12;
  while (bytes.toString('latin1', at, at + 4) !== 'data') at += 8 + bytes.readUInt32LE(at + 4);
  const size = bytes.readUInt32LE(at + 4);
  return new Float32Array(bytes.buffer.slice(bytes.byteOffset + at + 8, bytes.byteOffset + at + 8 + size));
}

/** The clip: planar stereo at half scale. */
export function clip(seconds = 2): StereoTrack {
  const data = synthesiseSong(seconds).map((value) => value * 0.5);
  return { data, length: data.length / 2 };
}

/** Planar stereo as interleaved, for a WAV. */
export function interleave(track: StereoTrack): Float32Array {
  const out = new Float32Array(2 * track.length);
  for (let i = 0; i < track.length; i++) {
    out[2 * i] = track.data[i] as number;
    out[2 * i + 1] = track.data[track.length + i] as number;
  }
  return out;
}

/** Interleaved stereo as planar [2, length]. */
export function planar(interleaved: Float32Array): Float32Array {
  const length = interleaved.length / 2;
  const out = new Float32Array(interleaved.length);
  for (let i = 0; i < length; i++) [out[i], out[length + i]] = [interleaved[2 * i] as number, interleaved[2 * i + 1] as number];
  return out;
}

/** The clip written as a float WAV in `dir`, and `split` on it with `args` (float WAV stems), as the CLI runs. */
export function clipSplitter(dir: string, track: StereoTrack, cacheDir: string): (...args: string[]) => ReturnType<typeof runCli> {
  const wav = join(dir, 'clip.wav');
  writeFloatWav(wav, interleave(track));
  return (...args: string[]) =>
    runCli(['--data-dir', join(dir, 'data'), 'split', wav, '--format', 'wav', '--float32', ...args], { STEMSPLIT_CACHE_DIR: cacheDir });
}

/** A fixture model as its family's record loads it, with the options given as the CLI's attributes (`{ tta: true }`). */
export async function loadFixture(file: string, cacheDir: string, values: Record<string, unknown> = {}): Promise<SeparationModel> {
  const claimed = ['demucs', 'vr', 'msst', 'mdx']
    .map((id) => familyById(id))
    .map((family) => ({ family, claim: family.claim(file) }))
    .find(({ claim }) => claim !== undefined);
  assert.ok(claimed?.claim);
  const options: FamilyOptions = { ...claimed.claim.options, ...familyOptionsFrom(values) };
  return claimed.family.load(
    {
      name: file.replace(/^.*\//, '').replace(/\.\w+$/, ''),
      path: file,
      ...(claimed.claim.configPath ? { configPath: claimed.claim.configPath } : {}),
      options,
    },
    { cacheDir, intraOpThreads: 1 },
  );
}

/** A fixture model's stems for `track` (loaded as loadFixture loads it). */
export async function separatedBy(file: string, cacheDir: string, track: StereoTrack, values: Record<string, unknown> = {}): Promise<Float32Array[]> {
  const model = await loadFixture(file, cacheDir, values);
  try {
    return await separate(model, track);
  } finally {
    await model.dispose();
  }
}

/** A usage error: exit 2, one line on stderr matching `message`. */
export function usage(result: { status: number | null; stderr: string }, message: RegExp): void {
  assert.equal(result.status, 2, result.stderr);
  assert.equal(result.stderr.split('\n').length, 2, `one line: ${result.stderr}`);
  assert.match(result.stderr, message);
}

/** The largest difference between two stems of equal length. */
export function largestDifference(a: Float32Array, b: Float32Array): number {
  assert.equal(a.length, b.length);
  let most = 0;
  for (let i = 0; i < a.length; i++) most = Math.max(most, Math.abs((a[i] as number) - (b[i] as number)));
  return most;
}

export function peak(a: Float32Array): number {
  return a.reduce((most, value) => Math.max(most, Math.abs(value)), 0);
}

/** The secondary stem InvertedStemWriter writes for `primary` (planar) of `track`'s mix, fed in uneven blocks. */
export async function inverted(track: StereoTrack, primary: Float32Array): Promise<Float32Array> {
  const { length } = track;
  const secondary = new Float32Array(2 * length);
  let written = 0;
  const writer = new InvertedStemWriter((stems, frames) => {
    const block = stems[1] as Float32Array;
    secondary.set(block.subarray(0, frames), written);
    secondary.set(block.subarray(frames), length + written);
    written += frames;
  }, length);
  const span = (data: Float32Array, from: number, count: number) => {
    const block = new Float32Array(2 * count);
    block.set(data.subarray(from, from + count), 0);
    block.set(data.subarray(length + from, length + from + count), count);
    return block;
  };
  for (let from = 0, step = 777; from < length; from += step, step = step === 777 ? 5000 : 777) {
    const count = Math.min(step, length - from);
    await writer.push([span(primary, from, count)], span(track.data, from, count), count);
  }
  assert.equal(written, length);
  return secondary;
}
