/**
 * Demucs v3 (HDemucs) and v2 (time-domain Demucs) against the official code's outputs
 * (../shared/fixtures/demucs-v3, random weights in the released models' structures):
 * - each bag through `stemsplit split x.wav --model BAG.yaml --format wav --float32` (the CLI in a
 *   child process), every stem ≥ 60 dB against `demucs.api.Separator`'s, every 16th sample;
 * - each HDemucs checkpoint's forward pass on the whole input (the engine's model, one window).
 * The mdx bag mixes both classes, a diffq-quantized member, per-source weights and a bag segment.
 * - the mdx bag through the API (a server whose `4s` is the bag's yaml);
 * - `models pull` of a one-model bag with a segment (as hdemucs_mmi) from a loopback server, then
 *   split from the yaml it wrote; `stemsplit models pull mdx_extra_q` checking the release-name
 *   hash of a file that is not the release; the catalog's v3 bags written as the released yamls are.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { runCli, spawnCli } from './support/process.js';
import { loadDemucs, parseBagFile, readDemucsCheckpoint } from '../src/demucs/index.js';
import { openV3 } from '../src/demucs/segment-model-v3.js';
import { parseV3Config } from '../src/demucs/v3-config.js';
import { catalogModel, type CatalogModel } from '../src/models/catalog.js';
import { pullModel, removeModel } from '../src/models/pull.js';
import { bagYaml } from '../src/demucs/family.js';
import { startTestServer, tempDir, uploadFile, waitForSplit } from './support/server.js';
import { fixtureDir, fixtureManifest } from './support/fixtures.js';
import { assertStems, decodePlanar, readF32, writeFloatWav } from './support/reference-audio.js';

interface V3Fixture {
  readonly class: string;
  readonly checkpoint: string;
  readonly sources: string[];
  readonly forward_out: [string, number[]];
}

const dir = fixtureDir('demucs-v3');
const MIN_SNR_DB = 60;
/** The references keep every 16th sample (fixtures.json `output_stride`). */
const stride = dir ? (JSON.parse(readFileSync(join(dir, 'fixtures.json'), 'utf8')) as { output_stride: number }).output_stride : 16;
const BAGS = ['hdemucs_mmi_small', 'mdx_small'];
const work = tempDir('stemsplit-demucs-v3-');
after(() => rmSync(work, { recursive: true, force: true }));

/** A bag's yaml and members in their own folder, as a user keeps them, and the fixture's input as a float WAV. */
function prepareBag(bag: string, caseDir: string): { yaml: string; song: string; sources: readonly string[] } {
  const from = dir as string;
  mkdirSync(caseDir, { recursive: true });
  const yaml = join(caseDir, `${bag}.yaml`);
  copyFileSync(join(from, `${bag}.yaml`), yaml);
  const members = parseBagFile(readFileSync(yaml, 'utf8')).models;
  for (const member of members) copyFileSync(join(from, `${member}.th`), join(caseDir, `${member}.th`));
  const song = join(caseDir, 'song.wav');
  writeFloatWav(song, readF32(join(from, 'mix.in.f32')), 2);
  const fixtures = new Map(fixtureManifest<V3Fixture>(dir));
  return { yaml, song, sources: (fixtures.get(members[0] as string) as V3Fixture).sources };
}

/** Every stem ≥ MIN_SNR_DB against the bag's official separation. */
function assertBagStems(bag: string, label: string, sources: readonly string[], stemFile: (stem: string) => string): void {
  const reference = readF32(join(dir as string, `${bag}.separate.out.f32`));
  const stems = sources.map((stem) => decodePlanar(stemFile(stem), 2));
  assertStems(`${bag} ${label}`, reference, stems, sources.length, { minDb: MIN_SNR_DB, names: sources, stride });
}

