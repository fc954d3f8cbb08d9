/**
 * Where the shared reference fixtures live (../shared/fixtures/<name>, beside the checkout).
 * A fresh clone without them skips the tests that need them, saying which folder is missing;
 * under CI (ci.ts) a missing folder fails the run instead, so CI never passes by skipping.
 * STEMSPLIT_SHARED_DIR names another shared folder (e.g. a hidden fixture set of the same layout).
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { runningInCi } from './ci.js';

export function fixtureDir(name: string): string | undefined {
  const dir = path.resolve(process.env['STEMSPLIT_SHARED_DIR'] ?? path.join('..', 'shared'), 'fixtures', name);
  if (existsSync(dir)) return dir;
  if (runningInCi()) throw new Error(`CI=${process.env['CI']} and the fixture folder ${dir} is missing`);
  console.log(`# skipping the ${name} fixture tests: ${dir} is missing`);
  return undefined;
}

/** The fixtures `dir`'s fixtures.json lists, by name; none when the folder is missing. */
export function fixtureManifest<Fixture>(dir: string | undefined): [string, Fixture][] {
  if (dir === undefined) return [];
  const manifest = JSON.parse(readFileSync(path.join(dir, 'fixtures.json'), 'utf8')) as { fixtures: Record<string, Fixture> };
  return Object.entries(manifest.fixtures);
}

/** One fixture file, or undefined when its folder is missing. */
export function fixtureFile(folder: string, file: string): string | undefined {
  const dir = fixtureDir(folder);
  return dir === undefined ? undefined : path.join(dir, file);
}

/** A family's model as `--model` takes it (several: an ensemble), each read when the test runs. */
export type FamilyModels = readonly [string, () => readonly (string | undefined)[]];

/** One small fixture network per converting family, for the tests every family must pass (stop, crash, memory). */
export const FAMILY_FIXTURES: readonly FamilyModels[] = [
  ['Demucs (HTDemucs)', () => [fixtureFile('demucs', 'htdemucs_small.th')]],
  ['BS-RoFormer', () => [fixtureFile('roformer', 'bs_roformer_vocals.ckpt')]],
  ['SCNet', () => [fixtureFile('msst', 'scnet_2stem.ckpt')]],
  ['MDX23C', () => [fixtureFile('msst', 'mdx23c_2stem.ckpt')]],
  ['MDX-Net', () => [fixtureFile('mdx', 'mdx_a_nfft6144_vocals.onnx')]],
  ['VR', () => [fixtureFile('vr', 'vr_a_v50_1band_inst.pth')]],
  ['Demucs v3 (HDemucs bag)', () => [fixtureFile('demucs-v3', 'hdemucs_mmi_small.yaml')]],
  ['Demucs v2 (time domain)', () => [fixtureFile('demucs-v3', 'mdx_m0.th')]],
];
