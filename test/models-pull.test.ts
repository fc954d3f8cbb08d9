/**
 * `models pull` / `models remove` against a real HTTP server on loopback. The server runs in a
 * worker thread (this same file), so it keeps answering while `runCli` blocks the main thread.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { isAbsolute, join } from 'node:path';
import { after, before, test } from 'node:test';
import { isMainThread, parentPort, Worker } from 'node:worker_threads';
import { buildProgram } from '../src/cli/program.js';
import type { ConfigInput } from '../src/config.js';
import { resolveConfig } from '../src/config.js';
import { loadDemucs, parseBagFile, resolveMember } from '../src/demucs/index.js';
import { listingTable, type TimedListing } from '../src/cli/commands/models.js';
import { catalogModel, MODEL_CATALOG, type CatalogModel } from '../src/models/catalog.js';
import { msstModelType, readMsstDocument, type MsstModelType } from '../src/msst/config.js';
import { pullModel, removeModel, type DownloadProgress } from '../src/models/pull.js';
import { bagYaml, expectedHashPrefix } from '../src/demucs/family.js';
import { DEMUCS_CATALOG, type DemucsCatalogModel } from '../src/demucs/catalog.js';
import { MDX_CATALOG, type MdxCatalogModel } from '../src/mdx/catalog.js';
import { uvrModelHash } from '../src/mdx/model-data.js';
import { isEnsembleRef, modelDir, ModelRegistry } from '../src/models/registry.js';
import { runCli, spawnCli } from './support/process.js';
import { writeSong } from './support/audio.js';
import { rejectsWith } from './support/assertions.js';
import { fixtureDir } from './support/fixtures.js';
import { tempDir } from './support/server.js';
import { until } from './support/wait.js';

/** The Demucs fixtures two tests read (undefined in a clone without ../shared: those tests skip). */
const demucsFixtures = isMainThread ? fixtureDir('demucs') : undefined;
/** The SCNet fixtures (an MSST checkpoint + yaml) and an MDX-Net `.onnx` a pull can serve. */
const msstFixtures = isMainThread ? fixtureDir('msst') : undefined;
const mdxFixtures = isMainThread ? fixtureDir('mdx') : undefined;

// ---------------------------------------------------------------- the file server (worker side)

interface ServedFile {
  readonly bytes: Uint8Array;
  /** The next response sends the file up to this offset, then cuts the connection or stalls. */
  interruptAt?: number | undefined;
  interruptBy?: 'cut' | 'stall' | undefined;
  /** Answers 200 with the whole file whatever Range asks. */
  readonly ignoreRange?: boolean;
}

interface RequestRecord {
  readonly path: string;
  readonly range: string | null;
}

type Control = { id: number; type: 'put'; name: string; file: ServedFile } | { id: number; type: 'log' };

function respond(file: ServedFile, rangeHeader: string | undefined, res: http.ServerResponse): void {
  const size = file.bytes.length;
  const range = file.ignoreRange ? null : /^bytes=(\d+)-$/.exec(rangeHeader ?? '');
  const start = range ? Number(range[1]) : 0;
  if (start >= size && range) {
    res.writeHead(416, { 'content-range': `bytes */${size}` }).end();
    return;
  }
  if (range) res.writeHead(206, { 'content-length': size - start, 'content-range': `bytes ${start}-${size - 1}/${size}` });
  else res.writeHead(200, { 'content-length': size });
  const stop = file.interruptAt;
  if (stop === undefined || stop <= start) {
    res.end(file.bytes.subarray(start));
    return;
  }
  file.interruptAt = undefined;
  // The cut is a FIN after the bytes sent (the client reads them all, then meets the end short of
  // content-length, as with a dropped connection); a stall sends nothing more and keeps the socket open.
  res.write(file.bytes.subarray(start, stop), () => {
    if (file.interruptBy !== 'stall') res.socket?.end();
  });
}

function serveFiles(port: NonNullable<typeof parentPort>): void {
  const files = new Map<string, ServedFile>();
  const log: RequestRecord[] = [];
  const server = http.createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://loopback').pathname;
    log.push({ path, range: req.headers.range ?? null });
    if (path.startsWith('/moved/')) {
      res.writeHead(302, { location: `/files/${path.slice('/moved/'.length)}` }).end();
      return;
    }
    const file = path.startsWith('/files/') ? files.get(path.slice('/files/'.length)) : undefined;
    if (file === undefined) res.writeHead(404).end('no such file');
    else respond(file, req.headers.range, res);
  });
  server.listen(0, '127.0.0.1', () => port.postMessage({ type: 'ready', port: (server.address() as AddressInfo).port }));
  port.on('message', (message: Control) => {
    if (message.type === 'put') files.set(message.name, message.file);
    port.postMessage({ type: 'reply', id: message.id, log: message.type === 'log' ? log : undefined });
  });
}

// ---------------------------------------------------------------- the file server (test side)

class FileServerThread {
  #nextId = 0;
  readonly #pending = new Map<number, (log: RequestRecord[]) => void>();

  private constructor(
    private readonly worker: Worker,
    readonly origin: string,
  ) {
    worker.on('message', (message: { type: string; id: number; log: RequestRecord[] }) => {
      if (message.type === 'reply') this.#pending.get(message.id)?.(message.log);
    });
  }

  static async start(): Promise<FileServerThread> {
    // A worker does not inherit tsx's loader hooks: it registers them before importing this file.
    const tsx = JSON.stringify(import.meta.resolve('tsx/esm/api'));
    const boot = `import(${tsx}).then((api) => { api.register(); return import(${JSON.stringify(import.meta.url)}); })`;
    const worker = new Worker(boot, { eval: true });
    const port = await new Promise<number>((resolve, reject) => {
      worker.once('message', (message: { port: number }) => resolve(message.port));
      worker.once('error', reject);
    });
    return new FileServerThread(worker, `http://127.0.0.1:${port}`);
  }

