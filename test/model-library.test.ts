/**
 * The model library (issue 36): models users bring are added to a data dir with `models add`,
 * listed by `models list` and GET /v1/models beside the catalog and the bundled models, and
 * every job picks its own model, ensemble, two stems, format and depth through the API. Checked
 * through the real CLI and a real server on loopback, with the shared reference fixtures as the
 * users' models.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { runCli } from './support/process.js';
import { writeSong } from './support/audio.js';
import { MODEL_CATALOG } from '../src/models/catalog.js';
import { familyById } from '../src/models/families.js';
import { flagAttribute } from '../src/contract/family.js';
import { startTestServer, tempDir, uploadFile, waitForSplit, type TestServer } from './support/server.js';
import { fixtureDir } from './support/fixtures.js';

const SCNET = resolve('../shared/fixtures/msst/scnet_4stem.ckpt');
const MDX = resolve('../shared/fixtures/mdx/mdx_a_nfft6144_vocals.onnx');
/** Every test here adds the shared SCNet and MDX-Net fixtures to a library: a clone without them skips, saying why. */
const NO_FIXTURES = fixtureDir('msst') === undefined || fixtureDir('mdx') === undefined ? 'needs ../shared/fixtures/msst and mdx' : false;

/** A data dir with the two fixtures in its library, as `models add` leaves it. */
function libraryDataDir(): string {
  const dataDir = tempDir();
  const scnet = runCli(['--data-dir', dataDir, 'models', 'add', SCNET, '--terms', 'MIT (a test fixture)']);
  assert.equal(scnet.status, 0, scnet.stderr);
  assert.match(scnet.stdout, /^scnet_4stem added: 4 stems \(drums, bass, other, vocals\), 2 file\(s\) copied/m);
  const mdx = runCli(['--data-dir', dataDir, 'models', 'add', MDX, '--name', 'mdx-vocals']);
  assert.equal(mdx.status, 0, mdx.stderr);
  assert.match(mdx.stdout, /^mdx-vocals added: 2 stems \(vocals, instrumental\)/m);
  return dataDir;
}

interface Listed {
  name: string;
  family: string;
  origin: string;
  installed: boolean;
  task: string;
  sources: string[];
  terms: string;
  secondsPerMinute: number | null;
}

function listed(dataDir: string): Listed[] {
  const result = runCli(['--data-dir', dataDir, 'models', 'list', '--json']);
  assert.equal(result.status, 0, result.stderr);
  return JSON.parse(result.stdout) as Listed[];
}

test('models add keeps a copy of each file and its companions, checked by loading it; models list shows them', { skip: NO_FIXTURES }, () => {
  const dataDir = libraryDataDir();
  const rows = listed(dataDir);
  const scnet = rows.find((row) => row.name === 'scnet_4stem');
  assert.deepEqual(
    scnet && { family: scnet.family, origin: scnet.origin, installed: scnet.installed, task: scnet.task, sources: scnet.sources, terms: scnet.terms },
    { family: 'scnet', origin: 'library', installed: true, task: 'four-stems', sources: ['drums', 'bass', 'other', 'vocals'], terms: 'MIT (a test fixture)' },
  );
  const mdx = rows.find((row) => row.name === 'mdx-vocals');
  assert.deepEqual(mdx && [mdx.family, mdx.task, mdx.terms], ['mdx', 'vocals', 'not stated']);
  // The yaml came along, byte for byte, and the copy does not depend on the original.
  assert.deepEqual(readFileSync(join(dataDir, 'models', 'scnet_4stem', 'scnet_4stem.yaml')), readFileSync(SCNET.replace(/\.ckpt$/, '.yaml')));
  const table = runCli(['--data-dir', dataDir, 'models', 'list']);
  assert.match(table.stdout, /^scnet_4stem +4 stems +library +scnet +MIT \(a test fixture\)$/m);
});

