/**
 * Demucs bag files (`htdemucs_ft.yaml`): the member model names, a weight matrix (one row
 * per member, one column per source) and optionally a segment. This reads the small YAML
 * subset those files use: top-level `key: value` pairs whose values are scalars, flow
 * lists (`[1., 0.]`, nested, over several lines) or block lists (`- name`).
 */
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { StemsplitError } from '../errors.js';
import { refuseLinkOutOfFolder } from '../model-files/regular.js';

export interface BagFile {
  readonly models: readonly string[];
  /** Absent: every member counts fully for every source. */
  readonly weights?: readonly (readonly number[])[];
  readonly segment?: number;
}

type YamlValue = string | number | boolean | null | YamlValue[];

/**
 * The most members a bag may list: Demucs' own bags have 1 to 4, and each member is a model
 * loaded (and converted) in turn, so a bag listing 100,000 would run for hours.
 */
export const MAX_BAG_MEMBERS = 16;

export function parseBagFile(text: string, where = 'bag'): BagFile {
  const entries = topLevelEntries(text, where);
  const models = entries.get('models');
  if (!Array.isArray(models) || models.length === 0 || !models.every((m) => typeof m === 'string' || typeof m === 'number')) {
    throw invalid(where, '`models` must be a non-empty list of names');
  }
  if (models.length > MAX_BAG_MEMBERS)
    throw invalid(where, `\`models\` lists ${models.length} members; Demucs' bags have 1 to 4, and stemsplit takes at most ${MAX_BAG_MEMBERS}`);
  const names = models.map(String);
  for (const name of names) checkMemberName(name, where);
  const weights = entries.get('weights');
  let matrix: number[][] | undefined;
  if (weights !== undefined && weights !== null) {
    if (!Array.isArray(weights) || weights.length !== names.length) {
      throw invalid(where, `\`weights\` must have one row per model (${names.length})`);
    }
    matrix = weights.map((row) => {
      if (!Array.isArray(row) || !row.every((w) => typeof w === 'number')) throw invalid(where, '`weights` rows must be lists of numbers');
      return row as number[];
    });
  }
  const segment = entries.get('segment');
  if (segment !== undefined && segment !== null && typeof segment !== 'number') throw invalid(where, '`segment` must be a number');
  return {
    models: names,
    ...(matrix === undefined ? {} : { weights: matrix }),
    ...(typeof segment === 'number' ? { segment } : {}),
  };
}

/** The checkpoint of bag member `name` in `directory`: `name.th`, or the released `name-<sha8>.th` (never a link out of the folder). */
export function resolveMember(directory: string, name: string): string {
  const member = findMember(directory, name);
  refuseLinkOutOfFolder(member, directory, `bag member ${name}`);
  return member;
}

function findMember(directory: string, name: string): string {
  const exact = path.join(directory, `${name}.th`);
  if (existsSync(exact)) return exact;
  const pattern = new RegExp(`^${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}-[0-9a-f]{8}\\.th$`);
  const match = readdirSync(directory).find((file) => pattern.test(file));
  if (match === undefined) {
    throw new StemsplitError('MODEL_NOT_FOUND', `bag member ${name} not found in ${directory} (looked for ${name}.th and ${name}-<hash>.th)`);
  }
  return path.join(directory, match);
}

/** Demucs reads bags with yaml.safe_load (no Python tags); a member is a `.th` in the bag's own folder, never a path. */
function checkMemberName(name: string, where: string): void {
  const tag = /^!\S*/.exec(name)?.[0];
  if (tag !== undefined)
    throw invalid(where, `the tag ${tag} asks to build a Python object, which Demucs' yaml.safe_load refuses too; stemsplit never runs code from a model file`);
  if (!/^[\w-][\w.-]*$/.test(name)) throw invalid(where, `member "${name}" is not a model name (a member is a .th file in the bag's own folder)`);
}

