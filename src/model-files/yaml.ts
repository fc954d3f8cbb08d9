/**
 * A model's yaml read as PyYAML's `full_load` reads it (MSST loads its configs with
 * `yaml.load(..., Loader=yaml.FullLoader)`): plain YAML and the harmless Python tags
 * (`!!python/tuple`, `!!python/str`, …) are data; a tag that would build a Python object
 * (`!!python/object/apply:os.system`, `!!python/name:…`, `!!python/module:…`) or that no
 * constructor knows is refused in one line naming the tag, as full_load refuses it. Nothing is
 * ever printed (no YAMLWarning), aliases are bounded and the file is read only up to a size no
 * real config reaches.
 */
import { LineCounter, parseDocument, type Tags, type YAMLError } from 'yaml';
import { describeError, StemsplitError } from '../errors.js';
import { readSmallModelFile } from './regular.js';

/** A model config is a few KB; 1 MiB is far beyond any real one. */
const MAX_YAML_BYTES = 2 ** 20;
/** Alias expansions allowed (the yaml package's own default): a "billion laughs" file exceeds it. */
const MAX_ALIASES = 100;

const PYTHON = 'tag:yaml.org,2002:python/';
const TOO_DEEP = 'its lists or mappings are nested too deeply for a config';
const MAX_FLOW_DEPTH = 64;
/** 64 levels of two-space indentation. */
const MAX_BLOCK_COLUMNS = 128;

/** The Python tags full_load builds from plain data, read as their plain values. */
const PYTHON_DATA_TAGS: Tags = [
  { tag: `${PYTHON}tuple`, collection: 'seq', resolve: (value) => value },
  { tag: `${PYTHON}list`, collection: 'seq', resolve: (value) => value },
  { tag: `${PYTHON}dict`, collection: 'map', resolve: (value) => value },
  ...['str', 'unicode'].map((name) => ({ tag: `${PYTHON}${name}`, resolve: (text: string) => text })),
  ...['int', 'long'].map((name) => ({ tag: `${PYTHON}${name}`, resolve: (text: string, onError: (message: string) => void) => wholeNumber(text, onError) })),
  { tag: `${PYTHON}float`, resolve: (text: string) => Number(text) },
  { tag: `${PYTHON}bool`, resolve: (text: string) => /^(true|yes|on)$/i.test(text) },
  { tag: `${PYTHON}none`, resolve: () => null },
];

function wholeNumber(text: string, onError: (message: string) => void): number {
  const value = Number(text);
  if (!Number.isInteger(value)) onError(`${text} is not an integer`);
  return value;
}

/** The yaml in `file` as plain data, refused in one line naming the file when full_load would refuse it or it is not YAML. */
export function readModelYaml(file: string, what = 'model config'): unknown {
  return parseModelYaml(readSmallModelFile(file, what, MAX_YAML_BYTES), file);
}

/** `text` (the contents of `file`) as plain data; see readModelYaml. */
export function parseModelYaml(text: string, file: string): unknown {
  const lines = new LineCounter();
  const fail = (detail: string) => new StemsplitError('MODEL_INVALID', `${file}: ${detail}`);
  // A config nests two or three levels; far deeper nesting is refused before the parser recurses into it.
  if (flowDepth(text) > MAX_FLOW_DEPTH || blockColumns(text) > MAX_BLOCK_COLUMNS) throw fail(TOO_DEEP);
  try {
    const document = parseDocument(text, { customTags: PYTHON_DATA_TAGS, uniqueKeys: false, lineCounter: lines, logLevel: 'silent' });
    const unresolved = document.warnings.find((warning) => warning.code === 'TAG_RESOLVE_FAILED');
    if (unresolved !== undefined) throw fail(refusedTag(unresolved, lines));
    const error = document.errors[0];
    if (error !== undefined) throw fail(/call stack/i.test(error.message) ? TOO_DEEP : `not valid YAML: ${error.message.split('\n')[0]}`);
    return document.toJS({ maxAliasCount: MAX_ALIASES });
  } catch (error) {
    if (error instanceof StemsplitError) throw error;
    // The yaml package throws a ReferenceError for too many aliases and RangeError for too deep a nesting.
    if (error instanceof RangeError) throw fail(TOO_DEEP);
    if (error instanceof ReferenceError) throw fail(`not a config stemsplit reads (${describeError(error)})`);
    throw fail(`not valid YAML: ${describeError(error).slice(0, 200)}`);
  }
}

/** The deepest nesting of flow brackets ([ and {) outside quotes. */
function flowDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let quote: string | undefined;
  for (const c of text) {
    if (quote !== undefined) {
      if (c === quote) quote = undefined;
    } else if (c === '"' || c === "'") {
      quote = c;
    } else if (c === '[' || c === '{') {
      deepest = Math.max(deepest, ++depth);
    } else if (c === ']' || c === '}') {
      depth = Math.max(0, depth - 1);
    } else if (c === '\n') {
      quote = undefined;
    }
  }
  return deepest;
}

/** The widest block nesting: a line's indentation plus its compact `- ` / `? ` indicators, in columns. */
function blockColumns(text: string): number {
  let widest = 0;
  for (const line of text.split('\n')) widest = Math.max(widest, /^ *(?:[-?:] +)*/.exec(line)?.[0].length ?? 0);
  return widest;
}

/** The line for a tag full_load would not construct: which tag, where, and why it is refused. */
function refusedTag(warning: YAMLError, lines: LineCounter): string {
  const full = /Unresolved tag: (\S+)/.exec(warning.message)?.[1] ?? 'unknown';
  const tag = full.startsWith('tag:yaml.org,2002:') ? `!!${full.slice('tag:yaml.org,2002:'.length)}` : full;
  const { line } = lines.linePos(warning.pos[0]);
  const why = full.startsWith(PYTHON)
    ? "asks to build a Python object or call Python code, which PyYAML's full_load (what MSST uses) refuses too; stemsplit never runs code from a model file"
    : "is not a tag PyYAML's full_load knows (it refuses the file too)";
  return `line ${line}: the tag ${tag} ${why}`;
}
