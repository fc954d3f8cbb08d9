/**
 * Builds the standalone executable `dist/stemsplit-linux-x64` (Node's single executable
 * applications): one file that runs every stemsplit command on a machine without Node, npm or ffmpeg.
 *
 *   npm run build:exe [-- --node /path/to/node] [-- --out dist/stemsplit-linux-x64]
 *
 * 1. esbuild bundles src/sea/entry.ts and everything it imports into one CommonJS script; the
 *    two places that load a native addon are rewritten to `requireNative` (src/sea/native.ts).
 * 2. ffmpeg, the better-sqlite3 and onnxruntime-node addons (with libonnxruntime) and models/
 *    become brotli-compressed SEA assets, listed in a manifest (src/sea/manifest.ts) that names
 *    the runtime dir by a hash of their contents. Compressed files are cached under
 *    node_modules/.cache/stemsplit-exe, so a rebuild with unchanged natives takes seconds.
 * 3. The node binary doing the build (or --node) makes the SEA blob (with V8 code cache), is
 *    copied, stripped of its debug symbols when `strip` exists, and gets the blob injected by postject.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, posix, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { brotliCompress, constants as zlib } from 'node:zlib';
import { build, type Plugin } from 'esbuild';
import { MANIFEST_ASSET, RUNTIME_LAYOUT, type RuntimeFile, type RuntimeManifest } from '../src/sea/manifest.js';
import { VERSION } from '../src/version.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const requireFromRoot = createRequire(join(ROOT, 'package.json'));
/** The fuse Node checks to know a blob was injected (`:0` in a plain node binary). */
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';
/** Quality 5 with a 16 MiB window: ffmpeg 68 → 20 MB, libonnxruntime 46 → 15 MB in ~8 s each; 9+ takes minutes for ~1 MB less. */
const BROTLI_PARAMS = { [zlib.BROTLI_PARAM_QUALITY]: 5, [zlib.BROTLI_PARAM_LGWIN]: 24 };
const COMPRESSION_CACHE = join(ROOT, 'node_modules', '.cache', 'stemsplit-exe');
const NATIVE_MODULE = join(ROOT, 'src', 'sea', 'native.ts');

/** One file of the runtime: where it goes in the runtime dir and where it comes from. */
interface RuntimeSource {
  readonly path: string;
  readonly source: string;
  readonly mode: number;
}

interface PackedFile extends RuntimeFile {
  /** sha256 of the uncompressed bytes. */
  readonly contentHash: string;
  readonly compressedFile: string;
  readonly compressedSize: number;
}

function packageDir(name: string): string {
  return dirname(requireFromRoot.resolve(`${name}/package.json`));
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && !entry.name.startsWith('.'))
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)).split(sep).join('/'))
    .sort();
}

/** onnxruntime-node's binding and the libonnxruntime it loads from its own folder. */
function onnxruntimeDir(): string {
  const bin = join(packageDir('onnxruntime-node'), 'bin');
  const napi = readdirSync(bin).filter((name) => /^napi-v\d+$/.test(name));
  const dir = join(bin, napi[0] ?? 'napi-v?', 'linux', 'x64');
  if (napi.length !== 1 || !existsSync(join(dir, posix.basename(RUNTIME_LAYOUT.ortAddon)))) {
    throw new Error(`expected one onnxruntime-node binding under ${bin}/napi-v*/linux/x64`);
  }
  return dir;
}

function runtimeSources(splitWorker: string): RuntimeSource[] {
  const ffmpeg = (requireFromRoot('@ffmpeg-installer/ffmpeg') as { path: string }).path;
  const sqliteAddon = join(packageDir('better-sqlite3'), 'build', 'Release', 'better_sqlite3.node');
  const ortDir = onnxruntimeDir();
  const modelsDir = join(ROOT, 'models');
  return [
    { path: RUNTIME_LAYOUT.ffmpeg, source: ffmpeg, mode: 0o755 },
    { path: RUNTIME_LAYOUT.splitWorker, source: splitWorker, mode: 0o644 },
    { path: RUNTIME_LAYOUT.sqliteAddon, source: sqliteAddon, mode: 0o755 },
    ...filesUnder(ortDir).map((name) => ({ path: `${posix.dirname(RUNTIME_LAYOUT.ortAddon)}/${name}`, source: join(ortDir, name), mode: 0o755 })),
    ...filesUnder(modelsDir).map((name) => ({ path: `${RUNTIME_LAYOUT.modelsDir}/${name}`, source: join(modelsDir, name), mode: 0o644 })),
  ];
}

