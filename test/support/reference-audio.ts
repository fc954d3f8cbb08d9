/**
 * Reference fixtures as audio a user would split: a planar [channels, N] float32 reference written
 * as a 32-bit float WAV, stems read back through ffmpeg, and per-stem SNR against a reference.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { resolveFfmpegPath } from '../../src/audio/index.js';
import { wavHeader } from '../../src/audio/wav.js';

export function readF32(path: string): Float32Array {
  const bytes = readFileSync(path);
  return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
}

/** Writes planar [channels, length] samples as a 32-bit float WAV, bit for bit. */
export function writeFloatWav(path: string, planar: Float32Array, channels: number, sampleRate = 44_100): void {
  const length = planar.length / channels;
  const interleaved = new Float32Array(length * channels);
  for (let c = 0; c < channels; c++) for (let i = 0; i < length; i++) interleaved[i * channels + c] = planar[c * length + i] as number;
  writeFileSync(path, Buffer.concat([wavHeader(length, sampleRate, 'float32', channels), Buffer.from(interleaved.buffer)]));
}

/** Decodes any audio file to planar float32 [channels, length] through ffmpeg. */
export function decodePlanar(path: string, channels: number): Float32Array {
  const result = spawnSync(resolveFfmpegPath(), ['-loglevel', 'error', '-i', path, '-f', 'f32le', '-ac', String(channels), '-'], { maxBuffer: 1 << 30 });
  assert.equal(result.status, 0, String(result.stderr));
  const interleaved = new Float32Array(result.stdout.buffer, result.stdout.byteOffset, result.stdout.length / 4);
  const length = interleaved.length / channels;
  const planar = new Float32Array(interleaved.length);
  for (let c = 0; c < channels; c++) for (let i = 0; i < length; i++) planar[c * length + i] = interleaved[i * channels + c] as number;
  return planar;
}

/** SNR in dB of `actual` against `expected` (equal sizes). */
export function snrDb(expected: Float32Array, actual: Float32Array): number {
  assert.equal(actual.length, expected.length, 'output size');
  let signal = 0;
  let noise = 0;
  for (let i = 0; i < expected.length; i++) {
    signal += (expected[i] as number) ** 2;
    noise += ((expected[i] as number) - (actual[i] as number)) ** 2;
  }
  return 10 * Math.log10(signal / Math.max(noise, 1e-30));
}

/** Stem `index` of a reference [stems, channels, length]. */
export function stemOf(reference: Float32Array, stems: number, index: number): Float32Array {
  const plane = reference.length / stems;
  return reference.subarray(index * plane, (index + 1) * plane);
}

/** SNR in dB of planar `stem` [channels, length] against `reference` [channels, kept], which kept every `stride`-th sample. */
export function stridedSnrDb(reference: Float32Array, stem: Float32Array, channels: number, stride: number): number {
  if (stride === 1) assert.equal(stem.length, reference.length, 'output size');
  const kept = reference.length / channels;
  const length = stem.length / channels;
  const strided = new Float32Array(reference.length);
  for (let c = 0; c < channels; c++) for (let i = 0; i < kept; i++) strided[c * kept + i] = stem[c * length + i * stride] as number;
  return snrDb(reference, strided);
}

/** Stems as one array [stems, …], or one array per stem. */
export type Stems = Float32Array | readonly Float32Array[];

function stemAt(stems: Stems, count: number, index: number): Float32Array {
  return stems instanceof Float32Array ? stemOf(stems, count, index) : (stems[index] ?? new Float32Array(0));
}

export interface StemCheck {
  readonly minDb: number;
  /** Shown instead of stem numbers. */
  readonly names?: readonly string[];
  /** Default 2. */
  readonly channels?: number;
  /** The reference kept every `stride`-th sample; default 1. */
  readonly stride?: number;
}

/**
 * Logs each stem's SNR against `reference` ([stems, channels, kept]) and asserts each ≥ `check.minDb`. Each of
 * the two is [stems, channels, …] in one array, or one planar [channels, …] array per stem.
 */
export function assertStems(label: string, reference: Stems, actual: Stems, stems: number, check: StemCheck): void {
  const snrs = Array.from({ length: stems }, (_, s) =>
    stridedSnrDb(stemAt(reference, stems, s), stemAt(actual, stems, s), check.channels ?? 2, check.stride ?? 1),
  );
  assertSnrs(label, snrs, check.minDb, check.names);
}

/** Prints `label: a / b … dB` (or `label: name a, name b dB` when `names` are given) and asserts each ≥ `minDb`. */
export function assertSnrs(label: string, snrs: readonly number[], minDb: number, names?: readonly string[]): void {
  const shown = names ? snrs.map((snr, s) => `${names[s]} ${snr.toFixed(1)}`).join(', ') : snrs.map((snr) => snr.toFixed(1)).join(' / ');
  console.log(`${label}: ${shown} dB`);
  for (const [s, snr] of snrs.entries()) assert.ok(snr >= minDb, `${label} ${names?.[s] ?? `stem ${s}`}: ${snr.toFixed(1)} dB < ${minDb}`);
}
