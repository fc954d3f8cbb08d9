/**
 * Checks that no file under src/ takes part in a circle of imports (static, type-only or dynamic): every file
 * imports only downward. Prints each circle with one path that closes it; exits 1 when there is any.
 *
 *   node --import tsx scripts/import-cycles.ts [--root src]
 *
 * test/import-cycles.test.ts runs the same check in the test suite.
 */
import { parseArgs } from 'node:util';
import { folderCycles, importCycles, importGraph } from '../test/support/import-graph.js';

const { values } = parseArgs({ options: { root: { type: 'string', default: 'src' } } });
const graph = importGraph(values.root);
const cycles = importCycles(graph);
for (const cycle of cycles) {
  console.log(`${cycle.files.length} files in a circle: ${cycle.path.join(' → ')}`);
  if (cycle.files.length > cycle.path.length - 1) console.log(`  the circle's files: ${cycle.files.join(', ')}`);
}
console.log(cycles.length === 0 ? `no import cycle under ${values.root}/` : `${cycles.length} import cycle(s) under ${values.root}/`);
// Folders that import each other (issue 50): reported, not yet failed on, while the last pairs are untangled.
for (const pair of folderCycles(graph)) console.log(`folders ${pair.folders.join(' ⇄ ')}: ${pair.imports.join('; ')}`);
process.exitCode = cycles.length === 0 ? 0 : 1;