test('models add refuses, in one line and with the documented code, what it cannot keep', { skip: NO_FIXTURES }, () => {
  const dataDir = tempDir();
  const add = (...args: string[]) => runCli(['--data-dir', dataDir, 'models', 'add', ...args]);
  const missing = add(join(dataDir, 'nope.ckpt'));
  assert.equal(missing.status, 12);
  assert.match(missing.stderr, /nope\.ckpt: no such file\n$/);

  // A checkpoint without its yaml: the flag to name one is models add's own.
  const lonely = join(dataDir, 'lonely.ckpt');
  copyFileSync(SCNET, lonely);
  const noConfig = add(lonely);
  assert.equal(noConfig.status, 12);
  assert.match(noConfig.stderr, /no config beside .*lonely\.ckpt \(expected lonely\.yaml\); name one with --config\n$/);

  // Damaged weights under a good yaml: refused when loaded, and nothing is left in the library.
  const damaged = join(dataDir, 'damaged.ckpt');
  writeFileSync(damaged, 'not a checkpoint at all');
  const refused = add(damaged, '--config', SCNET.replace(/\.ckpt$/, '.yaml'));
  assert.equal(refused.status, 13, refused.stderr);
  assert.equal(refused.stderr.trim().split('\n').length, 1, `the refusal is the one line on stderr: ${refused.stderr}`);
  assert.ok(refused.stderr.startsWith('stemsplit: '), refused.stderr);
  // The line names the user's file, not its staged copy in the library (gone once the add is refused).
  assert.ok(refused.stderr.includes(damaged), refused.stderr);
  assert.doesNotMatch(refused.stderr, /\.adding-/);
  assert.equal(
    listed(dataDir).some((row) => row.origin === 'library'),
    false,
  );

  assert.equal(add(SCNET).status, 0);
  const twice = add(SCNET);
  assert.equal(twice.status, 2);
  assert.match(twice.stderr, /already has a model named scnet_4stem; remove it first/);
  const badName = add(SCNET, '--name', 'a/b');
  assert.equal(badName.status, 2);
  assert.match(badName.stderr, /"a\/b" cannot name a model/);

  const removed = runCli(['--data-dir', dataDir, 'models', 'remove', 'scnet_4stem']);
  assert.equal(removed.status, 0, removed.stderr);
  assert.equal(existsSync(join(dataDir, 'models', 'scnet_4stem')), false);
});

test('split runs a library model by its name', { skip: NO_FIXTURES }, () => {
  const dataDir = libraryDataDir();
  const song = join(dataDir, 'song.wav');
  writeSong(song, 3);
  const out = join(dataDir, 'out');
  const result = runCli(['--data-dir', dataDir, 'split', song, '--model', 'mdx-vocals', '-o', out, '--format', 'wav']);
  assert.equal(result.status, 0, result.stderr);
  assert.match(result.stderr, /^Loaded model mdx-vocals \(terms of its weights: not stated\), on CPU$/m);
  for (const stem of ['vocals', 'instrumental']) assert.ok(existsSync(join(out, 'song', `${stem}.wav`)), stem);
});

test('models pull --file installs a file from disk under its catalog name, held to the catalog hash', { skip: NO_FIXTURES }, () => {
  const dataDir = tempDir();
  const pinned = MODEL_CATALOG.find((model) => model.downloads?.every((download) => download.sha256 !== undefined));
  assert.ok(pinned, 'the catalog pins the hashes of some model');
  const mismatch = runCli(['--data-dir', dataDir, 'models', 'pull', pinned.name, '--file', SCNET]);
  assert.equal(mismatch.status, 13, mismatch.stderr);
  assert.match(
    mismatch.stderr,
    new RegExp(
      `scnet_4stem\\.ckpt has SHA-256 [0-9a-f]{8}…, not [0-9a-f]{8}… \\(the catalog's ${pinned.files[0]?.replace(/\./g, '\\.')}\\); nothing was installed`,
    ),
  );
  assert.equal(mismatch.stderr.trim().split('\n').length, 1, `a refused file is the one line on stderr: ${mismatch.stderr}`);

  // Where the publisher gives no hash, the file's own is recorded, as a download's would be.
  const unpinned = MODEL_CATALOG.find((model) => model.family === 'msst' && model.downloads?.every((download) => download.sha256 === undefined));
  if (unpinned === undefined) return;
  const pulled = runCli(['--data-dir', dataDir, 'models', 'pull', unpinned.name, '--file', SCNET, '--file', SCNET.replace(/\.ckpt$/, '.yaml')]);
  assert.equal(pulled.status, 0, pulled.stderr);
  assert.ok(pulled.stderr.includes(`terms of the weights: ${unpinned.terms}`), `an installed model's terms are said: ${pulled.stderr}`);
  const row = listed(dataDir).find((model) => model.name === unpinned.name);
  assert.equal(row?.installed, true);
  assert.equal(row?.origin, 'pulled');
});

