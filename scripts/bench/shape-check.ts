/**
 * What checking a checkpoint's shapes before it is hashed costs and saves (issue 37: "a model's
 * weights are not read twice to find out it is bad"). For each model file, loaded in this process
 * as the split worker loads models (registry, loaders, the worker's refusal), in a fresh converter cache:
 *
 * - a copy with one weight a row short (test/support/hostile/misshaped.ts): time to the refusal and the
 *   bytes this process read meanwhile (/proc/self/io `rchar`), against the file's size;
 * - the valid file, loaded twice: the first load converts (cache miss), the second finds the
 *   conversion (cache hit, the dry build against stand-in weights included); time and bytes read;
 * - for an HTDemucs package, the parts of a cache hit on their own: the structure check (pickle,
 *   views), the graph built against stand-in weights, and the SHA-256 of the file.
 *
 *   node --import tsx scripts/bench/shape-check.ts FILE…   (an MSST checkpoint's .yaml, a VR .pth's .json beside it)
 */
import { copyFileSync, existsSync, readFileSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { mkdtempSync } from 'node:fs';
import { writeMisshaped } from '../../test/support/hostile/misshaped.js';
import { parseHTDemucsConfig } from '../../src/demucs/config.js';
import { buildHTDemucsGraph } from '../../src/demucs/htdemucs-graph.js';
import { describeError } from '../../src/errors.js';
import { modelLoader } from '../../src/models/loaders.js';
import { ModelRegistry } from '../../src/models/registry.js';
import { sha256File } from '../../src/model-files/sha256.js';
import { loadNamed } from '../../src/split-worker/load-refusal.js';
import { checkDemucsCheckpoint } from '../../src/demucs/checkpoint.js';

const files = process.argv.slice(2);
if (files.length === 0) throw new Error('usage: shape-check.ts FILE…');

const bytesRead = (): number => Number(/^rchar: (\d+)$/m.exec(readFileSync('/proc/self/io', 'utf8'))?.[1]);
const mb = (bytes: number): string => `${(bytes / 2 ** 20).toFixed(2)} MB`;

/** Runs `work` and reports its time and the bytes read meanwhile. */
async function measured<T>(work: () => Promise<T> | T): Promise<{ value: T; seconds: number; read: number }> {
  const before = bytesRead();
  const started = performance.now();
  const value = await work();
  return { value, seconds: (performance.now() - started) / 1000, read: bytesRead() - before };
}

/** A copy of `file` and what lies beside it (same stem) in a folder of its own. */
function copyWithBeside(file: string, dir: string, write: (from: string, to: string) => void): string {
  const target = join(dir, basename(file));
  const stem = (path: string) => path.replace(/\.[^.]+$/, '');
  for (const extension of ['.yaml', '.yml', '.json']) if (existsSync(stem(file) + extension)) copyFileSync(stem(file) + extension, stem(target) + extension);
  write(file, target);
  return target;
}

console.log(
  `# ${new Date().toISOString()}, load average ${loadavg()
    .map((x) => x.toFixed(1))
    .join(' ')}`,
);
for (const file of files) {
  const work = mkdtempSync(join(tmpdir(), 'stemsplit-shape-check-'));
  const cacheDir = join(work, 'cache');
  const registry = new ModelRegistry({ bundledDir: join(work, 'no-bundled'), cacheDir, aliases: { '4s': [], '6s': [] } });
  const size = statSync(file).size;
  const load = async (path: string, loaders = modelLoader({ cacheDir, intraOpThreads: 1 })): Promise<string> => {
    try {
      await (await loadNamed(registry.resolveModel(path), loaders)).dispose();
      return 'loaded';
    } catch (error) {
      return `refused: ${describeError(error)}`;
    }
  };
  const bad = copyWithBeside(file, join(mkdtempSync(join(work, 'bad-')), ''), (from, to) => void writeMisshaped(from, to));
  await load(bad); // imports the family's modules, which read their sources
  const refusal = await measured(() => load(bad));
  console.log(`${basename(file)} (${mb(size)}): misshaped copy ${refusal.value.slice(0, 160)}`);
  console.log(`  refused in ${refusal.seconds.toFixed(3)} s having read ${mb(refusal.read)} (${((100 * refusal.read) / size).toFixed(1)} % of the file)`);
  const good = copyWithBeside(file, mkdtempSync(join(work, 'good-')), copyFileSync);
  const miss = await measured(() => load(good));
  const hit = await measured(() => load(good));
  console.log(`  valid, first load (converts): ${miss.value}, ${miss.seconds.toFixed(2)} s, read ${mb(miss.read)}`);
  console.log(`  valid, second load (cache hit): ${hit.value}, ${hit.seconds.toFixed(2)} s, read ${mb(hit.read)}`);
  if (!/\.th$/.test(file)) continue;
  const structure = await measured(() => checkDemucsCheckpoint(good));
  if (structure.value.klass !== 'demucs.htdemucs.HTDemucs') continue;
  const dry = await measured(() => buildHTDemucsGraph(parseHTDemucsConfig(structure.value.kwargs), structure.value.state));
  const hash = await measured(() => sha256File(good));
  console.log(
    `  HTDemucs parts of a cache hit: structure ${structure.seconds.toFixed(3)} s (read ${mb(structure.read)}), graph against stand-ins ${dry.seconds.toFixed(3)} s, SHA-256 ${hash.seconds.toFixed(3)} s (read ${mb(hash.read)})`,
  );
}
