/**
 * Every model family stemsplit runs, one record each (contract/family.ts), in the order they are
 * asked to claim a file: the first claim wins (MSST before Demucs, so an MSST yaml given as a
 * model is pointed to its checkpoint instead of being read as a Demucs bag). Adding a family is
 * its folder and a line here.
 */
import { demucsFamily } from '../demucs/family.js';
import { StemsplitError } from '../errors.js';
import { mdxFamily } from '../mdx/family.js';
import { msstFamily } from '../msst/family.js';
import { manifestFamily } from '../bundled/family.js';
import { vrFamily } from '../vr/family.js';
import { flagAttribute, flagName, type FamilyOption, type FamilyOptions, type ModelFamilyRecord } from '../contract/family.js';
import { optionHelp } from '../contract/option-table.js';

export const MODEL_FAMILIES: readonly ModelFamilyRecord[] = [manifestFamily, vrFamily, msstFamily, demucsFamily, mdxFamily];

export function familyById(id: string): ModelFamilyRecord {
  const family = MODEL_FAMILIES.find((record) => record.id === id);
  if (family === undefined)
    throw new StemsplitError('MODEL_INVALID', `no model family "${id}" (this stemsplit runs ${MODEL_FAMILIES.map((record) => record.id).join(', ')})`);
  return family;
}

/** The files the families run, in words for help: `a stemsplit model.json (or its folder), …, or an MDX-Net .onnx`. */
export function familyFilesInWords(): string {
  const files = MODEL_FAMILIES.map((family) => family.files);
  return `${files.slice(0, -1).join(', ')} or ${files.at(-1) ?? ''}`;
}

/**
 * The families' options from values keyed by their flags' attributes (commander's, or the API's
 * `modelOptions`), each checked by its family: a USAGE error names the flag.
 */
export function familyOptionsFrom(values: Readonly<Record<string, unknown>>): FamilyOptions {
  return Object.assign({}, ...MODEL_FAMILIES.map((family) => family.options(values) ?? {})) as FamilyOptions;
}

/** Every option attribute (`mdxSegmentSize`, `shifts`, …) with the families that take it. */
export function familyOptionNames(): ReadonlyMap<string, readonly ModelFamilyRecord[]> {
  return new Map(familyFlags().map(({ families, flags }) => [flagAttribute(flags), families]));
}

/** A flag as the CLI declares it: one per flag name, with every family whose table has it. */
export interface DeclaredFlag {
  readonly flags: string;
  readonly description: string;
  readonly separatorSpelling?: string;
  readonly families: readonly ModelFamilyRecord[];
}

/** Every flag the families' tables declare, once each (a flag two families share names both in its help). */
export function familyFlags(): DeclaredFlag[] {
  const byName = new Map<string, { rows: FamilyOption[]; families: ModelFamilyRecord[] }>();
  for (const family of MODEL_FAMILIES) {
    for (const row of family.optionTable) {
      const entry = byName.get(flagName(row.flags)) ?? { rows: [], families: [] };
      entry.rows.push(row);
      entry.families.push(family);
      byName.set(flagName(row.flags), entry);
    }
  }
  return [...byName.values()].map(({ rows, families }) => {
    const first = rows[0] as FamilyOption;
    const description = rows.length === 1 ? optionHelp(first) : rows.map((row, index) => `${families[index]?.takers}: ${optionHelp(row)}`).join('; ');
    const spelling = rows.find((row) => row.separatorSpelling !== undefined)?.separatorSpelling;
    return { flags: first.flags, description, families, ...(spelling === undefined ? {} : { separatorSpelling: spelling }) };
  });
}