function sha256(bytes: Uint8Array | string): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Compresses one file, or takes the cached result for identical bytes. */
async function pack(file: RuntimeSource): Promise<PackedFile> {
  const bytes = readFileSync(file.source);
  const contentHash = sha256(bytes);
  const compressedFile = join(COMPRESSION_CACHE, `${contentHash}.q${BROTLI_PARAMS[zlib.BROTLI_PARAM_QUALITY]}.br`);
  if (!existsSync(compressedFile)) {
    const compressed = await promisify(brotliCompress)(bytes, { params: { ...BROTLI_PARAMS, [zlib.BROTLI_PARAM_SIZE_HINT]: bytes.length } });
    const partial = `${compressedFile}.${process.pid}.partial`;
    writeFileSync(partial, compressed);
    renameSync(partial, compressedFile);
  }
  return {
    path: file.path,
    asset: `${file.path}.br`,
    size: bytes.length,
    mode: file.mode,
    contentHash,
    compressedFile,
    compressedSize: statSync(compressedFile).size,
  };
}

/** Names the runtime dir: any change to a file's bytes, place or mode gives a new dir. */
function runtimeHash(files: readonly PackedFile[]): string {
  return sha256(files.map((f) => `${f.path}\0${f.mode.toString(8)}\0${f.contentHash}\n`).join('')).slice(0, 16);
}

/** The two native loads in the bundle, rewritten to load from the unpacked runtime dir. */
function nativeAddonsPlugin(): Plugin {
  const load = (path: string) => `require(${JSON.stringify(NATIVE_MODULE)}).requireNative(${JSON.stringify(path)})`;
  return {
    name: 'stemsplit-native-addons',
    setup(esbuild) {
      // better-sqlite3: `require('bindings')('better_sqlite3.node')`.
      esbuild.onResolve({ filter: /^bindings$/ }, (args) => {
        if (!/[\\/]better-sqlite3[\\/]/.test(args.importer)) throw new Error(`unexpected native addon loader in ${args.importer}`);
        return { path: 'better-sqlite3-bindings', namespace: 'stemsplit-native' };
      });
      esbuild.onLoad({ filter: /.*/, namespace: 'stemsplit-native' }, () => ({
        contents: `module.exports = function bindings(name) {
          if (name !== 'better_sqlite3.node') throw new Error('unexpected better-sqlite3 addon ' + name);
          return ${load(RUNTIME_LAYOUT.sqliteAddon)};
        };`,
        loader: 'js',
        resolveDir: ROOT,
      }));
      // onnxruntime-node: require(`../bin/napi-v6/${process.platform}/${process.arch}/onnxruntime_binding.node`).
      esbuild.onLoad({ filter: /[\\/]onnxruntime-node[\\/]dist[\\/]binding\.js$/ }, (args) => {
        const source = readFileSync(args.path, 'utf8');
        const addonRequire = /require\(`\.\.\/bin\/napi-v\d+\/\$\{process\.platform\}\/\$\{process\.arch\}\/onnxruntime_binding\.node`\)/;
        if (!addonRequire.test(source)) throw new Error(`onnxruntime-node changed how ${args.path} loads its addon: update scripts/build-exe.ts`);
        return { contents: source.replace(addonRequire, load(RUNTIME_LAYOUT.ortAddon)), loader: 'js', resolveDir: dirname(args.path) };
      });
    },
  };
}

async function bundle(entry: string, outfile: string): Promise<void> {
  const result = await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    // Not minified: start-up is the same either way (V8 code cache), and stack traces stay readable.
    minify: false,
    legalComments: 'none',
    // CommonJS has no import.meta: give modules that use it (for paths beside the package) the executable's URL.
    define: { 'import.meta.url': 'STEMSPLIT_IMPORT_META_URL' },
    banner: { js: 'var STEMSPLIT_IMPORT_META_URL = require("node:url").pathToFileURL(__filename).href;' },
    plugins: [nativeAddonsPlugin()],
    logLevel: 'warning',
  });
  if (result.errors.length > 0) throw new Error('esbuild failed');
}

/** The node binary to inject into: a real ELF executable with an unused SEA fuse, never a wrapper script. */
function checkNodeBinary(path: string): string {
  const binary = realpathSync(path);
  const bytes = readFileSync(binary);
  if (bytes.subarray(0, 4).toString('latin1') !== '\x7fELF') throw new Error(`${binary} is not an ELF executable (a wrapper script?): pass --node`);
  if (!bytes.includes(`${SEA_FUSE}:0`)) throw new Error(`${binary} has no unused SEA fuse: it is not a plain Node.js ≥ 20.12 binary`);
  return binary;
}

/** The newest glibc symbol version the node binary and the addons ask for: the oldest glibc the executable runs on. */
function glibcFloor(files: readonly string[]): string {
  let minor = 0;
  for (const file of files) {
    for (const match of readFileSync(file)
      .toString('latin1')
      .matchAll(/GLIBC_2\.(\d+)/g))
      minor = Math.max(minor, Number(match[1]));
  }
  return `2.${minor}`;
}