async function split(t: TestServer, body: Record<string, unknown>): Promise<{ status: number; json: any }> {
  const song = join(t.dataDir, `song-${Math.random().toString(36).slice(2)}.wav`);
  writeSong(song, 3);
  const input = await uploadFile(t, readFileSync(song));
  return t.request('POST', '/audio/splits', { body: { input, ...body } });
}

test('through the API a job names its model or ensemble, two stems, format and depth, and GET says what ran', { skip: NO_FIXTURES }, async () => {
  const t = await startTestServer({ dataDir: libraryDataDir() });
  try {
    const models = (await t.request('GET', '/models')).json.data;
    const scnet = models.items.find((item: Listed) => item.name === 'scnet_4stem');
    assert.deepEqual([scnet.origin, scnet.allowed, scnet.task, scnet.secondsPerMinute], ['library', true, 'four-stems', null]);
    assert.equal(models.ensembleAlgorithms[0], 'avg_wave');
    assert.equal(typeof models.defaults['4s'], 'string');

    const single = await split(t, { model: 'scnet_4stem', outputFormat: 'flac', bitDepth: 24 });
    assert.equal(single.status, 200, JSON.stringify(single.json));
    const ensemble = await split(t, {
      models: ['scnet_4stem', 'mdx-vocals'],
      ensemble: 'avg_fft',
      ensembleWeights: [2, 1],
      twoStems: 'vocals',
      outputFormat: 'wav',
    });
    assert.equal(ensemble.status, 200, JSON.stringify(ensemble.json));
    const plain = await split(t, { stemModel: '4s' });
    assert.equal(plain.status, 200);

    const one = (await waitForSplit(t, single.json.data.id)).json.data;
    assert.equal(one.status, 'succeeded', JSON.stringify(one.error));
    assert.deepEqual(
      [one.model, one.models, one.ensemble, one.outputFormat, one.bitDepth, one.stemModel],
      ['scnet_4stem', ['scnet_4stem'], null, 'flac', 24, '4s'],
    );
    assert.deepEqual(Object.keys(one.stems), ['drums', 'bass', 'other', 'vocals']);
    const flac = await fetch(one.stems.vocals);
    assert.equal(flac.headers.get('content-type'), 'audio/flac');
    const bytes = Buffer.from(await flac.arrayBuffer());
    assert.equal(bytes.subarray(0, 4).toString('latin1'), 'fLaC');
    // STREAMINFO's bits per sample (5 bits at byte 20-21 of the file, stored minus one).
    assert.equal(((((bytes[20] as number) & 0x01) << 4) | ((bytes[21] as number) >> 4)) + 1, 24);

    const two = (await waitForSplit(t, ensemble.json.data.id)).json.data;
    assert.equal(two.status, 'succeeded', JSON.stringify(two.error));
    assert.deepEqual(
      [two.model, two.models, two.ensemble, two.ensembleWeights, two.twoStems, two.outputFormat],
      ['scnet_4stem+mdx-vocals', ['scnet_4stem', 'mdx-vocals'], 'avg_fft', [2, 1], 'vocals', 'wav'],
    );
    assert.deepEqual(Object.keys(two.stems), ['vocals', 'no_vocals']);
    assert.equal((await fetch(two.stems.no_vocals)).headers.get('content-type'), 'audio/wav');

    const three = (await waitForSplit(t, plain.json.data.id)).json.data;
    assert.equal(three.status, 'succeeded');
    assert.deepEqual([three.model, three.models, three.stemModel, three.outputFormat], [models.defaults['4s'], [models.defaults['4s']], '4s', 'mp3']);

    // Each model that ran now has its measured speed.
    const after = (await t.request('GET', '/models')).json.data.items as Listed[];
    const measured = after.find((item) => item.name === 'scnet_4stem')?.secondsPerMinute;
    assert.ok(typeof measured === 'number' && measured > 0, String(measured));
  } finally {
    await t.close();
  }
});

