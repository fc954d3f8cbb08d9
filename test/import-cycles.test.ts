/**
 * No circle of imports under src/: every file imports only downward (static, type-only and dynamic imports all
 * count), and so does every folder. The same checks as `node --import tsx scripts/import-cycles.ts`, first shown
 * to find circles they must find.
 *
 * @tier quick
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { folderCycles, folderGraph, importCycles, importGraph, scratchTree as tree } from './support/import-graph.js';

describe('import cycles', () => {
  test('finds a circle of type-only, dynamic and re-export imports, through an index file', () => {
    const root = tree({
      'a/index.ts': "export { b } from './b.js';\n",
      'a/b.ts': "import type { C } from '../c.js';\nexport const b = 1 as unknown as C;\n",
      'c.ts': "export type C = number;\nexport async function load() { return import('./a/index.js'); }\n",
      'leaf.ts': "import { readFileSync } from 'node:fs';\nimport { b } from './a/index.js';\nexport const leaf = [readFileSync, b];\n",
    });
    const cycles = importCycles(importGraph(root));
    assert.deepEqual(
      cycles.map((cycle) => cycle.files),
      [['a/b.ts', 'a/index.ts', 'c.ts']],
    );
    assert.deepEqual(cycles[0]?.path, ['a/b.ts', 'c.ts', 'a/index.ts', 'a/b.ts']);
  });

  test('a file that imports itself is a circle; a tree with none has none', () => {
    assert.deepEqual(
      importCycles(importGraph(tree({ 'self.ts': "import './self.js';\n" }))).map((c) => c.files),
      [['self.ts']],
    );
    assert.deepEqual(importCycles(importGraph(tree({ 'up.ts': "import './down.js';\n", 'down.ts': 'export {};\n' }))), []);
  });

  test('finds two folders that import each other, though no file is in a circle', () => {
    const root = tree({
      'a/top.ts': "import { low } from '../b/low.js';\nexport const top = low;\n",
      'a/base.ts': 'export const base = 1;\n',
      'b/low.ts': "import { base } from '../a/base.js';\nexport const low = base;\n",
      'c/leaf.ts': "import { top } from '../a/top.js';\nexport const leaf = top;\n",
    });
    const graph = importGraph(root);
    assert.deepEqual(importCycles(graph), []);
    assert.deepEqual(folderCycles(graph), [{ folders: ['a', 'b'], imports: ['a/top.ts → b/low.ts', 'b/low.ts → a/base.ts'] }]);
    assert.deepEqual(
      importCycles(folderGraph(graph)).map((cycle) => cycle.files),
      [['a', 'b']],
    );
  });

  test('finds three folders in a circle, though no two import each other', () => {
    const root = tree({
      'a/one.ts': "import { two } from '../b/two.js';\nexport const one = two;\n",
      'b/two.ts': "import { three } from '../c/three.js';\nexport const two = three;\n",
      'c/three.ts': "import { base } from '../a/base.js';\nexport const three = base;\n",
      'a/base.ts': 'export const base = 1;\n',
    });
    const graph = importGraph(root);
    assert.deepEqual(folderCycles(graph), []);
    assert.deepEqual(
      importCycles(folderGraph(graph)).map((cycle) => cycle.path.join(' → ')),
      ['a → b → c → a'],
    );
  });

  test('no folder of src/ imports a folder that imports it back, directly or through others (issue 50)', () => {
    const circles = importCycles(folderGraph(importGraph('src')));
    assert.deepEqual(
      circles.map((cycle) => cycle.path.join(' → ')),
      [],
    );
  });

  test('no file under src/ is in a circle of imports', () => {
    const graph = importGraph('src');
    assert.ok(graph.size > 100, `read the source tree (${graph.size} files)`);
    const cycles = importCycles(graph);
    assert.deepEqual(
      cycles.map((cycle) => cycle.path.join(' → ')),
      [],
    );
  });
});