describe('Demucs v3/v2 bags through `stemsplit split`', { skip: dir === undefined ? 'no fixtures' : false }, () => {
  for (const bag of BAGS) {
    it(`${bag}: every stem ≥ ${MIN_SNR_DB} dB against the official separation`, () => {
      const caseDir = join(work, bag);
      const { yaml, song, sources } = prepareBag(bag, caseDir);
      const out = join(caseDir, 'out');
      const result = runCli(['split', song, '--model', yaml, '--format', 'wav', '--float32', '-o', out], {
        STEMSPLIT_DATA_DIR: join(caseDir, 'data'),
        STEMSPLIT_CACHE_DIR: join(work, 'cache'),
      });
      assert.equal(result.status, 0, result.stderr);
      assertBagStems(bag, 'split', sources, (stem) => join(out, 'song', `${stem}.wav`));
    });
  }

  it('a second split of the same bag loads every member from the cache: no stage converted again, the same stems', () => {
    const caseDir = join(work, 'again');
    const { yaml, song, sources } = prepareBag('hdemucs_mmi_small', caseDir);
    const env = { STEMSPLIT_DATA_DIR: join(caseDir, 'data'), STEMSPLIT_CACHE_DIR: join(caseDir, 'cache') };
    const converted = join(caseDir, 'cache', 'demucs');
    const stageFiles = (): Map<string, number> => {
      const files = new Map<string, number>();
      for (const entry of existsSync(converted) ? readdirSync(converted) : []) {
        if (!existsSync(join(converted, entry, 'model.json'))) continue;
        for (const file of readdirSync(join(converted, entry))) files.set(join(entry, file), statSync(join(converted, entry, file)).mtimeMs);
      }
      return files;
    };
    for (const run of ['first', 'second']) {
      const result = runCli(['split', song, '--model', yaml, '--format', 'wav', '--float32', '-o', join(caseDir, run)], env);
      assert.equal(result.status, 0, result.stderr);
      assertBagStems('hdemucs_mmi_small', `${run} split`, sources, (stem) => join(caseDir, run, 'song', `${stem}.wav`));
      if (run === 'first') {
        const first = stageFiles();
        assert.ok(first.size > 10, `the first split cached its stages (${first.size} files)`);
        writeFileSync(join(caseDir, 'first.json'), JSON.stringify([...first]));
      } else {
        assert.deepEqual([...stageFiles()], JSON.parse(readFileSync(join(caseDir, 'first.json'), 'utf8')), 'no stage file written again, none added');
      }
    }
  });

  it('mdx_small through the API (outputFormat wav): every stem as through split', async () => {
    const caseDir = join(work, 'api');
    const { yaml, song, sources } = prepareBag('mdx_small', caseDir);
    const t = await startTestServer({ cacheDir: join(work, 'cache'), modelAliases: { '4s': [yaml], '6s': [yaml] } });
    try {
      const input = await uploadFile(t, readFileSync(song));
      const created = await t.request('POST', '/audio/splits', { body: { input, stemModel: '4s', outputFormat: 'wav' } });
      assert.equal(created.status, 200, created.text);
      const done = (await waitForSplit(t, created.json.data.id, 600_000)).json.data;
      assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
      for (const stem of sources) {
        const response = await fetch(done.stems[stem] as string);
        assert.equal(response.status, 200);
        writeFileSync(join(caseDir, `${stem}.api.wav`), Buffer.from(await response.arrayBuffer()));
      }
      assertBagStems('mdx_small', 'API', sources, (stem) => join(caseDir, `${stem}.api.wav`));
    } finally {
      await t.close();
    }
  });
});