test('the API refuses a model it cannot run with a 422 naming it', { skip: NO_FIXTURES }, async () => {
  const t = await startTestServer({ dataDir: libraryDataDir(), servedModels: ['scnet_4stem'] });
  try {
    const refusal = async (body: Record<string, unknown>) => {
      const reply = await split(t, body);
      assert.equal(reply.status, 422, JSON.stringify(reply.json));
      return reply.json.error.message as string;
    };
    assert.match(await refusal({ model: 'nope' }), /^model: "nope" is not a model of this server/);
    assert.match(
      await refusal({ model: 'htdemucs' }),
      /^model: htdemucs is not installed on this server \(its operator can run: stemsplit models pull htdemucs\)$/,
    );
    assert.match(await refusal({ model: 'mdx-vocals' }), /^model: mdx-vocals is not offered to API keys on this server/);
    assert.match(await refusal({ models: ['scnet_4stem', 'mdx-vocals'] }), /^models: mdx-vocals is not offered/);
    assert.match(await refusal({ model: 'scnet_4stem', models: ['scnet_4stem', 'bundled-4s'] }), /give either model or models/);
    assert.match(
      await refusal({ model: 'scnet_4stem', ensemble: 'max_wave' }),
      /ensemble and ensembleWeights combine two or more models: name each with models/,
    );
    assert.match(
      await refusal({ model: 'scnet_4stem', twoStems: 'guitar' }),
      /^twoStems guitar: scnet_4stem writes no such stem \(it writes drums, bass, other, vocals\)$/,
    );
    assert.match(await refusal({ model: 'scnet_4stem', bitDepth: 24 }), /bitDepth applies to outputFormat wav, flac, aiff, alac/);
    assert.match(await refusal({ model: 'scnet_4stem', outputFormat: 'flac', bitDepth: 32 }), /bitDepth 32 \(float\) applies to outputFormat wav only/);
    const listing = (await t.request('GET', '/models')).json.data.items as Array<Listed & { allowed: boolean }>;
    assert.deepEqual(
      listing.filter((item) => item.origin === 'library').map((item) => [item.name, item.allowed]),
      [
        ['mdx-vocals', false],
        ['scnet_4stem', true],
      ],
    );
    // Nothing was charged for a refused job.
    assert.equal((await t.request('GET', '/credits')).json.data.balance, 3600);
  } finally {
    await t.close();
  }
});

test('a job whose model was removed before it ran fails saying so, and is refunded', { skip: NO_FIXTURES }, async () => {
  const dataDir = libraryDataDir();
  const first = await startTestServer({ dataDir });
  let id: string;
  try {
    await first.server.runner?.stop();
    const made = await split(first, { model: 'mdx-vocals' });
    assert.equal(made.status, 200, JSON.stringify(made.json));
    id = made.json.data.id;
  } finally {
    await first.close();
  }
  assert.equal(runCli(['--data-dir', dataDir, 'models', 'remove', 'mdx-vocals']).status, 0);
  const second = await startTestServer({ dataDir });
  try {
    const failed = (await waitForSplit(second, id)).json.data;
    assert.equal(failed.status, 'failed');
    assert.equal(failed.error.message, 'the model mdx-vocals that this job asked for is no longer installed on this server; the credits were refunded');
    const history = await second.request('GET', '/credits');
    assert.equal(history.json.data.balance, 3600);
  } finally {
    await second.close();
  }
});

test('serve refuses to start, in one line, on a model it cannot find or read', { skip: NO_FIXTURES }, () => {
  const dataDir = tempDir();
  const serve = (...args: string[]) => runCli(['--data-dir', dataDir, 'serve', '--port', '0', ...args]);
  const missing = serve('--model-4s', join(dataDir, 'nope.ckpt'));
  assert.equal(missing.status, 12);
  assert.equal(missing.stderr, `stemsplit: --model-4s: ${join(dataDir, 'nope.ckpt')}: no such file\n`);
  const lonely = join(dataDir, 'lonely.ckpt');
  copyFileSync(SCNET, lonely);
  const noConfig = serve('--model-6s', lonely);
  assert.equal(noConfig.status, 12);
  assert.match(noConfig.stderr, /^stemsplit: --model-6s: no config beside .*lonely\.ckpt \(expected lonely\.yaml\)/);
  const unknown = serve('--model-4s', 'no-such-model');
  assert.equal(unknown.status, 12);
  assert.match(unknown.stderr, /^stemsplit: --model-4s: unknown model "no-such-model"/);
  const notPulled = serve('--model-4s', 'htdemucs');
  assert.equal(notPulled.status, 12);
  assert.match(notPulled.stderr, /^stemsplit: --model-4s: none of htdemucs is installed; run: stemsplit models pull htdemucs\n$/);
  const served = serve('--models', 'htdemucs');
  assert.equal(served.status, 12);
  assert.match(served.stderr, /^stemsplit: --models: htdemucs is not installed/);
});

