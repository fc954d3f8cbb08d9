/**
 * Named ensembles: python-audio-separator's curated presets (builtin.ts) and the user's own, in
 * `<data-dir>/presets.json` (the same shape as theirs). A preset resolves to exactly what
 * `--model A --model B --ensemble ALG --ensemble-weights W` gives: member names and a method, so
 * everything downstream (split, the API's jobs, the worker) is unchanged.
 */
import { existsSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { EnsembleMethod } from '../ensemble/algorithms.js';
import { describeError, isStemsplitError, StemsplitError } from '../errors.js';
import { catalogModel, MODEL_CATALOG, type CatalogModel } from '../models/catalog.js';
import type { ModelRegistry } from '../models/registry.js';
import { BUILTIN_PRESETS, PRESETS_SOURCE } from './builtin.js';
import { definitionOf, firstIssue, PresetsFile, type PresetDefinition } from './schema.js';

export type PresetOrigin = 'builtin' | 'user';

export interface Preset extends PresetDefinition {
  readonly id: string;
  /** builtin: python-audio-separator's list; user: the data dir's presets.json (one of the same id replaces the built-in). */
  readonly origin: PresetOrigin;
  /** Where it is defined. */
  readonly source: string;
}

/** One member as this data dir has it. */
export interface PresetMember {
  /** As the preset names it. */
  readonly given: string;
  /** What `--model` takes for it: the catalog's or the library's name for that file, else as given. */
  readonly model: string;
  readonly installed: boolean;
  /** The catalog entry for it, where there is one (`models pull` fetches it). */
  readonly catalog: string | null;
  /** The terms of its weights as the catalog or its installed files state them; null where stemsplit knows nothing of it. */
  readonly terms: string | null;
}

export const PRESETS_FILE = 'presets.json';
const USER_PRESETS_SOURCE = `${PRESETS_FILE} in the data dir`;

export function userPresetsFile(dataDir: string): string {
  return join(dataDir, PRESETS_FILE);
}

/** Every preset: the built-in ones, then the user's (by id; the user's replaces a built-in of the same id); no data dir: the built-in ones. */
export function loadPresets(dataDir: string | undefined): Preset[] {
  const byId = new Map<string, Preset>();
  for (const [id, definition] of Object.entries(BUILTIN_PRESETS)) byId.set(id, { id, ...definition, origin: 'builtin', source: PRESETS_SOURCE });
  for (const preset of dataDir === undefined ? [] : readUserPresets(userPresetsFile(dataDir))) byId.set(preset.id, preset);
  return [...byId.values()];
}

/** The user's presets file, checked: a missing file is no presets; a bad one is one line naming the file and the problem. */
export function readUserPresets(file: string): Preset[] {
  if (!existsSync(file)) return [];
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new StemsplitError('USAGE', `${file}: not readable JSON (${describeError(error)})`);
  }
  const parsed = PresetsFile.safeParse(json);
  if (!parsed.success) throw new StemsplitError('USAGE', `${file}: ${firstIssue(parsed.error)}`);
  return Object.entries(parsed.data.presets).map(([id, entry]) => ({ id, ...definitionOf(id, entry), origin: 'user', source: USER_PRESETS_SOURCE }));
}

export function findPreset(dataDir: string | undefined, id: string): Preset {
  const presets = loadPresets(dataDir);
  const preset = presets.find((candidate) => candidate.id === id);
  if (preset === undefined) throw new StemsplitError('USAGE', `no preset "${id}" (they are ${presets.map((p) => p.id).join(', ')}; stemsplit presets list)`);
  return preset;
}

/** A preset as `presets list --json` and GET /v1/presets give it: with its members as this data dir has them. */
export interface PresetListing extends Omit<Preset, 'models'> {
  /** Whether every member is installed. */
  readonly installed: boolean;
  readonly members: readonly PresetMember[];
}

export function presetListings(dataDir: string | undefined, registry: ModelRegistry): PresetListing[] {
  return loadPresets(dataDir).map(({ models, ...preset }) => {
    const members = presetMembers({ models }, registry);
    return { ...preset, installed: members.every((member) => member.installed), members };
  });
}

/** Each member of `preset` as this registry has it. */
export function presetMembers(preset: Pick<Preset, 'models'>, registry: ModelRegistry): PresetMember[] {
  const library = registry.library();
  return preset.models.map((given) => {
    const catalog = catalogEntryFor(given);
    const model = catalog?.name ?? library.find((ref) => basename(ref.path) === given)?.name ?? given;
    const installedTerms = installedTermsOf(registry, model);
    return { given, model, installed: installedTerms !== undefined, catalog: catalog?.name ?? null, terms: installedTerms ?? catalog?.terms ?? null };
  });
}

/** The catalog's entry named `given`, or whose model file is `given` (python-audio-separator names models by file). */
function catalogEntryFor(given: string): CatalogModel | undefined {
  return catalogModel(given) ?? MODEL_CATALOG.find((model) => model.files[0] === given);
}

/** The terms of the installed model `model` names, or undefined where none is installed. */
function installedTermsOf(registry: ModelRegistry, model: string): string | undefined {
  try {
    return registry.resolveModel(model).terms;
  } catch (error) {
    if (isStemsplitError(error) && error.code === 'MODEL_NOT_FOUND') return undefined;
    throw error;
  }
}

/** What the preset runs: its members' model names and how their stems combine (a missing member: one line saying how to get it). */
export function presetEnsemble(preset: Preset, registry: ModelRegistry): { readonly models: string[]; readonly method: EnsembleMethod } {
  const members = presetMembers(preset, registry);
  const missing = members.filter((member) => !member.installed);
  if (missing.length > 0) throw new StemsplitError('MODEL_NOT_FOUND', missingMembersLine(preset.id, missing));
  return { models: members.map((member) => member.model), method: methodOf(preset) };
}

export function methodOf(preset: Pick<PresetDefinition, 'algorithm' | 'weights'>): EnsembleMethod {
  return { algorithm: preset.algorithm, ...(preset.weights ? { weights: preset.weights } : {}) };
}

/** `preset X needs models not installed here: …; run: stemsplit models pull …` in one line. */
export function missingMembersLine(id: string, missing: readonly PresetMember[]): string {
  const pullable = missing.filter((member) => member.catalog !== null).map((member) => member.catalog as string);
  const elsewhere = missing.filter((member) => member.catalog === null).map((member) => member.given);
  const how = [
    ...(pullable.length > 0 ? [`run: stemsplit models pull ${pullable.join(' ')}`] : []),
    ...(elsewhere.length > 0
      ? [
          `${elsewhere.join(', ')} ${elsewhere.length === 1 ? 'is' : 'are'} not in stemsplit's catalog: download ${elsewhere.length === 1 ? 'it' : 'each'} (python-audio-separator's models.json names where) and run: stemsplit models add FILE`,
        ]
      : []),
  ];
  return `preset ${id} needs models not installed here: ${missing.map((member) => member.model).join(', ')}; ${how.join('; ')}`;
}