  get filesUrl(): string {
    return `${this.origin}/files/`;
  }

  #call(message: Record<string, unknown>): Promise<RequestRecord[]> {
    const id = this.#nextId++;
    return new Promise((resolve) => {
      this.#pending.set(id, resolve);
      this.worker.postMessage({ ...message, id });
    });
  }

  async put(name: string, file: ServedFile): Promise<void> {
    await this.#call({ type: 'put', name, file });
  }

  /** Every request so far for `name`. */
  async requestsFor(name: string): Promise<RequestRecord[]> {
    return (await this.#call({ type: 'log' })).filter((r) => r.path.endsWith(`/${name}`));
  }

  async close(): Promise<void> {
    await this.worker.terminate();
  }
}

if (!isMainThread && parentPort) serveFiles(parentPort);

// ---------------------------------------------------------------- tests

const FOUR = ['drums', 'bass', 'other', 'vocals'];
const MB = 1 << 20;

function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Random bytes and the released-style name `<signature>-<sha8>.th` they deserve. */
function checkpoint(signature: string, size: number): { name: string; bytes: Buffer } {
  const bytes = randomBytes(size);
  return { name: `${signature}-${sha256(bytes).slice(0, 8)}.th`, bytes };
}

function singleModel(name: string, file: string): CatalogModel {
  return { name, family: 'demucs', description: 'test', terms: 'test terms', sources: FOUR, files: [file] };
}

function cliEnv(server: FileServerThread, dir = tempDir()): Record<string, string> {
  return { STEMSPLIT_DATA_DIR: join(dir, 'data'), STEMSPLIT_CACHE_DIR: join(dir, 'cache'), STEMSPLIT_MODELS_BASE_URL: server.filesUrl };
}

/** The one `stemsplit:` error line a failing command printed. */
function errorLine(stderr: string): string {
  const lines = stderr.split('\n').filter((line) => line.startsWith('stemsplit:'));
  assert.equal(lines.length, 1, stderr);
  return lines[0] as string;
}