describe('v3 checkpoints that do not fit their class', { skip: dir === undefined ? 'no fixtures' : false }, () => {
  it('are refused as they load, naming the missing or extra tensor', async () => {
    for (const [name, klass] of [
      ['hdemucs_mmi_m0', 'HDemucs'],
      ['mdx_m0', 'Demucs'],
    ] as const) {
      const file = join(dir as string, `${name}.th`);
      const checkpoint = readDemucsCheckpoint(file);
      const config = parseV3Config(klass, checkpoint.kwargs);
      const missing = new Map(checkpoint.state);
      missing.delete('encoder.0.conv.bias');
      missing.delete('encoder.0.0.bias');
      await assert.rejects(
        openV3(config, { file, read: () => missing }, name, {}),
        (error: Error & { code?: string }) => error.code === 'MODEL_INVALID' && /lacks encoder\.0\.(conv|0)\.bias/.test(error.message),
      );
      const extra = new Map(checkpoint.state).set('decoder.9.bias', { shape: [1], data: new Float32Array(1) });
      await assert.rejects(
        openV3(config, { file, read: () => extra }, name, {}),
        (error: Error & { code?: string }) => error.code === 'MODEL_INVALID' && error.message.includes('decoder.9.bias'),
      );
    }
  });
});

describe('the converted stages cache', { skip: dir === undefined ? 'no fixtures' : false }, () => {
  it("converts a checkpoint's segment once: a second load reads no weight and converts nothing, and runs the same; another window length reads the weights again", async () => {
    for (const [name, klass] of [
      ['hdemucs_mmi_m0', 'HDemucs'],
      ['mdx_m0', 'Demucs'],
    ] as const) {
      const file = join(dir as string, `${name}.th`);
      const checkpoint = readDemucsCheckpoint(file);
      const config = parseV3Config(klass, checkpoint.kwargs);
      const cacheDir = join(work, `stage-cache-${name}`);
      let reads = 0;
      const weights = { file, read: () => (reads++, checkpoint.state), cache: { checkpoint: file, cacheDir } };
      const first = await openV3(config, weights, name, { intraOpThreads: 2 });
      assert.equal(reads, 1, 'the first load converts the segment');
      const entries = readdirSync(join(cacheDir, 'demucs'));
      assert.equal(entries.length, 1, `one cache entry: ${entries.join(', ')}`);
      const entry = join(cacheDir, 'demucs', entries[0] as string);
      const stages = JSON.parse(readFileSync(join(entry, 'model.json'), 'utf8')).stages as { file: string }[];
      assert.ok(stages.length > 2 * config.depth - 1, `a stage per layer (${stages.length})`);
      const written = stages.map(({ file: stage }) => statSync(join(entry, stage)).mtimeMs);
      const window = first.windowSamples?.(first.segmentSamples) ?? first.segmentSamples;
      const mix = readF32(join(dir as string, 'mix.in.f32'));
      const chunk = new Float32Array(2 * window);
      chunk.set(mix.subarray(0, window), 0);
      chunk.set(mix.subarray(mix.length / 2, mix.length / 2 + window), window);
      const expected = await first.run(chunk);
      await first.dispose();

      const second = await openV3(config, weights, name, { intraOpThreads: 2 });
      try {
        assert.equal(reads, 1, 'the second load converted nothing');
        assert.deepEqual(readdirSync(join(cacheDir, 'demucs')), entries);
        assert.deepEqual(
          stages.map(({ file: stage }) => statSync(join(entry, stage)).mtimeMs),
          written,
          'no stage file rewritten',
        );
        const again = await second.run(chunk);
        const drift = again.reduce((worst, value, i) => Math.max(worst, Math.abs(value - (expected[i] as number))), 0);
        assert.ok(drift <= 1e-5, `the cached stages run as the converted ones (largest difference ${drift})`);
        const short = second.windowSamples?.(1000) ?? 1000;
        const out = await second.run(chunk.subarray(0, 2 * short));
        assert.equal(out.length, 8 * short);
        assert.equal(reads, 2, 'a window of another length is converted from the weights read again');
        assert.deepEqual(readdirSync(join(cacheDir, 'demucs')), entries, 'and not cached');
      } finally {
        await second.dispose();
      }
    }
  });
});

