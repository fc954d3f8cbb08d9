/**
 * The Demucs family's record (contract/family.ts): `.th` checkpoints (v4 HTDemucs, v3 HDemucs, v2
 * Demucs, diffq-quantized) and bag `.yaml` files naming them, run as `demucs.apply` runs them.
 * Pulled files are checked against the SHA-256 prefix in their released names.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { StemsplitError } from '../errors.js';
import type { FamilyOption, ModelFamilyRecord } from '../contract/family.js';
import { readOptionTable } from '../contract/option-table.js';
import { SEGMENT_MODEL_OPTIONS } from '../contract/segment-options.js';
import { withSegmentKnobs, type SegmentKnobs } from '../separation/segment-knobs.js';
import { conversionsOf } from '../onnx/cache.js';
import { parseBagFile, resolveMember } from './bag-file.js';
import { DEMUCS_CATALOG, DEMUCS_ROOT, type DemucsCatalogModel } from './catalog.js';
import { demucsClassesOf } from './class-hint.js';

/** The release folder of the v4 checkpoints, where a catalog entry gives no address of its own. */
export const DEMUCS_RELEASE_URL = `${DEMUCS_ROOT}hybrid_transformer/`;
/** The cache folder of converted graphs, inside the cache directory (the pulled checkpoints' folder too). */
const CONVERTED_FOLDER = 'demucs';
const CHECKPOINT_NAME = /^[0-9a-z_]+-([0-9a-f]{8})\.th$/;

/** The Demucs family's options table (contract/family.ts): every segment model's, and the segment length. */
const DEMUCS_OPTION_TABLE: readonly FamilyOption[] = [
  ...SEGMENT_MODEL_OPTIONS,
  {
    flags: '--segment <seconds>',
    key: 'segment',
    type: 'number',
    above: 0,
    max: 600,
    separatorSpelling: '--demucs_segment_size',
    help: "Demucs: seconds per chunk (Demucs --segment; default the model's; HTDemucs takes at most its trained 7.8)",
  },
  {
    flags: '--no-split',
    key: 'noSplit',
    type: 'switch',
    help: 'Demucs --no-split: the whole track in one piece; refused for a track longer than a segment (HTDemucs 7.8 s; HDemucs and Demucs v2 their --segment, up to 600)',
  },
];

export const demucsFamily: ModelFamilyRecord<DemucsCatalogModel> = {
  id: 'demucs',
  takers: 'Demucs models (.th, bag .yaml)',
  files: 'a Demucs .th or bag .yaml',
  claim(file) {
    const ext = path.extname(file).toLowerCase();
    if (ext !== '.th' && ext !== '.yaml' && ext !== '.yml') return undefined;
    return { path: file, description: `Demucs ${ext === '.th' ? 'checkpoint' : 'bag'} ${file}` };
  },
  listedName: () => 'demucs',
  companions(model) {
    if (!/\.ya?ml$/i.test(model.path)) return [];
    const bag = parseBagFile(readFileSync(model.path, 'utf8'), model.path);
    return bag.models.map((member) => resolveMember(path.dirname(model.path), member));
  },
  optionTable: DEMUCS_OPTION_TABLE,
  catalog: DEMUCS_CATALOG,
  options(values) {
    const demucs = readOptionTable(DEMUCS_OPTION_TABLE, values);
    return demucs === undefined ? undefined : { demucs };
  },
  int8: () => true,
  // The time-domain Demucs (v2, alone or in a bag) fragments the default heap over a long track (onnx/process-env.ts);
  // HDemucs and HTDemucs stay level with it (docs/reliability.md) and run faster.
  allocator: (model) => (demucsClassesOf(model.path)?.includes('Demucs') ? 'map-large-blocks' : undefined),
  async load(model, options) {
    const { loadDemucs } = await import('./engine.js');
    const knobs = model.options?.['demucs'] as (SegmentKnobs & { readonly segment?: number }) | undefined;
    const loaded = await loadDemucs(model.path, {
      cacheDir: options.cacheDir,
      intraOpThreads: options.intraOpThreads,
      ...(options.precision ? { precision: options.precision } : {}),
      ...(knobs?.segment === undefined ? {} : { segment: knobs.segment }),
    });
    return withSegmentKnobs(loaded, knobs);
  },
  pull: {
    dir: (cacheDir) => path.join(cacheDir, CONVERTED_FOLDER),
    entry(model, dir) {
      if (!model.files.every((file) => existsSync(path.join(dir, file)))) return undefined;
      if (!runsFromYaml(model)) return path.join(dir, model.files[0] as string);
      const bag = path.join(dir, `${model.name}.yaml`);
      return existsSync(bag) ? bag : undefined;
    },
    expectedSha: expectedHashPrefix,
    defaultUrl: (file, baseUrl) => new URL(file, (baseUrl ?? DEMUCS_RELEASE_URL).replace(/\/?$/, '/')).href,
    async install(model, dir) {
      if (!runsFromYaml(model)) return path.join(dir, model.files[0] as string);
      const bag = path.join(dir, `${model.name}.yaml`);
      const temporary = `${bag}.tmp-${process.pid}`;
      await writeFile(temporary, bagYaml(model));
      await rename(temporary, bag);
      return bag;
    },
    extraFiles: (model) => [`${model.name}.yaml`],
    async conversions(model, dir, cacheDir) {
      const hashes = model.files.map(expectedHashPrefix);
      const entries = existsSync(dir) ? readdirSync(dir) : [];
      const htdemucs = entries
        .filter((entry) => /^[0-9a-f]{64}\.v\d+$/.test(entry) && hashes.some((sha8) => entry.startsWith(sha8)))
        .map((entry) => path.join(dir, entry));
      // v3/v2 stages are keyed by checkpoint and window length; their manifests name the checkpoint.
      const staged = await Promise.all(model.files.map((file) => conversionsOf(cacheDir, path.join(dir, file), [CONVERTED_FOLDER])));
      return [...new Set([...htdemucs, ...staged.flat()])];
    },
  },
};

/** The first 8 hex digits of the SHA-256 a released checkpoint must have, read from its name. */
export function expectedHashPrefix(file: string): string {
  const match = CHECKPOINT_NAME.exec(file);
  if (!match) throw new StemsplitError('MODEL_INVALID', `${file} is not named <signature>-<sha256 prefix>.th`);
  return match[1] as string;
}

/** A bag file in the official format: `models: [sig, …]` (the loader finds `<sig>-<sha8>.th`) and one weight row per member. */
export function bagYaml(model: DemucsCatalogModel): string {
  const models = model.files.map((file) => `'${file.slice(0, file.indexOf('-'))}'`).join(', ');
  const lines = [`models: [${models}]`];
  if (model.weights) {
    lines.push('weights: [');
    for (const row of model.weights) lines.push(`  [${row.map((w) => w.toFixed(1)).join(', ')}],`);
    lines.push(']');
  }
  if (model.segment !== undefined) lines.push(`segment: ${model.segment}`);
  return `${lines.join('\n')}\n`;
}

/** A bag, or one model whose released bag sets its segment (hdemucs_mmi), runs from its yaml. */
function runsFromYaml(model: DemucsCatalogModel): boolean {
  return model.files.length > 1 || model.segment !== undefined;
}