if (isMainThread) {
  let server: FileServerThread;
  before(async () => {
    server = await FileServerThread.start();
  });
  after(async () => {
    await server.close();
  });

  test('pull downloads a checkpoint, reports progress and leaves no partial file', async () => {
    const { name, bytes } = checkpoint('a1b2c3d4', 3 * MB + 17);
    await server.put(name, { bytes });
    const cacheDir = tempDir();
    const progress: DownloadProgress[] = [];
    const result = await pullModel(singleModel('one', name), { cacheDir, baseUrl: server.filesUrl, onProgress: (p) => progress.push(p) });
    const path = join(modelDir(cacheDir, 'demucs'), name);
    assert.equal(result.path, path);
    assert.deepEqual(readFileSync(path), bytes);
    assert.deepEqual(readdirSync(modelDir(cacheDir, 'demucs')), [name]);
    assert.deepEqual(
      result.downloaded.map((d) => [d.resumedFrom, d.bytes]),
      [[0, bytes.length]],
    );
    assert.ok(progress.length > 1, 'progress is reported while the body arrives');
    assert.ok(progress.every((p, i) => p.total === bytes.length && (i === 0 || p.received > (progress[i - 1] as DownloadProgress).received)));
    assert.equal(progress.at(-1)?.received, bytes.length);

    const again = await pullModel(singleModel('one', name), { cacheDir, baseUrl: server.filesUrl });
    assert.deepEqual([again.downloaded.length, again.present], [0, [name]], 'an installed file is not fetched again');
    assert.equal((await server.requestsFor(name)).length, 1);
  });

  test('a RoFormer pull fetches checkpoint and config from their own addresses, checks a published hash and records a missing one', async () => {
    const ckpt = randomBytes(MB + 3);
    const yaml = Buffer.from('model:\n  dim: 8\n');
    await server.put('ro.ckpt', { bytes: ckpt });
    await server.put('ro.yaml', { bytes: yaml });
    const model: CatalogModel = {
      name: 'ro-test',
      family: 'msst',
      description: 'test roformer',
      terms: 'not stated',
      sources: ['vocals', 'no_vocals'],
      files: ['ro.ckpt', 'ro.yaml'],
      downloads: [
        { file: 'ro.ckpt', url: `${server.filesUrl}ro.ckpt`, hashSource: 'none published' },
        { file: 'ro.yaml', url: `${server.filesUrl}ro.yaml`, sha256: sha256(yaml), hashSource: 'pinned' },
      ],
    };
    const cacheDir = tempDir();
    const result = await pullModel(model, { cacheDir });
    const dir = modelDir(cacheDir, 'msst');
    assert.equal(result.path, join(dir, 'ro.ckpt'));
    assert.deepEqual(readFileSync(join(dir, 'ro.ckpt')), ckpt);
    assert.equal(readFileSync(join(dir, 'ro.ckpt.sha256'), 'utf8'), `${sha256(ckpt)}  ro.ckpt\n`, 'the unpublished hash is recorded');
    assert.deepEqual(
      result.downloaded.map((d) => d.sha256),
      [sha256(ckpt), sha256(yaml)],
    );

    await server.put('bad.yaml', { bytes: Buffer.from('tampered') });
    const tampered: CatalogModel = {
      ...model,
      name: 'ro-bad',
      files: ['ro.ckpt', 'bad.yaml'],
      downloads: [model.downloads?.[0] as never, { file: 'bad.yaml', url: `${server.filesUrl}bad.yaml`, sha256: sha256(yaml), hashSource: 'pinned' }],
    };
    await rejectsWith(pullModel(tampered, { cacheDir }), 'DOWNLOAD_FAILED', /bad\.yaml .* has SHA-256 .* expected/);
    assert.equal(existsSync(join(dir, 'bad.yaml')), false);

    const removed = await removeModel(model, cacheDir);
    assert.deepEqual(removed.sort(), ['ro.ckpt', 'ro.ckpt.sha256', 'ro.yaml'].map((f) => join(dir, f)).sort());
  });

  test('models list shows the family and terms of every model in a table; --json has the full values', () => {
    const env = { STEMSPLIT_CACHE_DIR: tempDir(), STEMSPLIT_DATA_DIR: tempDir() };
    const listed = runCli(['models', 'list'], env);
    assert.equal(listed.status, 0, listed.stderr);
    const lines = listed.stdout.split('\n');
    assert.match(lines[0] as string, /^NAME +STEMS +STATE +FAMILY +TERMS$/);
    const termsAt = (lines[0] as string).indexOf('TERMS');
    const rowOf = (name: string) => lines.find((line) => line.startsWith(`${name} `)) ?? assert.fail(`no row for ${name}:\n${listed.stdout}`);
    for (const [name, family] of [
      ['htdemucs', 'demucs'],
      ['bs-roformer-viperx-1297', 'bs_roformer'],
      ['mel-roformer-karaoke', 'mel_band_roformer'],
      ['scnet-xl-ihf', 'scnet'],
      ['mdx23c-instvoc-hq', 'mdx23c'],
      ['kim-vocal-2', 'mdx'],
      ['stemsplit-small-4s', 'bundled'],
    ]) {
      const row = rowOf(name as string);
      assert.match(row, new RegExp(`^${name} +\\d stems +\\S.* ${family} +\\S`), row);
      assert.ok(row.length > termsAt && row[termsAt - 1] === ' ' && row[termsAt] !== ' ', `terms start in their column: ${row}`);
    }
    assert.match(rowOf('htdemucs'), /research use only, per the Demucs/);
    assert.match(rowOf('scnet-xl-ihf'), /not stated/);
    assert.match(listed.stdout, /stemsplit-small-4s[\s\S]*card: .*models\/stemsplit-small-4s\/MODEL_CARD\.md/);
    assert.match(listed.stdout, /stemsplit models pull NAME/);
    assert.doesNotMatch(listed.stdout, /MUSDB18-HQ\), MIT/, 'Demucs weights are no longer called MIT');

    type Row = { name: string; family: string; terms: string };
    const rows = JSON.parse(runCli(['models', 'list', '--json'], env).stdout) as Row[];
    for (const model of MODEL_CATALOG) {
      const row = rows.find((r) => r.name === model.name);
      assert.equal(row?.terms, model.terms, 'the whole terms, unwrapped');
      assert.equal(row?.family, model.options?.['modelType'] ?? model.family);
    }
    // The two bundled graphs share weights and one card: the 6-stem model's terms name the card that
    // lists the sources and their attribution, at its real path (the 6-stem card only points to it).
    const sixStem = rows.find((r) => r.name === 'stemsplit-small-6s');
    const card = sixStem?.terms.match(/attribution in (\S+MODEL_CARD\.md)/)?.[1];
    assert.ok(card !== undefined && isAbsolute(card), `terms name the card by its path: ${sixStem?.terms}`);
    assert.match(readFileSync(card, 'utf8'), /## Training data: every source, its package, licence and attribution/);
  });

  test('no bundled manifest names a source its card left out for its terms', () => {
    // The card is where the training sources are listed; the manifests once kept a stale copy that
    // still named generation 1's GPL drum kits and espeak-ng after the data had dropped them.
    const card = readFileSync(join(process.cwd(), 'models', 'stemsplit-small-4s', 'MODEL_CARD.md'), 'utf8');
    const leftOut = card.match(/^Left out on purpose[\s\S]*?\n\n/m)?.[0] ?? assert.fail('the card lists what it left out');
    const packages = [...leftOut.matchAll(/`([a-z0-9.+-]+)`/g)].map((m) => m[1] as string);
    assert.ok(packages.includes('hydrogen-drumkits') && packages.includes('espeak-ng'), packages.join(', '));
    for (const name of ['stemsplit-small-4s', 'stemsplit-small-6s']) {
      const manifest = readFileSync(join(process.cwd(), 'models', name, 'model.json'), 'utf8');
      for (const left of packages) assert.ok(!manifest.includes(left), `${name}/model.json names ${left}`);
      assert.match(manifest, /listed with their licences in models\/stemsplit-small-4s\/MODEL_CARD\.md/);
    }
  });

  test('the table keeps its columns with a long name (on a line of its own) and wraps terms, never cuts them', () => {
    const row = (name: string, terms: string): TimedListing => ({
      name,
      task: 'vocals',
      secondsPerMinute: null,
      scores: [],
      family: 'mel_band_roformer',
      kind: 'msst',
      path: null,
      installed: false,
      origin: 'available',
      aliases: [],
      int8Refused: null,
      sources: ['vocals', 'no_vocals'],
      description: 'a model',
      terms,
    });
    const long = 'mel_band_roformer_karaoke_aufr33_viperx_sdr_10.1956_with_a_very_long_name';
    const terms = 'not stated (the publisher gives no licence for these weights), said at length so that it has to wrap';
    const lines = listingTable([row('short', terms), row(long, terms)], 110);
    assert.ok(
      lines.every((line) => line.length <= 110),
      lines.join('\n'),
    );
    assert.ok(lines.includes(long), 'the long name is whole, on its own line');
    const termsAt = (lines[0] as string).indexOf('TERMS');
    assert.ok(termsAt > 0 && termsAt < 80, 'the long name did not widen the name column');
    const rows = lines.filter((line) => / stems /.test(line));
    assert.equal(rows.length, 2);
    for (const line of rows) assert.equal(line.indexOf('not stated'), termsAt, line);
    const wrapped = lines.filter((line) => line.startsWith(' '.repeat(termsAt)) && line.trim() !== '').map((line) => line.trim());
    assert.equal([rows[0]?.slice(termsAt), ...wrapped.slice(0, wrapped.length / 2)].join(' '), terms, 'terms wrap, whole');

    // Too narrow for a terms column: the terms get lines of their own under each row.
    const narrow = listingTable([row('short', terms), row(long, terms)], 60);
    assert.ok(
      narrow.filter((line) => line.startsWith('  ') && !line.includes(' stems ')).every((line) => line.length <= 60),
      narrow.join('\n'),
    );
    assert.doesNotMatch(narrow[0] as string, /TERMS/);
    const termLines = narrow.slice(narrow.findIndex((line) => line.startsWith('short')) + 1, narrow.indexOf('  a model'));
    assert.equal(termLines.map((line) => line.trim()).join(' '), `terms: ${terms}`);
  });

  test('every catalog model names its source, hash source and terms; MSST entries their model type, MDX-Net ones their model data', () => {
    const names = new Set<string>();
    for (const model of MODEL_CATALOG) {
      assert.ok(!names.has(model.name), `${model.name} is listed once`);
      names.add(model.name);
      assert.match(model.name, /^[a-z0-9][a-z0-9._-]*$/, 'a name users can type');
      assert.ok(model.terms.trim().length > 0 && model.description.trim().length > 0, model.name);
      assert.ok(model.sources.length > 0, model.name);
      if (model.family === 'demucs') {
        for (const file of model.files) assert.match(expectedHashPrefix(file), /^[0-9a-f]{8}$/, 'the release name carries the hash');
        continue;
      }
      assert.equal(model.files.length, model.family === 'msst' ? 2 : 1, `${model.name}: checkpoint + yaml, or one .onnx`);
      if (model.family === 'msst') {
        assert.ok(model.options?.['modelType'], `${model.name} names its MSST model type`);
        assert.match(model.files[0] as string, /\.(ckpt|pth)$/);
        assert.match(model.files[1] as string, /\.yaml$/);
      } else if (model.family === 'mdx') {
        assert.match(model.files[0] as string, /\.onnx$/);
        const mdx = MDX_CATALOG.find((row) => row.name === model.name);
        const data = mdx?.mdxModelData;
        assert.ok(data, `${model.name} carries UVR's model data`);
        assert.deepEqual(Object.keys(data).sort(), ['compensate', 'mdx_dim_f_set', 'mdx_dim_t_set', 'mdx_n_fft_scale_set', 'primary_stem']);
        assert.match(mdx?.uvrHash ?? '', /^[0-9a-f]{32}$/);
      }
      for (const file of model.files) {
        const download = model.downloads?.find((d) => d.file === file);
        assert.ok(download, `${model.name}: ${file} has an address`);
        assert.match(download.url, /^https:\/\/(github\.com|raw\.githubusercontent\.com|huggingface\.co)\//);
        assert.ok(download.hashSource.trim().length > 0, `${model.name}: ${file} says where its hash comes from`);
        if (download.sha256 !== undefined) assert.match(download.sha256, /^[0-9a-f]{64}$/);
        else assert.match(download.hashSource, /first pull records/);
        if (download.url.startsWith('https://raw.githubusercontent.com/')) assert.match(download.url, /\/[0-9a-f]{40}\//, 'a config is pinned to a commit');
      }
    }
    for (const [family, count] of [
      ['demucs', 3],
      ['msst', 9],
      ['mdx', 2],
    ] as const) {
      assert.ok(MODEL_CATALOG.filter((m) => m.family === family).length >= count, family);
    }
    for (const type of ['bs_roformer', 'mel_band_roformer', 'scnet', 'mdx23c'] as const) {
      assert.ok(
        MODEL_CATALOG.some((m) => m.options?.['modelType'] === type),
        type,
      );
    }
  });

  test('an MSST SCNet pull fetches checkpoint and yaml; the registry runs it as scnet; a yaml that is not the pinned one is refused', {
    skip: msstFixtures === undefined,
  }, async () => {
    const fixture = (name: string) => readFileSync(join(msstFixtures as string, name));
    const catalog = catalogModel('scnet-large') as CatalogModel;
    const [ckptName, yamlName] = catalog.files as [string, string];
    await server.put(ckptName, { bytes: fixture('scnet_4stem.ckpt') });
    await server.put(yamlName, { bytes: fixture('scnet_4stem.yaml') });

    // The catalog pins the published yaml's SHA-256: the fixture's yaml is another file.
    const dir = tempDir();
    const env = cliEnv(server, dir);
    const refused = runCli(['models', 'pull', 'scnet-large'], env);
    assert.equal(refused.status, 14, refused.stderr);
    assert.match(errorLine(refused.stderr), new RegExp(`${yamlName.replace(/\./g, '\\.')} .*has SHA-256 .*expected a80c08df`));
    assert.doesNotMatch(refused.stderr, /terms of the weights/, 'what the model is and its terms are said once it is installed');
    const checkpoints = join(dir, 'cache', 'roformer', 'checkpoints');
    assert.deepEqual(readdirSync(checkpoints).sort(), [ckptName, `${ckptName}.sha256`], 'the checkpoint (hash recorded) stays; the yaml does not');
    const rows = JSON.parse(runCli(['models', 'list', '--json'], env).stdout) as Array<{ name: string; installed: boolean; family: string }>;
    assert.deepEqual(
      rows.filter((r) => r.name === 'scnet-large').map((r) => [r.installed, r.family]),
      [[false, 'scnet']],
    );

    // The same entry with the fixture's yaml pinned installs, and the registry hands it to the SCNet loader.
    const yaml = fixture('scnet_4stem.yaml');
    const model: CatalogModel = { ...catalog, downloads: catalog.downloads?.map((d) => (d.file === yamlName ? { ...d, sha256: sha256(yaml) } : d)) };
    const cacheDir = tempDir();
    const result = await pullModel(model, { cacheDir, baseUrl: server.filesUrl });
    const msstDir = modelDir(cacheDir, 'msst');
    assert.equal(result.path, join(msstDir, ckptName));
    assert.deepEqual(readFileSync(join(msstDir, yamlName)), yaml);
    assert.equal(readFileSync(join(msstDir, `${ckptName}.sha256`), 'utf8').split(' ')[0], sha256(fixture('scnet_4stem.ckpt')));
    const registry = new ModelRegistry({ bundledDir: tempDir(), cacheDir, aliases: { '4s': [], '6s': [] } });
    const ref = registry.resolve('scnet-large');
    assert.ok(!isEnsembleRef(ref));
    assert.deepEqual([ref.kind, ref.path, ref.configPath, ref.options?.['modelType']], ['msst', join(msstDir, ckptName), join(msstDir, yamlName), 'scnet']);
    assert.equal(msstModelType(readMsstDocument(ref.configPath as string), ref.options?.['modelType'] as MsstModelType | undefined), 'scnet');
    assert.deepEqual((await removeModel(model, cacheDir)).sort(), [ckptName, `${ckptName}.sha256`, yamlName].map((f) => join(msstDir, f)).sort());
  });

  test("an MDX-Net pull checks UVR's hash, writes the model data beside the .onnx; list and remove know it", { skip: mdxFixtures === undefined }, async () => {
    const catalog = MDX_CATALOG.find((row) => row.name === 'kim-vocal-2') as MdxCatalogModel;
    const onnxName = catalog.files[0] as string;
    const onnx = readFileSync(join(mdxFixtures as string, 'mdx_a_nfft6144_vocals.onnx'));
    await server.put(onnxName, { bytes: onnx });

    // The real entry: the fixture is not the file UVR's model data describes.
    const dir = tempDir();
    const env = cliEnv(server, dir);
    const refused = runCli(['models', 'pull', 'kim-vocal-2'], env);
    assert.equal(refused.status, 14, refused.stderr);
    assert.match(errorLine(refused.stderr), /Kim_Vocal_2\.onnx has UVR hash [0-9a-f]{32}, not 970b3f9492014d18fefeedfe4773cb42 .*deleted/);
    assert.deepEqual(readdirSync(join(dir, 'cache', 'mdx')), [], 'nothing is installed, no hash recorded');

    // The same entry keyed to the fixture's UVR hash installs, data beside it, through the CLI as users run it.
    assert.ok(onnx.length < 10_240_000, 'a file this small is hashed whole');
    const model: MdxCatalogModel = { ...catalog, uvrHash: createHash('md5').update(onnx).digest('hex') };
    const cacheDir = join(dir, 'cache');
    const result = await pullModel(model, { cacheDir, baseUrl: server.filesUrl });
    const mdxDir = modelDir(cacheDir, 'mdx');
    assert.equal(result.path, join(mdxDir, onnxName));
    assert.deepEqual(JSON.parse(readFileSync(join(mdxDir, 'Kim_Vocal_2.json'), 'utf8')), catalog.mdxModelData);
    type Row = { name: string; installed: boolean; family: string; kind: string; path: string | null };
    const row = (JSON.parse(runCli(['models', 'list', '--json'], env).stdout) as Row[]).find((r) => r.name === 'kim-vocal-2');
    assert.deepEqual(row && [row.installed, row.family, row.kind, row.path], [true, 'mdx', 'mdx', join(mdxDir, onnxName)]);
    assert.match(runCli(['models', 'list'], env).stdout, /^kim-vocal-2 +2 stems +pulled +mdx +not stated for the weights; UVR's README/m);

    const removed = runCli(['models', 'remove', 'kim-vocal-2'], env);
    assert.equal(removed.status, 0, removed.stderr);
    assert.match(removed.stdout, /kim-vocal-2 removed \(3 files\)/);
    assert.deepEqual(readdirSync(mdxDir), []);
  });

  test("UVR's hash is the MD5 of a file's last 10,240,000 bytes, or of all of a shorter one", async () => {
    const dir = tempDir();
    const small = randomBytes(1000);
    const large = randomBytes(10_240_000 + 4321);
    writeFileSync(join(dir, 'small.onnx'), small);
    writeFileSync(join(dir, 'large.onnx'), large);
    const md5 = (bytes: Uint8Array) => createHash('md5').update(bytes).digest('hex');
    assert.equal(uvrModelHash(join(dir, 'small.onnx')), md5(small));
    assert.equal(uvrModelHash(join(dir, 'large.onnx')), md5(large.subarray(4321)));
  });

  test('an interrupted download resumes from the partial file with Range', async () => {
    const { name, bytes } = checkpoint('b2c3d4e5', 2 * MB);
    await server.put(name, { bytes, interruptAt: 700_001, interruptBy: 'cut' });
    const cacheDir = tempDir();
    const model = singleModel('cut', name);
    const path = join(modelDir(cacheDir, 'demucs'), name);
    await rejectsWith(pullModel(model, { cacheDir, baseUrl: server.filesUrl }), 'DOWNLOAD_FAILED', /interrupted after \d+ bytes.*resume/);
    assert.equal(existsSync(path), false, 'nothing is installed');
    // What the client had read before the cut is on disk; bytes still in its buffers are lost.
    const kept = readFileSync(`${path}.partial`);
    assert.ok(kept.length > 0 && kept.length <= 700_001, String(kept.length));
    assert.deepEqual(kept, bytes.subarray(0, kept.length));

    const result = await pullModel(model, { cacheDir, baseUrl: server.filesUrl });
    assert.deepEqual(
      result.downloaded.map((d) => d.resumedFrom),
      [kept.length],
    );
    assert.deepEqual(readFileSync(path), bytes);
    assert.equal(existsSync(`${path}.partial`), false);
    assert.deepEqual(
      (await server.requestsFor(name)).map((r) => r.range),
      [null, `bytes=${kept.length}-`],
    );
  });

  test('a stalled download times out, keeps its partial file and resumes', async () => {
    const { name, bytes } = checkpoint('c3d4e5f6', MB);
    await server.put(name, { bytes, interruptAt: 300_000, interruptBy: 'stall' });
    const cacheDir = tempDir();
    const options = { cacheDir, baseUrl: server.filesUrl, idleTimeoutMs: 300 };
    await rejectsWith(pullModel(singleModel('stall', name), options), 'DOWNLOAD_FAILED', /resume/);
    assert.equal(readFileSync(join(modelDir(cacheDir, 'demucs'), `${name}.partial`)).length, 300_000);
    await pullModel(singleModel('stall', name), options);
    assert.deepEqual(readFileSync(join(modelDir(cacheDir, 'demucs'), name)), bytes);
  });

  test('a server that ignores Range (200) restarts the download from 0', async () => {
    const { name, bytes } = checkpoint('d4e5f6a7', MB);
    await server.put(name, { bytes, ignoreRange: true });
    const cacheDir = tempDir();
    mkdirSync(modelDir(cacheDir, 'demucs'), { recursive: true });
    writeFileSync(join(modelDir(cacheDir, 'demucs'), `${name}.partial`), randomBytes(5000));
    const result = await pullModel(singleModel('norange', name), { cacheDir, baseUrl: server.filesUrl });
    assert.deepEqual(
      result.downloaded.map((d) => d.resumedFrom),
      [0],
    );
    assert.deepEqual(readFileSync(result.path), bytes);
    assert.deepEqual(
      (await server.requestsFor(name)).map((r) => r.range),
      ['bytes=5000-'],
    );
  });

  test('a complete partial file (416) is verified and installed; an overlong one is fetched afresh', async () => {
    const { name, bytes } = checkpoint('e5f6a7b8', 100_000);
    await server.put(name, { bytes });
    const complete = tempDir();
    mkdirSync(modelDir(complete, 'demucs'), { recursive: true });
    writeFileSync(join(modelDir(complete, 'demucs'), `${name}.partial`), bytes);
    assert.deepEqual(readFileSync((await pullModel(singleModel('done', name), { cacheDir: complete, baseUrl: server.filesUrl })).path), bytes);

    const overlong = tempDir();
    mkdirSync(modelDir(overlong, 'demucs'), { recursive: true });
    writeFileSync(join(modelDir(overlong, 'demucs'), `${name}.partial`), randomBytes(150_000));
    assert.deepEqual(readFileSync((await pullModel(singleModel('long', name), { cacheDir: overlong, baseUrl: server.filesUrl })).path), bytes);
    assert.deepEqual(
      (await server.requestsFor(name)).map((r) => r.range),
      ['bytes=100000-', 'bytes=150000-', null],
    );
  });

  test('a hash mismatch is rejected and deletes the download', async () => {
    const { name, bytes } = checkpoint('f6a7b8c9', 200_000);
    bytes[1000] = (bytes[1000] as number) ^ 1;
    await server.put(name, { bytes });
    const cacheDir = tempDir();
    await rejectsWith(pullModel(singleModel('bad', name), { cacheDir, baseUrl: server.filesUrl }), 'DOWNLOAD_FAILED', /SHA-256 [0-9a-f]{8}…, expected/);
    assert.deepEqual(readdirSync(modelDir(cacheDir, 'demucs')), [], 'neither the file nor a partial stays');
  });

  test('HTTP errors, refused connections and non-http URLs are DOWNLOAD_FAILED; redirects are followed', async () => {
    const cacheDir = tempDir();
    const missing = singleModel('missing', 'a0a0a0a0-12345678.th');
    await rejectsWith(pullModel(missing, { cacheDir, baseUrl: server.filesUrl }), 'DOWNLOAD_FAILED', /HTTP 404/);
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const deadPort = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    await rejectsWith(pullModel(missing, { cacheDir, baseUrl: `http://127.0.0.1:${deadPort}/` }), 'DOWNLOAD_FAILED', /ECONNREFUSED/);
    await rejectsWith(pullModel(missing, { cacheDir, baseUrl: 'file:///etc/' }), 'DOWNLOAD_FAILED', /only http and https/);
    assert.deepEqual(readdirSync(modelDir(cacheDir, 'demucs')), []);

    const { name, bytes } = checkpoint('a7b8c9d0', 50_000);
    await server.put(name, { bytes });
    const moved = await pullModel(singleModel('moved', name), { cacheDir, baseUrl: `${server.origin}/moved` });
    assert.deepEqual(readFileSync(moved.path), bytes);
  });

  test('a pulled bag gets its yaml last; the Demucs loader opens it; remove deletes it and its converted graphs', {
    skip: demucsFixtures === undefined,
  }, async () => {
    const fixtures = new URL('../../shared/fixtures/demucs/', import.meta.url);
    const files: string[] = [];
    for (let i = 0; i < 4; i++) {
      const bytes = readFileSync(new URL(`bag_member_${i}.th`, fixtures));
      files.push(`bag_member_${i}-${sha256(bytes).slice(0, 8)}.th`);
      await server.put(files[i] as string, { bytes });
    }
    const oneHot = FOUR.map((_, row) => FOUR.map((__, column) => Number(row === column)));
    const bag: DemucsCatalogModel = { name: 'small_ft', family: 'demucs', description: 'test bag', terms: 'test terms', sources: FOUR, files, weights: oneHot };
    const cacheDir = tempDir();
    const dir = modelDir(cacheDir, 'demucs');

    await rejectsWith(
      pullModel({ ...bag, files: [...files.slice(0, 2), 'bag_member_9-00000000.th'] }, { cacheDir, baseUrl: server.filesUrl }),
      'DOWNLOAD_FAILED',
      /404/,
    );
    assert.equal(existsSync(join(dir, 'small_ft.yaml')), false, 'no yaml before every member is present');

    const result = await pullModel(bag, { cacheDir, baseUrl: server.filesUrl });
    assert.equal(result.path, join(dir, 'small_ft.yaml'));
    assert.deepEqual(result.present, files.slice(0, 2));
    const parsed = parseBagFile(readFileSync(result.path, 'utf8'));
    assert.deepEqual(parsed.models, ['bag_member_0', 'bag_member_1', 'bag_member_2', 'bag_member_3']);
    assert.deepEqual(parsed.weights, oneHot);
    assert.deepEqual(
      parsed.models.map((member) => resolveMember(dir, member)),
      files.map((file) => join(dir, file)),
    );

    const model = await loadDemucs(result.path, { cacheDir, intraOpThreads: 1 });
    assert.deepEqual(model.sources, FOUR);
    await model.dispose();
    assert.ok(
      readdirSync(dir).some((entry) => /^[0-9a-f]{64}\.v\d+$/.test(entry)),
      'loading converted the members',
    );

    writeFileSync(join(dir, 'unrelated.th'), 'kept');
    const removed = await removeModel(bag, cacheDir);
    assert.equal(removed[0], result.path, 'the yaml goes first');
    assert.deepEqual(readdirSync(dir), ['unrelated.th']);
  });

  test('the official htdemucs_ft yaml names its members by signature, with the catalog weights', { skip: demucsFixtures === undefined }, () => {
    const ft = DEMUCS_CATALOG.find((row) => row.name === 'htdemucs_ft') as DemucsCatalogModel;
    const parsed = parseBagFile(bagYaml(ft));
    assert.deepEqual(parsed.models, ['f7e0c4bc', 'd12395a8', '92cfc3b6', '04573f0d']);
    assert.deepEqual(parsed.weights, ft.weights);
    const fixture = parseBagFile(readFileSync(new URL('../../shared/fixtures/demucs/htdemucs_ft_small.yaml', import.meta.url), 'utf8'));
    assert.deepEqual(Object.keys(parsed), Object.keys(fixture), 'same keys as the released bag files');
  });

  test('CLI: models pull shows progress, rejects a hash mismatch and installs nothing', async () => {
    const ft = catalogModel('htdemucs') as CatalogModel;
    const file = ft.files[0] as string;
    const dir = tempDir();
    const env = cliEnv(server, dir);
    await server.put(file, { bytes: randomBytes(1_500_000) });
    const pulled = runCli(['models', 'pull', 'htdemucs'], env);
    assert.equal(pulled.status, 14, pulled.stderr);
    assert.match(errorLine(pulled.stderr), /955717e8-8726e21a\.th .*SHA-256 .* expected 8726e21a/);
    assert.match(pulled.stderr, /htdemucs 955717e8-8726e21a\.th +100% 1\.5 MB \/ 1\.5 MB/);
    assert.deepEqual(readdirSync(join(dir, 'cache', 'demucs')), []);
    const rows = JSON.parse(runCli(['models', 'list', '--json'], env).stdout) as Array<{ name: string; installed: boolean }>;
    assert.equal(rows.find((r) => r.name === 'htdemucs')?.installed, false);

    const unknown = runCli(['models', 'pull', 'htdemucs_9s'], env);
    assert.equal(unknown.status, 12);
    assert.match(errorLine(unknown.stderr), /htdemucs, htdemucs_ft, htdemucs_6s/);
  });

  test('CLI: split --model NAME names the pull when it is not installed; with --pull it pulls first, as models pull does', async () => {
    const catalog = catalogModel('htdemucs') as CatalogModel;
    const dir = tempDir();
    const env = cliEnv(server, dir);
    await server.put(catalog.files[0] as string, { bytes: randomBytes(1_200_000) });
    const song = join(dir, 'song.wav');
    writeSong(song, 1);
    const plain = runCli(['split', song, '--model', 'htdemucs', '-o', join(dir, 'out')], env);
    assert.equal(plain.status, 12, plain.stderr);
    assert.equal(errorLine(plain.stderr), 'stemsplit: model htdemucs is not installed; run: stemsplit models pull htdemucs');
    // The mirror serves bytes that are not the published checkpoint: the pull runs, shows progress, and its hash check refuses them.
    const pulled = runCli(['split', song, '--model', 'htdemucs', '--pull', '-o', join(dir, 'out')], env);
    assert.equal(pulled.status, 14, pulled.stderr);
    assert.match(pulled.stderr, /htdemucs 955717e8-8726e21a\.th +100% 1\.2 MB \/ 1\.2 MB/);
    assert.match(errorLine(pulled.stderr), /955717e8-8726e21a\.th .*SHA-256 .* expected 8726e21a/);
    assert.equal(existsSync(join(dir, 'out')), false, 'nothing split');
  });

  test('CLI: an interrupted pull exits with a resume hint and the next run sends Range', async () => {
    const file = (catalogModel('htdemucs_6s') as CatalogModel).files[0] as string;
    await server.put(file, { bytes: randomBytes(1_000_000), interruptAt: 400_000, interruptBy: 'cut' });
    const dir = tempDir();
    const env = cliEnv(server, dir);
    const first = runCli(['models', 'pull', 'htdemucs_6s'], env);
    assert.equal(first.status, 14);
    const kept = Number(/interrupted after (\d+) bytes.*run the command again to resume/.exec(errorLine(first.stderr))?.[1]);
    assert.ok(kept > 0 && kept <= 400_000, first.stderr);
    assert.equal(readFileSync(join(dir, 'cache', 'demucs', `${file}.partial`)).length, kept);
    // These bytes cannot hash to the official prefix, so the resumed run ends in the hash check.
    const second = runCli(['models', 'pull', 'htdemucs_6s'], env);
    assert.match(errorLine(second.stderr), /expected 34c22ccb/);
    assert.deepEqual(
      (await server.requestsFor(file)).map((r) => r.range),
      [null, `bytes=${kept}-`],
    );
  });

  test('CLI: a second pull or a remove while a pull runs is refused in one line; a killed pull leaves no stale lock', async () => {
    const file = (catalogModel('htdemucs_6s') as CatalogModel).files[0] as string;
    await server.put(file, { bytes: randomBytes(1_000_000), interruptAt: 300_000, interruptBy: 'stall' });
    const dir = tempDir();
    const env = cliEnv(server, dir);
    const partial = join(dir, 'cache', 'demucs', `${file}.partial`);
    const first = spawnCli(['models', 'pull', 'htdemucs_6s'], env);
    const firstExited = new Promise((resolve) => first.once('close', resolve));
    await until(
      () => existsSync(partial) && readFileSync(partial).length === 300_000,
      30_000,
      () => 'the first pull never reached the stall',
    );
    assert.equal(readFileSync(partial).length, 300_000, 'the first pull is stalled mid-file');

    const held = /another "stemsplit models pull" or "models remove" is working in .*\/cache; let it finish, then run this again/;
    for (const args of [
      ['models', 'pull', 'htdemucs_6s'],
      ['models', 'remove', 'htdemucs_6s'],
    ]) {
      const refused = runCli(args, env);
      assert.equal(refused.status, 15, refused.stderr);
      assert.match(errorLine(refused.stderr), held);
    }
    assert.equal(readFileSync(partial).length, 300_000, 'the refused commands left the download alone');

    first.kill('SIGKILL');
    await firstExited;
    // The lock died with the process: this run resumes the download (and ends in the hash check).
    const again = runCli(['models', 'pull', 'htdemucs_6s'], env);
    assert.match(errorLine(again.stderr), /expected 34c22ccb/);
    // (The log also holds the earlier test's requests for this file.)
    assert.deepEqual(
      (await server.requestsFor(file)).slice(-2).map((r) => r.range),
      [null, 'bytes=300000-'],
    );
  });

  test('CLI: models list shows a pulled bag and its alias; models remove deletes it', () => {
    const ft = DEMUCS_CATALOG.find((row) => row.name === 'htdemucs_ft') as DemucsCatalogModel;
    const dir = tempDir();
    const env = { ...cliEnv(server, dir), STEMSPLIT_MODEL_4S: 'htdemucs_ft,bundled-4s' };
    const demucs = join(dir, 'cache', 'demucs');
    mkdirSync(demucs, { recursive: true });
    // The layout pullModel leaves (the official bytes cannot be served offline).
    for (const file of ft.files) writeFileSync(join(demucs, file), file);
    writeFileSync(join(demucs, 'htdemucs_ft.yaml'), bagYaml(ft));
    const converted = join(demucs, `${(ft.files[0] as string).slice(9, 17)}${'0'.repeat(56)}.v1`);
    mkdirSync(converted);
    writeFileSync(join(converted, 'stage0.onnx'), 'graph');
    writeFileSync(join(demucs, '955717e8-8726e21a.th.partial'), 'another model');

    type Row = { name: string; installed: boolean; origin: string; path: string | null; aliases: string[] };
    const listed = JSON.parse(runCli(['models', 'list', '--json'], env).stdout) as Row[];
    const row = listed.find((r) => r.name === 'htdemucs_ft');
    assert.deepEqual(row && [row.installed, row.origin, row.path, row.aliases], [true, 'pulled', join(demucs, 'htdemucs_ft.yaml'), ['4s']]);
    assert.match(runCli(['models', 'list'], env).stdout, /htdemucs_ft +4 stems +pulled \[4s\]/);

    const removed = runCli(['models', 'remove', 'htdemucs_ft'], env);
    assert.equal(removed.status, 0, removed.stderr);
    assert.match(removed.stdout, /htdemucs_ft removed \(6 files\)/);
    assert.deepEqual(readdirSync(demucs), ['955717e8-8726e21a.th.partial']);
    const afterRemoval = JSON.parse(runCli(['models', 'list', '--json'], env).stdout) as Row[];
    assert.deepEqual(afterRemoval.find((r) => r.name === 'htdemucs_ft')?.installed, false);
    assert.ok(afterRemoval.find((r) => r.name === 'bundled-4s')?.aliases.includes('4s'));

    const again = runCli(['models', 'remove', 'htdemucs_ft'], env);
    assert.equal(again.status, 12);
    assert.match(errorLine(again.stderr), /htdemucs_ft is not installed/);
    assert.notEqual(runCli(['models', 'remove', 'bundled-4s'], env).status, 0);
  });

  test('serve --model-4s / --model-6s set the alias lists the registry resolves', async () => {
    let input: ConfigInput | undefined;
    const program = buildProgram(async (_command, given) => {
      input = given;
    });
    await program.parseAsync(['serve', '--model-4s', 'htdemucs_ft, htdemucs,bundled-4s', '--model-6s', 'bundled-6s'], { from: 'user' });
    assert.deepEqual(input?.modelAliases, { '4s': ['htdemucs_ft', 'htdemucs', 'bundled-4s'], '6s': ['bundled-6s'] });

    const config = resolveConfig({ ...input, cacheDir: tempDir() }, {});
    const registry = new ModelRegistry({ bundledDir: config.bundledModelsDir, cacheDir: config.cacheDir, aliases: config.modelAliases });
    assert.equal(registry.resolveAlias('4s').name, 'bundled-4s', 'the first installed name wins');
    assert.equal(registry.resolveAlias('6s').name, 'bundled-6s');

    const empty = runCli(['serve', '--model-4s', ' , '], { STEMSPLIT_DATA_DIR: tempDir() });
    assert.equal(empty.status, 2);
    assert.match(errorLine(empty.stderr), /--model-4s needs comma-separated model names/);
  });
}
