/**
 * The architecture's nevers, checked on the import graph of src/ (every direct import: static, type-only and
 * dynamic; test/support/import-graph.ts): the separation core knows nothing of HTTP or SQL, the HTTP layer knows
 * nothing of ONNX or of any family, no family imports another, and the shared machinery imports no family. Nor
 * does the shared machinery's code name a family (an id of MODEL_FAMILIES in an identifier or a string; comments,
 * which may say where a formula comes from, aside). Each check is first shown to catch a violation planted in a
 * scratch tree.
 *
 * The family folders are read from the code: the folders of the records MODEL_FAMILIES lists (`<folder>/family.ts`,
 * as the file defining the list imports them; stemsplit's own model.json family is bundled/). A folder that imports a family folder and is neither a family, shared machinery nor the registry
 * above them all (the list's folder) is that family's engine (MSST's roformer, scnet, mdx23c): it belongs to that
 * family alone, and the family and its engines import each other freely.
 *
 * @tier quick
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import ts from 'typescript';
import { MODEL_FAMILIES } from '../src/models/families.js';
import { importGraph, scratchTree as tree, type ImportGraph } from './support/import-graph.js';

/** The separation core's shared machinery: no family folder, and every family may import it. */
const SHARED_MACHINERY = ['separation', 'split-worker', 'dsp', 'onnx', 'torch'];
/** What the separation core never imports: HTTP, SQL, the services and jobs above them. */
const HTTP_AND_SQL = ['api', 'store', 'web', 'services', 'jobs'];
const HTTP_LAYER = ['api', 'web'];
const ONNX_MACHINERY = ['onnx', 'torch'];

/** The top folder of a file under src/ (`demucs/engine.ts` → `demucs`); a file at the top is its own. */
function folderOf(file: string): string {
  return file.split('/')[0] ?? file;
}

/** The registry (the file that defines MODEL_FAMILIES) and the folders of the records it lists (`<folder>/family.ts`), less the shared core. */
function familyFolders(graph: ImportGraph, root: string): { readonly registry: string; readonly families: string[] } {
  const listFile = [...graph.keys()].find((file) => /export const MODEL_FAMILIES\b/.test(readFileSync(join(root, file), 'utf8')));
  assert.ok(listFile, 'the file that defines MODEL_FAMILIES');
  const records = (graph.get(listFile) ?? []).filter((file) => /^[^/]+\/family\.ts$/.test(file) && isRecordFile(readFileSync(join(root, file), 'utf8')));
  return { registry: folderOf(listFile), families: records.map(folderOf).filter((folder) => !SHARED_MACHINERY.includes(folder)) };
}

/** A family's record file, not the contract's: it declares a record and does not define the type. */
function isRecordFile(text: string): boolean {
  return /:\s*ModelFamilyRecord\b/.test(text) && !/interface ModelFamilyRecord\b/.test(text);
}

/** Each family folder with its engines: the other folders that import it (not shared, not a family, not the registry above them all). */
function familyGroups(graph: ImportGraph, { registry, families }: ReturnType<typeof familyFolders>): Map<string, Set<string>> {
  const groups = new Map(families.map((family) => [family, new Set([family])]));
  for (const [file, targets] of graph) {
    const folder = folderOf(file);
    if (families.includes(folder) || SHARED_MACHINERY.includes(folder) || folder === registry || !file.includes('/')) continue;
    for (const target of targets) groups.get(folderOf(target))?.add(folder);
  }
  return groups;
}

interface Never {
  readonly name: string;
  /** The folders whose files never import `to`'s. */
  readonly from: (folder: string) => boolean;
  readonly to: (folder: string, from: string) => boolean;
}

function nevers(graph: ImportGraph, folders: ReturnType<typeof familyFolders>): Never[] {
  const groups = familyGroups(graph, folders);
  const groupOf = (folder: string) => [...groups.values()].filter((group) => group.has(folder));
  const inFamily = (folder: string) => groupOf(folder).length > 0;
  return [
    {
      name: 'the separation core (shared machinery and each family with its engines) imports nothing of HTTP or SQL',
      from: (folder) => SHARED_MACHINERY.includes(folder) || inFamily(folder),
      to: (folder) => HTTP_AND_SQL.includes(folder),
    },
    {
      name: 'the HTTP layer (api, web) imports nothing of ONNX (onnx, torch) nor any family',
      from: (folder) => HTTP_LAYER.includes(folder),
      to: (folder) => ONNX_MACHINERY.includes(folder) || inFamily(folder),
    },
    {
      name: 'no family imports another (a family and its engines are one family; an engine belongs to one family)',
      from: inFamily,
      to: (folder, from) => inFamily(folder) && (groupOf(from).length > 1 || !groupOf(from).some((group) => group.has(folder))),
    },
    {
      name: 'the shared machinery (torch, onnx, dsp) imports no family',
      from: (folder) => ['torch', 'onnx', 'dsp'].includes(folder),
      to: inFamily,
    },
  ];
}

