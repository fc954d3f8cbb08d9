/**
 * Checks that no file under src/ takes part in a circle of imports (static, type-only or dynamic), nor any folder:
 * every file and folder imports only downward. Prints each circle with one path that closes it; exits 1 when there is any.
 *
 *   node --import tsx scripts/import-cycles.ts [--root src]
 *
 * test/import-cycles.test.ts runs the same check in the test suite.
 */
import { parseArgs } from 'node:util';
import { folderCycles, folderGraph, importCycles, importGraph } from '../test/support/import-graph.js';

const { values } = parseArgs({ options: { root: { type: 'string', default: 'src' } } });
const graph = importGraph(values.root);
const cycles = importCycles(graph);
for (const cycle of cycles) {
  console.log(`${cycle.files.length} files in a circle: ${cycle.path.join(' → ')}`);
  if (cycle.files.length > cycle.path.length - 1) console.log(`  the circle's files: ${cycle.files.join(', ')}`);
}
console.log(cycles.length === 0 ? `no import cycle under ${values.root}/` : `${cycles.length} import cycle(s) under ${values.root}/`);
// Folders in a circle (issue 50): each pair that imports each other with the imports that close it, then every circle.
for (const pair of folderCycles(graph)) console.log(`folders ${pair.folders.join(' ⇄ ')}: ${pair.imports.join('; ')}`);
const folderCircles = importCycles(folderGraph(graph));
for (const circle of folderCircles) console.log(`folders in a circle: ${circle.path.join(' → ')}`);
console.log(folderCircles.length === 0 ? `no folder of ${values.root}/ imports one that imports it back` : `${folderCircles.length} circle(s) of folders`);
process.exitCode = cycles.length === 0 && folderCircles.length === 0 ? 0 : 1;