function invalid(where: string, detail: string): StemsplitError {
  return new StemsplitError('MODEL_INVALID', `${where}: ${detail}`);
}

function topLevelEntries(text: string, where: string): Map<string, YamlValue> {
  const entries = new Map<string, YamlValue>();
  let key: string | undefined;
  let body: string[] = [];
  const finish = (): void => {
    if (key !== undefined) entries.set(key, parseValue(body, where));
  };
  for (const raw of text.split(/\r?\n/)) {
    const line = stripComment(raw);
    if (line.trim() === '') continue;
    const match = /^([A-Za-z_][\w-]*)\s*:(.*)$/.exec(line);
    if (match !== null) {
      finish();
      key = match[1] as string;
      body = [(match[2] as string).trim()];
    } else if (key !== undefined) {
      body.push(line.trim());
    } else {
      throw invalid(where, `cannot read line "${raw.trim()}"`);
    }
  }
  finish();
  return entries;
}

function stripComment(line: string): string {
  let quote: string | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i] as string;
    if (quote !== undefined) {
      if (c === quote) quote = undefined;
    } else if (c === '"' || c === "'") {
      quote = c;
    } else if (c === '#' && (i === 0 || /\s/.test(line[i - 1] as string))) {
      return line.slice(0, i);
    }
  }
  return line;
}

function parseValue(lines: readonly string[], where: string): YamlValue {
  const nonEmpty = lines.filter((l) => l !== '');
  if (nonEmpty.length === 0) return null;
  if (nonEmpty.every((l) => l.startsWith('-'))) {
    return nonEmpty.map((l) => parseValue([l.slice(1).trim()], where));
  }
  const text = nonEmpty.join(' ');
  if (text.startsWith('[')) {
    const parser = new FlowParser(text, where);
    const value = parser.value();
    parser.end();
    return value;
  }
  return scalar(text);
}

function scalar(token: string): YamlValue {
  const text = token.trim();
  if (/^(['"]).*\1$/.test(text)) return text.slice(1, -1);
  if (/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) return Number(text);
  if (/^(true|True)$/.test(text)) return true;
  if (/^(false|False)$/.test(text)) return false;
  if (/^(null|~|None)$/.test(text)) return null;
  return text;
}

/** Flow sequences: `[a, 'b', [1., 2.],]`. */
class FlowParser {
  private pos = 0;

  constructor(
    private readonly text: string,
    private readonly where: string,
  ) {}

  value(): YamlValue {
    this.skipSpace();
    if (this.text[this.pos] === '[') return this.list();
    const start = this.pos;
    let quote: string | undefined;
    while (this.pos < this.text.length) {
      const c = this.text[this.pos] as string;
      if (quote !== undefined) {
        if (c === quote) quote = undefined;
      } else if (c === '"' || c === "'") {
        quote = c;
      } else if (c === ',' || c === ']') {
        break;
      }
      this.pos++;
    }
    return scalar(this.text.slice(start, this.pos));
  }

  end(): void {
    this.skipSpace();
    if (this.pos !== this.text.length) throw invalid(this.where, `unexpected text after a list: "${this.text.slice(this.pos)}"`);
  }

  private list(): YamlValue[] {
    this.pos++; // [
    const items: YamlValue[] = [];
    for (;;) {
      this.skipSpace();
      if (this.text[this.pos] === ']') {
        this.pos++;
        return items;
      }
      if (this.pos >= this.text.length) throw invalid(this.where, 'unterminated list');
      items.push(this.value());
      this.skipSpace();
      if (this.text[this.pos] === ',') this.pos++;
      else if (this.text[this.pos] !== ']') throw invalid(this.where, `expected "," or "]" in a list at "${this.text.slice(this.pos, this.pos + 10)}"`);
    }
  }

  private skipSpace(): void {
    while (this.pos < this.text.length && /\s/.test(this.text[this.pos] as string)) this.pos++;
  }
}