describe('a short last chunk', { skip: dir === undefined ? 'no fixtures' : false }, () => {
  it('runs an HDemucs on fewer samples than its STFT pads by (pad1d zero-pads before reflecting), every output finite', async () => {
    const from = dir as string;
    const mix = readF32(join(from, 'mix.in.f32'));
    const length = mix.length / 2;
    const model = await loadDemucs(join(from, 'hdemucs_mmi_m0.th'), { cacheDir: join(work, 'cache'), intraOpThreads: 2 });
    try {
      for (const samples of [1, 100, 1536]) {
        const chunk = new Float32Array(2 * samples);
        chunk.set(mix.subarray(50_000, 50_000 + samples), 0);
        chunk.set(mix.subarray(length + 50_000, length + 50_000 + samples), samples);
        const out = await model.run(chunk);
        assert.equal(out.length, 4 * 2 * samples);
        assert.ok(out.every(Number.isFinite), `${samples} samples: every output finite`);
      }
    } finally {
      await model.dispose();
    }
  });
});

describe('HDemucs forward passes', { skip: dir === undefined ? 'no fixtures' : false }, () => {
  const hdemucs = fixtureManifest<V3Fixture>(dir).filter(([, fixture]) => fixture.class === 'HDemucs');
  for (const [name, fixture] of hdemucs) {
    it(`${name}: model(mix) ≥ ${MIN_SNR_DB} dB per stem`, async () => {
      const from = dir as string;
      const mix = readF32(join(from, 'mix.in.f32'));
      const model = await loadDemucs(join(from, fixture.checkpoint), { cacheDir: join(work, 'cache'), intraOpThreads: 2 });
      try {
        const length = mix.length / 2;
        assert.equal(model.windowSamples?.(length), length, 'an HDemucs runs a chunk as it is');
        const out = await model.run(mix);
        const sources = fixture.sources.length;
        assert.equal(out.length, sources * 2 * length);
        assertStems(`${name} forward`, readF32(join(from, fixture.forward_out[0])), out, sources, { minDb: MIN_SNR_DB, names: fixture.sources, stride });
      } finally {
        await model.dispose();
      }
    });
  }
});

