/**
 * Compares stemsplit's record of python-audio-separator's presets (src/presets/builtin.ts) and of
 * its published scores (src/models/scores.ts) with a checkout of python-audio-separator, and prints
 * one line per preset and per scored model: `same`, or what differs.
 *
 *   node --import tsx scripts/presets/compare.ts PATH
 *
 * PATH: a work tree of nomadkaraoke/python-audio-separator, or its git directory (a bare clone,
 * e.g. what `fetch` leaves: its HEAD is read). Exits 1 when anything differs.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BUILTIN_PRESETS } from '../../src/presets/builtin.js';
import type { PresetDefinition } from '../../src/presets/schema.js';
import { recordedPasScores } from '../../src/models/scores.js';

interface TheirPreset {
  readonly name: string;
  readonly models: readonly string[];
  readonly algorithm: string;
  readonly weights: readonly number[] | null;
}
type TheirScores = Record<string, { readonly median_scores?: Record<string, { readonly SDR?: number }> }>;

/** A file of the checkout: from the work tree, else from the git directory's HEAD. */
function readTheirs(checkout: string, path: string): string {
  const inTree = join(checkout, path);
  if (existsSync(inTree)) return readFileSync(inTree, 'utf8');
  return execFileSync('git', ['--git-dir', checkout, 'show', `HEAD:${path}`], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
}

function revisionOf(checkout: string): string {
  const gitDir = existsSync(join(checkout, '.git')) ? join(checkout, '.git') : checkout;
  try {
    return execFileSync('git', ['--git-dir', gitDir, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
  } catch {
    return 'unknown revision';
  }
}

/** What differs between our record of one preset and theirs, in words; empty: the same. */
function presetDifferences(ours: PresetDefinition, theirs: TheirPreset): string[] {
  const differences: string[] = [];
  if (ours.name !== theirs.name) differences.push(`name ${ours.name} ≠ ${theirs.name}`);
  if (JSON.stringify(ours.models) !== JSON.stringify(theirs.models)) differences.push(`models ${ours.models.join(', ')} ≠ ${theirs.models.join(', ')}`);
  if (ours.algorithm !== theirs.algorithm) differences.push(`algorithm ${ours.algorithm} ≠ ${theirs.algorithm}`);
  if (JSON.stringify(ours.weights) !== JSON.stringify(theirs.weights ?? null))
    differences.push(`weights ${JSON.stringify(ours.weights)} ≠ ${JSON.stringify(theirs.weights)}`);
  return differences;
}

function comparePresets(checkout: string): number {
  const theirs = (JSON.parse(readTheirs(checkout, 'audio_separator/ensemble_presets.json')) as { presets: Record<string, TheirPreset> }).presets;
  let failures = 0;
  for (const id of new Set([...Object.keys(BUILTIN_PRESETS), ...Object.keys(theirs)])) {
    const ours = BUILTIN_PRESETS[id];
    const their = theirs[id];
    const differences = ours === undefined ? ['not recorded by stemsplit'] : their === undefined ? ['not in their list'] : presetDifferences(ours, their);
    if (differences.length > 0) failures++;
    const summary = ours ? `${ours.models.length} models, ${ours.algorithm}, weights ${JSON.stringify(ours.weights)}` : '';
    console.log(`preset ${id.padEnd(26)} ${differences.length === 0 ? `same (${summary})` : `DIFFERS: ${differences.join('; ')}`}`);
  }
  return failures;
}

function compareScores(checkout: string): number {
  const theirs = JSON.parse(readTheirs(checkout, 'audio_separator/models-scores.json')) as TheirScores;
  let failures = 0;
  for (const [file, sdr] of recordedPasScores()) {
    const median = theirs[file]?.median_scores;
    const differences =
      median === undefined
        ? ['not in their models-scores.json']
        : Object.entries(sdr)
            .filter(([stem, value]) => median[stem]?.SDR !== value)
            .map(([stem, value]) => `${stem} ${value} ≠ ${String(median[stem]?.SDR)}`);
    const unrecorded =
      median === undefined
        ? []
        : Object.entries(median)
            .filter(([stem, value]) => typeof value.SDR === 'number' && sdr[stem] === undefined)
            .map(([stem]) => `${stem} not recorded`);
    if (differences.length + unrecorded.length > 0) failures++;
    const same = Object.entries(sdr)
      .map(([stem, value]) => `${stem} ${value}`)
      .join(', ');
    console.log(
      `scores ${file.padEnd(58)} ${differences.length + unrecorded.length === 0 ? `same (${same})` : `DIFFERS: ${[...differences, ...unrecorded].join('; ')}`}`,
    );
  }
  return failures;
}

const checkout = process.argv[2];
if (checkout === undefined) {
  console.error('usage: node --import tsx scripts/presets/compare.ts PATH-TO-python-audio-separator (work tree or git directory)');
  process.exit(2);
}
console.log(`python-audio-separator at ${checkout} (${revisionOf(checkout)})`);
const failures = comparePresets(checkout) + compareScores(checkout);
console.log(failures === 0 ? 'all the same' : `${failures} differ`);
process.exit(failures === 0 ? 0 : 1);