test('the CLI as scripts and UVR users expect: usage errors exit 2, family flags checked, python-audio-separator spellings', { skip: NO_FIXTURES }, () => {
  const dataDir = tempDir();
  const song = join(dataDir, 'song.wav');
  writeSong(song, 2);
  const split = (...args: string[]) => runCli(['--data-dir', dataDir, 'split', song, ...args]);
  const usage = (result: { status: number | null; stderr: string }, message: RegExp) => {
    assert.equal(result.status, 2, result.stderr);
    assert.equal(result.stderr.split('\n').length, 2, `one line: ${result.stderr}`);
    assert.match(result.stderr, message);
  };
  usage(split('--bogus'), /^stemsplit: unknown option '--bogus' \(see --help\)$/m);
  usage(runCli(['--data-dir', dataDir, 'split']), /^stemsplit: missing required argument 'files'/m);
  usage(runCli(['--data-dir', dataDir, 'models', 'add']), /^stemsplit: missing required argument 'files'/m);

  const nope = join(dataDir, 'nope.ckpt');
  const missing = split('--model', nope);
  assert.equal(missing.status, 12);
  assert.equal(missing.stderr, `stemsplit: ${nope}: no such file\n`);
  usage(split('--model', SCNET.replace(/\.ckpt$/, '.yaml')), /is an MSST model config, not a model: run its checkpoint: --model .*scnet_4stem\.ckpt$/m);
  usage(split('--mdx-denoise'), /^stemsplit: --mdx-denoise applies to MDX-Net \.onnx models; no --model was given, so 4s runs \S+ \(bundled\)$/m);
  usage(
    split('--model', SCNET, '--mdx-segment-size', '256'),
    /^stemsplit: --mdx-segment-size applies to MDX-Net \.onnx models; scnet_4stem \(scnet\) is not one$/m,
  );
  usage(split('--model-type', 'scnet'), /^stemsplit: --model-type applies to MSST checkpoints \(\.ckpt, \.pth\); no --model was given/m);
  usage(split('--ensemble', 'bogus'), /^stemsplit: --ensemble must be one of avg_wave, .*, got "bogus"$/m);

  // A python-audio-separator command line, as its users type it.
  const out = join(dataDir, 'sep');
  const theirs = split('--model_filename', MDX, '--output_dir', out, '--output_format', 'FLAC', '--single_stem', 'no_vocals', '--mdx_segment_size', '256');
  assert.equal(theirs.status, 0, theirs.stderr);
  assert.deepEqual(readdirSync(join(out, 'song')), ['no_vocals.flac']);
  assert.match(runCli(['split', '--help']).stdout, /--output_format +--format\n/);
});