function run(command: string, args: readonly string[], options: { cwd?: string } = {}): { ok: boolean; output: string } {
  const result = spawnSync(command, [...args], { cwd: options.cwd, encoding: 'utf8', maxBuffer: 64 << 20 });
  return { ok: result.status === 0, output: `${result.stdout ?? ''}${result.stderr ?? ''}${result.error ? String(result.error) : ''}` };
}

function mustRun(command: string, args: readonly string[], options: { cwd?: string } = {}): void {
  const result = run(command, args, options);
  if (!result.ok) throw new Error(`${command} ${args.join(' ')} failed:\n${result.output}`);
}

function megabytes(bytes: number): string {
  return `${(bytes / 1e6).toFixed(1)} MB`;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { node: { type: 'string', default: process.execPath }, out: { type: 'string', default: join(ROOT, 'dist', 'stemsplit-linux-x64') } },
  });
  if (process.platform !== 'linux' || process.arch !== 'x64') throw new Error('the executable builds on linux-x64 only');
  const started = performance.now();
  const step = (what: string) => console.log(`[${((performance.now() - started) / 1000).toFixed(1)} s] ${what}`);
  const nodeBinary = checkNodeBinary(values.node);
  const out = resolve(values.out);
  mkdirSync(dirname(out), { recursive: true });
  mkdirSync(COMPRESSION_CACHE, { recursive: true });
  const work = mkdtempSync(join(dirname(out), '.build-exe-'));
  try {
    step('bundling src/sea/entry.ts and src/split-worker/worker-process.ts');
    const script = join(work, 'stemsplit.cjs');
    await bundle(join(ROOT, 'src', 'sea', 'entry.ts'), script);
    // Split jobs run in worker processes of the executable, which load this script: it is unpacked with the natives.
    const splitWorker = join(work, RUNTIME_LAYOUT.splitWorker);
    await bundle(join(ROOT, 'src', 'split-worker', 'worker-process.ts'), splitWorker);

    step('compressing ffmpeg, native addons and models');
    const sources = runtimeSources(splitWorker);
    const packed = await Promise.all(sources.map(pack));
    const manifest: RuntimeManifest = {
      version: VERSION,
      hash: runtimeHash(packed),
      files: packed.map(({ path, asset, size, mode }) => ({ path, asset, size, mode })),
    };
    writeFileSync(join(work, MANIFEST_ASSET), JSON.stringify(manifest));

    step(`making the SEA blob with ${nodeBinary}`);
    const blob = join(work, 'sea.blob');
    const assets = Object.fromEntries([[MANIFEST_ASSET, join(work, MANIFEST_ASSET)], ...packed.map((f) => [f.asset, f.compressedFile])]);
    // The blob comes from the node binary it goes into. Code cache: warm --version 128 → 87 ms; a startup
    // snapshot won ~10 ms more, not worth freezing module state at build time (docs/benchmarks.md).
    const seaConfig = { main: script, output: blob, disableExperimentalSEAWarning: true, useCodeCache: true, useSnapshot: false, assets };
    writeFileSync(join(work, 'sea-config.json'), JSON.stringify(seaConfig, null, 2));
    mustRun(nodeBinary, ['--experimental-sea-config', join(work, 'sea-config.json')], { cwd: work });

    const executable = join(work, 'stemsplit');
    copyFileSync(nodeBinary, executable);
    chmodSync(executable, 0o755);
    // Node ships with its symbol table (~13 MB); the executable does not need it. Optional: no strip, a bigger file.
    const stripped = run('strip', [executable]);
    step(stripped.ok ? 'stripped the node binary' : 'strip unavailable: keeping the node binary as it is');

    step('injecting the blob (postject)');
    mustRun(process.execPath, [requireFromRoot.resolve('postject/dist/cli.js'), executable, 'NODE_SEA_BLOB', blob, '--sentinel-fuse', SEA_FUSE]);
    renameSync(executable, out);

    step(`wrote ${out}: ${megabytes(statSync(out).size)}`);
    for (const file of packed) {
      if (file.size > 1e6) console.log(`  ${file.path.padEnd(40)} ${megabytes(file.size).padStart(9)} → ${megabytes(file.compressedSize)}`);
    }
    console.log(`  bundle ${megabytes(statSync(script).size)}, runtime dir ${VERSION}-${manifest.hash}`);
    const dynamic = [nodeBinary, ...sources.filter((f) => /\.(node|so(\.\d+)*)$/.test(f.path)).map((f) => f.source)];
    console.log(`  needs glibc ≥ ${glibcFloor(dynamic)} and libstdc++ on the target machine`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