/** Serves `files` (name → bytes) on a loopback port; returns its base URL and a closer. */
async function serve(files: ReadonlyMap<string, Buffer>): Promise<{ url: string; close: () => Promise<void> }> {
  const server = http.createServer((req, res) => {
    const bytes = files.get(decodeURIComponent(new URL(req.url ?? '/', 'http://loopback').pathname.slice(1)));
    if (bytes === undefined) res.writeHead(404).end();
    else res.writeHead(200, { 'content-length': bytes.length }).end(bytes);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

describe('Demucs v3 models pull', { skip: dir === undefined ? 'no fixtures' : false }, () => {
  it('pulls a one-model bag with a segment (as hdemucs_mmi), writes its yaml, split runs it as the official bag, and models remove deletes its converted stages', async () => {
    const from = dir as string;
    const bytes = readFileSync(join(from, 'hdemucs_mmi_m0.th'));
    const file = `hdemucs_mmi_m0-${createHash('sha256').update(bytes).digest('hex').slice(0, 8)}.th`;
    const official = parseBagFile(readFileSync(join(from, 'hdemucs_mmi_small.yaml'), 'utf8'));
    const model: CatalogModel = {
      name: 'hdemucs_mmi_small',
      family: 'demucs',
      description: 'test',
      terms: 'test',
      sources: ['drums', 'bass', 'other', 'vocals'],
      files: [file],
      ...(official.segment === undefined ? {} : { segment: official.segment }),
    };
    const server = await serve(new Map([[file, bytes]]));
    const caseDir = join(work, 'pull');
    try {
      const cacheDir = join(caseDir, 'cache');
      const result = await pullModel(model, { cacheDir, baseUrl: server.url });
      assert.match(result.path, /hdemucs_mmi_small\.yaml$/);
      const written = parseBagFile(readFileSync(result.path, 'utf8'));
      assert.deepEqual(written, { models: ['hdemucs_mmi_m0'], segment: official.segment });
      const song = join(caseDir, 'song.wav');
      writeFloatWav(song, readF32(join(from, 'mix.in.f32')), 2);
      const out = join(caseDir, 'out');
      const split = runCli(['split', song, '--model', result.path, '--format', 'wav', '--float32', '-o', out], {
        STEMSPLIT_DATA_DIR: join(caseDir, 'data'),
        STEMSPLIT_CACHE_DIR: cacheDir,
      });
      assert.equal(split.status, 0, split.stderr);
      const sources = model.sources;
      const stems = sources.map((stem) => decodePlanar(join(out, 'song', `${stem}.wav`), 2));
      assertStems('pulled hdemucs_mmi_small split', readF32(join(from, 'hdemucs_mmi_small.separate.out.f32')), stems, sources.length, {
        minDb: MIN_SNR_DB,
        names: sources,
        stride,
      });
      // The split cached the segment's stages beside the checkpoint; removing the model removes them.
      const converted = readdirSync(join(cacheDir, 'demucs')).filter((entry) => existsSync(join(cacheDir, 'demucs', entry, 'model.json')));
      assert.equal(converted.length, 1, `one conversion cached: ${converted.join(', ')}`);
      const removed = await removeModel(model, cacheDir);
      assert.ok(removed.includes(join(cacheDir, 'demucs', converted[0] as string)), `models remove deletes the conversion: ${removed.join(', ')}`);
      assert.deepEqual(
        readdirSync(join(cacheDir, 'demucs')).filter((entry) => !entry.startsWith('.')),
        [],
        'nothing of the model is left',
      );
    } finally {
      await server.close();
    }
  });

  it('`stemsplit models pull mdx_extra_q` fetches the release names from the mirror and refuses a file whose SHA-256 is not the one its name carries', async () => {
    const model = catalogModel('mdx_extra_q') as CatalogModel;
    const impostor = readFileSync(join(dir as string, 'mdx_m1.th'));
    const server = await serve(new Map(model.files.map((file) => [file, impostor])));
    const caseDir = join(work, 'pull-cli');
    try {
      const child = spawnCli(['models', 'pull', 'mdx_extra_q', '--base-url', server.url], {
        STEMSPLIT_DATA_DIR: join(caseDir, 'data'),
        STEMSPLIT_CACHE_DIR: join(caseDir, 'cache'),
      });
      let stderr = '';
      child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const status = await new Promise<number | null>((resolve) => child.on('close', resolve));
      assert.equal(status, 14, stderr);
      const first = model.files[0] as string;
      assert.match(stderr, new RegExp(`${first.replace('.', '\\.')} .*has SHA-256 .*expected ${first.slice(9, 17)}`));
      assert.equal(existsSync(join(caseDir, 'cache', 'demucs', first)), false, 'the refused file is not installed');
      assert.equal(existsSync(join(caseDir, 'cache', 'demucs', 'mdx_extra_q.yaml')), false, 'no bag yaml without its members');
    } finally {
      await server.close();
    }
  });

  it("writes the catalog's v3 bags as Demucs' remote yamls: members by signature, mdx's weights, segment 44", () => {
    const mdxWeights = parseBagFile(readFileSync(join(dir as string, 'mdx_small.yaml'), 'utf8')).weights;
    for (const name of ['hdemucs_mmi', 'mdx', 'mdx_extra', 'mdx_q', 'mdx_extra_q']) {
      const model = catalogModel(name) as CatalogModel;
      const bag = parseBagFile(bagYaml(model));
      assert.deepEqual(
        bag.models,
        model.files.map((file) => file.slice(0, 8)),
        name,
      );
      assert.equal(bag.segment, 44, name);
      assert.deepEqual(bag.weights, name === 'mdx' || name === 'mdx_q' ? mdxWeights : undefined, name);
      for (const file of model.files)
        assert.match(
          model.downloads?.find((d) => d.file === file)?.url ?? `https://dl.fbaipublicfiles.com/demucs/hybrid_transformer/${file}`,
          new RegExp(`^https://dl\\.fbaipublicfiles\\.com/demucs/(mdx_final|hybrid_transformer)/${file}$`),
        );
    }
  });
});