/** Each never's broken imports, `from → to`. */
function violations(graph: ImportGraph, rules: readonly Never[]): Map<string, string[]> {
  return new Map(
    rules.map((rule) => [
      rule.name,
      [...graph].flatMap(([file, targets]) =>
        rule.from(folderOf(file))
          ? targets.filter((target) => folderOf(target) !== folderOf(file) && rule.to(folderOf(target), folderOf(file))).map((target) => `${file} → ${target}`)
          : [],
      ),
    ]),
  );
}

/** The words of a name or a string: split at what is not a letter or digit, at case changes and between letters and digits (`monoMixNormalization` → mono, mix, normalization; `HTDemucs` → ht, demucs; `mdx23c` → mdx, 23, c). */
function wordsOf(text: string): string[] {
  return text
    .split(/[^A-Za-z0-9]+|(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|(?<=[A-Za-z])(?=\d)|(?<=\d)(?=[A-Za-z])/)
    .filter((word) => word !== '')
    .map((word) => word.toLowerCase());
}

/**
 * Each place a file of the shared machinery names a family in its code, `file:line id in "text"`: a word of an
 * identifier, a string, a template's text or a regular expression that is a family's id. Comments are not code
 * (TypeScript's tree holds none). An id that is a shared folder's own name is not looked for: stemsplit's model.json
 * family is `onnx`, the format onnx/ is named after and every file there names.
 */
function familyNames(root: string, ids: readonly string[]): string[] {
  const looked = ids.filter((id) => !SHARED_MACHINERY.includes(id));
  const found: string[] = [];
  const files = SHARED_MACHINERY.filter((folder) => existsSync(join(root, folder))).flatMap((folder) =>
    readdirSync(join(root, folder), { recursive: true, encoding: 'utf8' })
      .filter((name) => name.endsWith('.ts'))
      .map((name) => `${folder}/${name.split('\\').join('/')}`),
  );
  for (const file of files.sort()) {
    const source = ts.createSourceFile(file, readFileSync(join(root, file), 'utf8'), ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node): void => {
      if (
        ts.isIdentifier(node) ||
        ts.isPrivateIdentifier(node) ||
        ts.isStringLiteralLike(node) ||
        ts.isTemplateLiteralToken(node) ||
        ts.isRegularExpressionLiteral(node)
      ) {
        for (const id of wordsOf(node.text).filter((word) => looked.includes(word))) {
          found.push(`${file}:${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1} ${id} in ${JSON.stringify(node.text)}`);
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return found;
}

/** A small tree shaped as src/ is: a list of two family records, an engine of one of them, shared machinery. */
const CLEAN: Readonly<Record<string, string>> = {
  'models/families.ts':
    "import { aFamily } from '../a/family.js';\nimport { bFamily } from '../b/family.js';\nimport { manifestFamily } from '../separation/family.js';\nexport const MODEL_FAMILIES = [aFamily, bFamily, manifestFamily];\n",
  'contract/family.ts': 'export interface ModelFamilyRecord { id: string }\n',
  'a/family.ts':
    "import type { ModelFamilyRecord } from '../models/family.js';\nimport { run } from '../a-engine/engine.js';\nexport const aFamily: ModelFamilyRecord = { id: String(run) };\n",
  'a-engine/engine.ts': "import { shared } from '../a/shared.js';\nimport { tensor } from '../onnx/tensor.js';\nexport const run = [shared, tensor];\n",
  'a/shared.ts': "import { chunk } from '../separation/chunks.js';\nexport const shared = chunk;\n",
  'b/family.ts': "import type { ModelFamilyRecord } from '../models/family.js';\nexport const bFamily: ModelFamilyRecord = { id: 'b' };\n",
  'bundled/family.ts': "import type { ModelFamilyRecord } from '../models/family.js';\nexport const manifestFamily: ModelFamilyRecord = { id: 'manifest' };\n",
  'separation/chunks.ts': 'export const chunk = 1;\n',
  'onnx/tensor.ts': 'export const tensor = 1;\n',
  'api/app.ts': "import { MODEL_FAMILIES } from '../models/families.js';\nexport const app = MODEL_FAMILIES;\n",
  'store/db.ts': 'export const db = 1;\n',
};

function brokenIn(files: Readonly<Record<string, string>>): Map<string, string[]> {
  const root = tree(files);
  const graph = importGraph(root);
  return violations(graph, nevers(graph, familyFolders(graph, root)));
}

describe('the architecture', () => {
  test('the family folders and their engines are read from the list', () => {
    const root = tree(CLEAN);
    const graph = importGraph(root);
    const folders = familyFolders(graph, root);
    assert.deepEqual(folders, { registry: 'models', families: ['a', 'b'] });
    assert.deepEqual(
      [...familyGroups(graph, folders)].map(([family, group]) => [family, [...group].sort()]),
      [
        ['a', ['a', 'a-engine']],
        ['b', ['b']],
      ],
    );
  });

  test('each never catches an import planted against it, and a clean tree breaks none', () => {
    assert.deepEqual([...brokenIn(CLEAN).values()].flat(), []);
    // One planted import per never, in the order nevers() lists them: static, type-only, dynamic, re-export.
    const planted: readonly (readonly [string, string])[] = [
      ['a-engine/db-use.ts', "import { db } from '../store/db.js';\nexport const x = db;\n"],
      ['api/tensor-use.ts', "import type { tensor } from '../onnx/tensor.js';\nexport type X = typeof tensor;\n"],
      ['b/uses-a.ts', "export async function x() { return import('../a/shared.js'); }\n"],
      ['onnx/uses-b.ts', "export { bFamily } from '../b/family.js';\n"],
    ];
    const names = nevers(importGraph(tree(CLEAN)), { registry: 'models', families: ['a', 'b'] }).map((rule) => rule.name);
    assert.equal(planted.length, names.length);
    for (const [index, [file, text]] of planted.entries()) {
      const name = names[index];
      const broken = brokenIn({ ...CLEAN, [file]: text });
      for (const [rule, imports] of broken) {
        if (rule === name) assert.equal(imports.length, 1, `${rule}: catches ${file}`);
        else assert.deepEqual(imports, [], `${rule}: ${file} is not its business`);
      }
    }
    // An engine two families import is neither's alone.
    const shared = brokenIn({ ...CLEAN, 'b/engine-use.ts': "import { run } from '../a-engine/engine.js';\nexport const y = run;\n" });
    assert.ok([...shared.values()].flat().length > 0, 'an engine shared by two families breaks a never');
  });

  test('the family-name check catches a family named in shared code, not in a comment nor in a family', () => {
    const ids = ['alpha', 'beta', 'onnx'];
    const clean = {
      ...CLEAN,
      'separation/normalization.ts':
        "// As alpha's apply_model does, and onnx's: comments say where a formula comes from.\n/** Not alphaNormalization. */\nexport const meanStd = 'onnx';\n",
      'a/alpha.ts': "export const alphaOnly = 'alpha';\n",
    };
    const cleanRoot = tree(clean);
    assert.deepEqual(familyNames(cleanRoot, ids), []);
    // One family name per kind of place: an identifier, a string, a template's text (`\x24{` is its `${`), a property.
    const planted: readonly (readonly [string, string, string])[] = [
      ['separation/normalization.ts', 'export function alphaNormalization() {}\n', 'alpha in "alphaNormalization"'],
      ['onnx/cache.ts', "export function entryDir(folder = 'beta') { return folder; }\n", 'beta in "beta"'],
      ['torch/checkpoint.ts', 'export const allowed = (module: string) => module.startsWith(`\x24{module}.ALPHA.`);\n', 'alpha in ".ALPHA."'],
      ['dsp/stft.ts', 'export const betaWindow = { Beta2: /beta/ };\n', 'beta in "betaWindow"'],
      ['split-worker/run.ts', 'export const x = { beta_shifts: 1 };\n', 'beta in "beta_shifts"'],
    ];
    for (const [file, text, expected] of planted) {
      const root = tree({ ...clean, [file]: text });
      const found = familyNames(root, ids);
      assert.ok(found.length > 0 && found.every((hit) => hit.startsWith(`${file}:`)), `${file}: ${found.join('; ')}`);
      assert.ok(found[0]?.endsWith(expected), `${file}: ${found[0]} names ${expected}`);
    }
  });

  test('the shared machinery names no family in its code', () => {
    const ids = MODEL_FAMILIES.map((family) => family.id);
    for (const id of ids) assert.deepEqual(wordsOf(id), [id], `a family id is one lowercase word: ${id}`);
    assert.deepEqual(familyNames('src', ids), []);
  });

  test('src/ keeps every never', () => {
    const graph = importGraph('src');
    const folders = familyFolders(graph, 'src');
    assert.equal(folders.families.length, MODEL_FAMILIES.length, `one folder a record: ${folders.families.join(', ')}`);
    const broken = violations(graph, nevers(graph, folders));
    for (const [rule, imports] of broken) assert.deepEqual(imports, [], rule);
  });
});
