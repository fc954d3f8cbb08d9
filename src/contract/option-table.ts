/**
 * Reading a family's options table (contract/family.ts FamilyOption): the values a run was given,
 * checked against each row's type and range, and the words `split --help` and the docs show.
 * Knows no family: each family hands its own table.
 */
import { StemsplitError } from '../errors.js';
import { flagAttribute, flagName, type FamilyOption } from './family.js';

export type OptionValue = number | boolean | string;

/**
 * The rows given in `values` (keyed by the flags' attributes, as commander and `modelOptions` key
 * them), each checked, keyed by the row's `key`; undefined when none was given. A USAGE error names
 * the flag and its range.
 */
export function readOptionTable(table: readonly FamilyOption[], values: Readonly<Record<string, unknown>>): Record<string, OptionValue> | undefined {
  const read: Record<string, OptionValue> = {};
  for (const row of table) {
    const value = values[flagAttribute(row.flags)];
    if (value === undefined || value === false) continue;
    read[row.key] = checkedValue(row, value);
  }
  return Object.keys(read).length > 0 ? read : undefined;
}

/**
 * Values already keyed by the rows' keys (a loader's options, handed past the CLI and the API),
 * checked as `readOptionTable` checks them; the first row of a key speaks for it.
 */
export function checkOptionKeys(table: readonly FamilyOption[], values: Readonly<Record<string, unknown>>): void {
  for (const [key, value] of Object.entries(values)) {
    const row = table.find((candidate) => candidate.key === key);
    if (row !== undefined && value !== undefined && value !== false) checkedValue(row, value);
  }
}

function checkedValue(row: FamilyOption, value: unknown): OptionValue {
  const refuse = (): never => {
    throw new StemsplitError('USAGE', `${flagName(row.flags)} must be ${rangeOf(row)}, got "${String(value)}"`);
  };
  if (row.type === 'switch') return value === true ? true : refuse();
  if (row.type === 'choice') return typeof value === 'string' && (row.choices ?? []).includes(value) ? value : refuse();
  if (typeof value !== 'number' && typeof value !== 'string') return refuse();
  const number = typeof value === 'string' && value.trim() === '' ? NaN : Number(value);
  if (!Number.isFinite(number) || (row.type === 'integer' && !Number.isInteger(number))) return refuse();
  if ((row.min !== undefined && number < row.min) || (row.max !== undefined && number > row.max)) return refuse();
  if ((row.above !== undefined && number <= row.above) || (row.below !== undefined && number >= row.below)) return refuse();
  return number;
}

/** A row's type and range in words: `a whole number from 2 to 50`, `a number from 0 to below 1`, `one of a, b`. */
export function rangeOf(row: FamilyOption): string {
  if (row.type === 'switch') return 'a switch (no value)';
  if (row.type === 'choice') return `one of ${(row.choices ?? []).join(', ')}`;
  const noun = row.type === 'integer' ? 'a whole number' : 'a number';
  const low = row.min !== undefined ? `from ${row.min}` : row.above !== undefined ? `above ${row.above}` : undefined;
  const high = row.max !== undefined ? `to ${row.max}` : row.below !== undefined ? `to below ${row.below}` : undefined;
  if (low !== undefined && high !== undefined) return `${noun} ${low} ${high}`;
  if (low !== undefined) return row.min !== undefined ? `${noun} ≥ ${row.min}` : `${noun} ${low}`;
  return high !== undefined ? `${noun} up ${high}` : noun;
}

/** A row's `split --help` line: its help, and its range where it takes a value. */
export function optionHelp(row: FamilyOption): string {
  return row.type === 'switch' ? row.help : `${row.help} (${rangeOf(row)})`;
}