test('a job passes its model family settings as modelOptions, checked against the models it runs', { skip: NO_FIXTURES }, async () => {
  const t = await startTestServer({ dataDir: libraryDataDir() });
  try {
    const listing = (await t.request('GET', '/models')).json.data.items as Array<Listed & { options: string[] }>;
    // Each model lists its family's table, by the names the API takes (the flags' attributes).
    const tableOf = (id: string) => familyById(id).optionTable.map((row) => flagAttribute(row.flags));
    assert.deepEqual(listing.find((item) => item.name === 'mdx-vocals')?.options, tableOf('mdx'));
    assert.ok(tableOf('mdx').includes('mdxDenoise') && tableOf('msst').includes('mdxcOverlap'));
    assert.deepEqual(listing.find((item) => item.name === 'scnet_4stem')?.options, tableOf('msst'));
    const refusal = async (body: Record<string, unknown>) => {
      const reply = await split(t, body);
      assert.equal(reply.status, 422, JSON.stringify(reply.json));
      return reply.json.error.message as string;
    };
    assert.match(
      await refusal({ model: 'scnet_4stem', modelOptions: { mdxDenoise: true } }),
      /^modelOptions\.mdxDenoise applies to MDX-Net \.onnx models, and scnet_4stem is not one$/,
    );
    assert.match(
      await refusal({ model: 'mdx-vocals', modelOptions: { mdxOverlap: 2 } }),
      /^modelOptions\.mdxOverlap must be a number from 0 to below 1, got "2"$/,
    );
    assert.match(
      await refusal({ model: 'mdx-vocals', modelOptions: { shifts: 2 } }),
      /^modelOptions\.shifts applies to stemsplit model\.json models, Demucs models \(\.th, bag \.yaml\), and mdx-vocals is not one$/,
    );
    assert.match(await refusal({ model: 'mdx-vocals', modelOptions: { bogus: 2 } }), /^modelOptions\.bogus is not an option of any model family here/);

    const made = await split(t, { model: 'mdx-vocals', modelOptions: { mdxDenoise: true, mdxOverlap: 0.5 } });
    assert.equal(made.status, 200, JSON.stringify(made.json));
    const done = (await waitForSplit(t, made.json.data.id)).json.data;
    assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
    assert.deepEqual(done.modelOptions, { mdxDenoise: true, mdxOverlap: 0.5 });
  } finally {
    await t.close();
  }
});

test('models bench times a model as a job runs it and records the figure models list shows', { skip: NO_FIXTURES }, () => {
  const dataDir = libraryDataDir();
  const bench = runCli(['--data-dir', dataDir, 'models', 'bench', 'mdx-vocals', '--seconds', '5', '--json']);
  assert.equal(bench.status, 0, bench.stderr);
  const [result] = JSON.parse(bench.stdout) as Array<{ model: string; secondsPerMinute: number; audioSeconds: number }>;
  assert.equal(result?.model, 'mdx-vocals');
  assert.equal(result?.audioSeconds, 5);
  assert.ok((result?.secondsPerMinute ?? 0) > 0);
  assert.equal(listed(dataDir).find((row) => row.name === 'mdx-vocals')?.secondsPerMinute, result?.secondsPerMinute);
});

test('--precision int8 with a model whose family computes in fp32 only is refused, naming both', { skip: NO_FIXTURES }, () => {
  const dataDir = tempDir();
  const song = join(dataDir, 'song.wav');
  writeSong(song, 1);
  const refused = runCli(['--data-dir', dataDir, 'split', song, '--model', MDX, '--precision', 'int8']);
  assert.equal(refused.status, 2, refused.stderr);
  assert.equal(
    refused.stderr,
    'stemsplit: --precision int8: mdx_a_nfft6144_vocals (mdx) runs in fp32 only: int8 is not implemented for its family; run it without --precision int8\n',
  );
});

test('models add takes a folder as UVR keeps one: each model with its companions, other files skipped, a bad one named', { skip: NO_FIXTURES }, () => {
  const dataDir = tempDir();
  const folder = join(dataDir, 'uvr-models');
  mkdirSync(folder);
  for (const file of ['scnet_2stem.ckpt', 'scnet_2stem.yaml', 'scnet_2stem.demix.out.f32'])
    copyFileSync(resolve('../shared/fixtures/msst', file), join(folder, file));
  for (const file of ['mdx_b_nfft4096_instrumental.onnx', 'mdx_b_nfft4096_instrumental.json'])
    copyFileSync(resolve('../shared/fixtures/mdx', file), join(folder, file));
  writeFileSync(join(folder, 'notes.txt'), 'where these came from');
  writeFileSync(join(folder, 'broken.ckpt'), 'not a checkpoint');
  const result = runCli(['--data-dir', dataDir, 'models', 'add', folder]);
  assert.equal(result.status, 12, result.stderr);
  assert.match(result.stderr, /^stemsplit: no config beside .*broken\.ckpt \(expected broken\.yaml\); name one with --config$/m);
  assert.match(result.stderr, /^stemsplit: 1 of 3 model files were not added: broken\.ckpt$/m);
  assert.deepEqual(
    listed(dataDir)
      .filter((row) => row.origin === 'library')
      .map((row) => row.name),
    ['mdx_b_nfft4096_instrumental', 'scnet_2stem'],
  );
});
