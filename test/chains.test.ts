/**
 * Chains (issue 47): a stem of one model fed to the next, in one job, through `stemsplit split`
 * (--then, --chain FILE), the API (`chain`) and a killed server. The fixtures' weights are random,
 * so these check the plumbing: stems named `<input>-<stem>`, the stems split are not written
 * unless kept, progress over every step, a cancel and a crash mid-chain, credits per step.
 */
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { writeSong } from './support/audio.js';
import { ApiClient } from './support/client.js';
import { createWebSession } from '../src/services/web-session.js';
import { webSessionLink } from '../src/net/page-links.js';
import { launchBrowser, NEEDS_CHROMIUM, openPage } from './support/browser.js';
import { fixtureDir } from './support/fixtures.js';
import { interruptWhen } from './support/interrupt.js';
import { killHard, runCli, startServeProcess } from './support/process.js';
import { startTestServer, tempDir, uploadFile, waitForSplit, type TestServer } from './support/server.js';
import { until } from './support/wait.js';

const roformer = fixtureDir('roformer');
const demucs = fixtureDir('demucs');
const msst = fixtureDir('msst');
const vr = fixtureDir('vr');
const skip = roformer === undefined || demucs === undefined || msst === undefined || vr === undefined ? 'the shared fixtures are missing' : false;

const work = tempDir();
const song = join(work, 'song.wav');
const VOCALS = roformer && join(roformer, 'bs_roformer_vocals.ckpt');
const KARAOKE = roformer && join(roformer, 'mel_band_roformer_2stem.ckpt');
const DEREVERB = vr && join(vr, 'vr_c_v51_4band_v3_noecho_tta.pth');
const FOUR_STEMS = demucs && join(demucs, 'htdemucs_small.th');
const env = { STEMSPLIT_DATA_DIR: join(work, 'data') };

/** Every file under `dir`, relative, sorted. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((name) => statSync(join(dir, name)).isFile())
    .sort();
}

describe('chains through stemsplit split', { skip }, () => {
  before(() => writeSong(song, 3));

  it('vocals, then karaoke on the vocals, then de-reverb on the lead: each step named <input>-<stem>, the stems split left out, progress over three steps', () => {
    const out = join(work, 'three');
    const result = runCli(
      ['split', song, '-m', VOCALS as string, '--then', `vocals=${KARAOKE}`, '--then', `vocals-vocals=${DEREVERB}`, '-o', out, '--format', 'flac', '--json'],
      env,
    );
    assert.equal(result.status, 0, result.stderr);
    const json = JSON.parse(result.stdout) as { model: string; stems: Record<string, string>; mixStems: string[] };
    assert.deepEqual(Object.keys(json.stems).sort(), ['no_vocals', 'vocals-other', 'vocals-vocals-echo', 'vocals-vocals-no_echo']);
    assert.deepEqual([...json.mixStems].sort(), Object.keys(json.stems).sort(), 'each split stem is replaced by its parts: together they are the song');
    assert.equal(json.model, 'bs_roformer_vocals then mel_band_roformer_2stem then vr_c_v51_4band_v3_noecho_tta');
    assert.deepEqual(filesUnder(out), ['song/no_vocals.flac', 'song/vocals-other.flac', 'song/vocals-vocals-echo.flac', 'song/vocals-vocals-no_echo.flac']);
    for (const step of [1, 2, 3]) assert.match(result.stderr, new RegExp(`step ${step}/3 separate`), `progress names step ${step}`);
    assert.match(result.stderr, /step 3: vocals-vocals with vr_c_v51_4band_v3_noecho_tta \(terms of its weights/);
  });

  it('a 4-stem Demucs, then an ensemble on its drums from a recipe file (paths from its folder); --keep-intermediate keeps the drums', () => {
    const folder = join(work, 'recipe');
    mkdirSync(folder, { recursive: true });
    for (const name of ['mdx23c_2stem.ckpt', 'mdx23c_2stem.yaml', 'scnet_2stem.ckpt', 'scnet_2stem.yaml']) {
      copyFileSync(join(msst as string, name), join(folder, name));
    }
    const recipe = join(folder, 'drumsep.yaml');
    writeFileSync(recipe, `- model: ${FOUR_STEMS}\n- input: drums\n  models: [mdx23c_2stem.ckpt, scnet_2stem.ckpt]\n  ensemble: max_wave\n`);
    const out = join(work, 'drums');
    const result = runCli(['split', song, '--chain', recipe, '--keep-intermediate', '-o', out, '--format', 'wav', '--json'], env);
    assert.equal(result.status, 0, result.stderr);
    const stems = Object.keys((JSON.parse(result.stdout) as { stems: Record<string, string> }).stems).sort();
    assert.ok(stems.includes('drums'), 'the drums are kept');
    for (const stem of ['bass', 'other', 'vocals']) assert.ok(stems.includes(stem), stem);
    const split = stems.filter((stem) => stem.startsWith('drums-'));
    assert.ok(split.length >= 2, `the ensemble's stems of the drums: ${stems.join(', ')}`);
  });

  it('refuses a chain that cannot run, in one line and exit 2, before any model loads', () => {
    // A checkpoint given by its path names its stems once loaded: the worker checks the chain then, before any step runs.
    const loaded = runCli(['split', song, '-m', VOCALS as string, '--then', `drums=${KARAOKE}`, '-o', join(work, 'refused')], env);
    assert.equal(loaded.status, 2, loaded.stderr);
    assert.match(
      loaded.stderr.trim().split('\n').at(-1) as string,
      /^stemsplit: the chain: step 2 splits "drums", which no earlier step makes \(they make vocals, no_vocals\)$/,
    );
    assert.ok(!existsSync(join(work, 'refused', 'song')), 'nothing written');
    const cases: Array<[string[], RegExp]> = [
      [['-m', VOCALS as string, '--then', 'vocals'], /--then takes INPUT=MODEL/],
      [['-m', VOCALS as string, '--keep-intermediate'], /--keep-intermediate applies to a chain/],
      [
        ['-m', VOCALS as string, '--then', `vocals=${KARAOKE}`, '--two-stems', 'vocals'],
        /--two-stems applies to one model; a chain writes the stems no later step splits/,
      ],
      [['--chain', join(work, 'missing.yaml')], /--chain .*missing\.yaml: cannot read it/],
    ];
    const bad = join(work, 'bad.yaml');
    writeFileSync(bad, '- input: vocals\n  model: x\n');
    cases.push([['--chain', bad], /step 1 splits the track itself: it takes no "input"/]);
    cases.push([['--chain', bad, '-m', VOCALS as string], /--chain names each step's model; leave out --model/]);
    for (const [args, message] of cases) {
      const result = runCli(['split', song, ...args, '-o', join(work, 'refused')], env);
      assert.notEqual(result.status, 0, args.join(' '));
      assert.match(result.stderr, message, args.join(' '));
      assert.equal(result.stderr.trim().split('\n').length, 1, `one line: ${result.stderr}`);
      assert.ok(!existsSync(join(work, 'refused', 'song')), 'nothing written');
    }
    assert.equal(runCli(['split', song, '--chain', join(work, 'missing.yaml')], env).status, 6, 'a missing recipe is a missing file');
  });

  it('Ctrl-C in the second step stops the chain: exit 130, no stem and no work folder left', async () => {
    const out = join(work, 'stopped');
    const long = join(work, 'long.wav');
    writeSong(long, 12);
    const stopped = await interruptWhen(
      ['split', long, '-m', VOCALS as string, '--then', `vocals=${KARAOKE}`, '-o', out],
      env,
      (stderr) => /step 2\/2 separate/.test(stderr),
      'the second step',
    );
    assert.equal(stopped.code, 130, stopped.stderr);
    assert.ok(stopped.seconds < 5, `stopped in ${stopped.seconds.toFixed(2)} s`);
    assert.deepEqual(existsSync(out) ? filesUnder(out) : [], [], 'no stems, no float spools');
  });
});

describe('chains through the API', { skip }, () => {
  let t: TestServer;
  const dataDir = join(work, 'server');
  before(async () => {
    for (const [file, name] of [
      [VOCALS, 'voc'],
      [KARAOKE, 'karaoke'],
      [DEREVERB, 'dereverb'],
    ] as const) {
      const added = runCli(['--data-dir', dataDir, 'models', 'add', file as string, '--name', name, '--terms', 'MIT (a test fixture)']);
      assert.equal(added.status, 0, added.stderr);
    }
    writeSong(song, 3);
    t = await startTestServer({ dataDir });
  });
  after(async () => t?.close());

  it('vocals, karaoke on the vocals, de-reverb on the lead as a job: <input>-<stem> names, its seconds once per step, its chain and step, stems that add up to the mix', async () => {
    const before = (await t.request('GET', '/credits')).json.data.balance as number;
    const input = await uploadFile(t, readFileSync(song));
    const chain = [{ model: 'voc' }, { input: 'vocals', model: 'karaoke' }, { input: 'vocals-vocals', model: 'dereverb' }];
    const created = await t.request('POST', '/audio/splits', { body: { input, chain } });
    assert.equal(created.status, 200, created.text);
    assert.equal(created.json.data.creditsUsed, 3 * 3, 'three seconds, three steps');
    const done = (await waitForSplit(t, created.json.data.id)).json.data;
    assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
    assert.equal(done.model, 'voc then karaoke then dereverb');
    assert.deepEqual(done.chain, chain);
    assert.equal(done.chainStep, 3);
    const written = ['no_vocals', 'vocals-other', 'vocals-vocals-echo', 'vocals-vocals-no_echo'];
    assert.deepEqual(Object.keys(done.stems).sort(), written);
    assert.deepEqual([...done.mixStems].sort(), written, "the split stems' parts stand in for them");
    for (const url of Object.values(done.stems as Record<string, string>)) assert.equal((await fetch(url)).status, 200);
    assert.equal((await t.request('GET', '/credits')).json.data.balance, before - 9);
  });

  it('a chain job cancelled through the API in its second step stops, leaves no stems or work folder, and every step is refunded', async () => {
    const before = (await t.request('GET', '/credits')).json.data.balance as number;
    const long = join(work, 'cancel.wav');
    writeSong(long, 10);
    const input = await uploadFile(t, readFileSync(long), 'cancel.wav');
    const created = await t.request('POST', '/audio/splits', { body: { input, chain: [{ model: 'voc' }, { input: 'vocals', model: 'karaoke' }] } });
    assert.equal(created.status, 200, created.text);
    const id = created.json.data.id as string;
    const inSecond = (job: { status: string; chainStep?: number }) => job.chainStep === 2 || (job.status !== 'queued' && job.status !== 'processing');
    const second = await t.client.waitForSplit(id, { until: inSecond, everyMs: 20 });
    assert.equal(second.json.data.status, 'processing', 'the cancel lands in the second step');
    assert.equal((await t.request('POST', `/audio/splits/${id}/cancel`)).status, 200);
    const done = (await waitForSplit(t, id)).json.data;
    assert.equal(done.status, 'failed');
    assert.equal(done.error.code, 'CANCELLED');
    assert.equal((await t.request('GET', '/credits')).json.data.balance, before, 'both steps refunded');
    const left = () => readdirSync(dataDir, { recursive: true, encoding: 'utf8' }).filter((name) => name.includes('.chain-') || name.includes(id));
    await until(
      () => left().length === 0,
      10_000,
      () => `the job's stems and work folder are removed: ${left().join(', ')}`,
    );
  });

  it('keepIntermediate keeps the vocals too; bad chains are refused with the v1 envelope', async () => {
    const input = await uploadFile(t, readFileSync(song));
    const kept = await t.request('POST', '/audio/splits', {
      body: { input, chain: [{ model: 'voc' }, { input: 'vocals', model: 'karaoke' }], keepIntermediate: true, outputFormat: 'wav' },
    });
    assert.equal(kept.status, 200, kept.text);
    const done = (await waitForSplit(t, kept.json.data.id)).json.data;
    assert.deepEqual(Object.keys(done.stems).sort(), ['no_vocals', 'vocals', 'vocals-other', 'vocals-vocals']);
    const refusals: Array<[Record<string, unknown>, RegExp]> = [
      [{ chain: [{ model: 'voc' }, { input: 'drums', model: 'karaoke' }] }, /chain: step 2 splits "drums", which no earlier step makes/],
      [{ chain: [{ model: 'voc' }], model: 'voc' }, /chain names each step's model; leave out model/],
      [{ chain: [{ input: 'vocals', model: 'voc' }] }, /step 1 splits the track itself/],
      [{ chain: [{ model: 'voc' }, { input: 'vocals', model: 'nope' }] }, /chain step 2: /],
      [{ keepIntermediate: true }, /keepIntermediate applies to a chain/],
    ];
    for (const [body, message] of refusals) {
      const refused = await t.request('POST', '/audio/splits', { body: { input: await uploadFile(t, readFileSync(song)), ...body } });
      assert.equal(refused.status, 422, `${JSON.stringify(body)}: ${refused.status}`);
      assert.equal(refused.json.success, false);
      assert.match(refused.json.error.message, message);
    }
  });

  it('the page builds the chain step by step, shows each step, its terms and the cost, and the job says which step it ran', {
    skip: NEEDS_CHROMIUM,
    timeout: 180_000,
  }, async () => {
    const browser = await launchBrowser();
    assert.ok(browser, 'chromium starts');
    try {
      const session = await createWebSession(t.server.data);
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      const { page, errors } = await openPage(context, webSessionLink(t.server.url, session.key));
      await page.locator('#upload-panel').waitFor();
      await page.getByLabel(/Choose models/).check();
      await page.getByRole('checkbox', { name: /^voc/ }).check();
      await page.getByRole('button', { name: 'Then split a stem with another model' }).click();
      await page.getByLabel('Stem step 2 splits').selectOption('vocals');
      await page.getByLabel('Model of step 2').selectOption('karaoke');
      const step = page.locator('#chain-steps li[data-step="2"]');
      assert.match((await step.textContent()) ?? '', /Terms: MIT \(a test fixture\)/);
      assert.match((await step.textContent()) ?? '', /Writes vocals-vocals, vocals-other/);
      await page.locator('#file-input').setInputFiles(song);
      await page.locator('#pending-files').getByText('song.wav').waitFor();
      const summary = (await page.locator('#choice-summary').textContent()) ?? '';
      assert.match(
        summary,
        /^Runs a chain of 2 steps: step 1 splits the song with voc; step 2 splits vocals with karaoke\. It costs 2 credits per second of audio/,
      );
      assert.match(summary, /Terms: voc and karaoke: MIT \(a test fixture\)\./);
      await page.getByRole('button', { name: 'Split', exact: true }).click();
      await page.locator('#stems li[data-stem="vocals-vocals"]').waitFor({ timeout: 150_000 });
      const row = page.locator('#history li').filter({ hasText: 'song.wav' }).first();
      assert.match((await row.locator('.history-meta').textContent()) ?? '', /^Chain of 2 · voc, then vocals with karaoke · /);
      const id = (await row.getAttribute('data-split')) as string;
      const job = (await t.request('GET', `/audio/splits/${id}`)).json.data;
      assert.deepEqual(job.chain, [{ model: 'voc' }, { input: 'vocals', model: 'karaoke' }]);
      assert.match((await page.locator('#mixer-model').textContent()) ?? '', /Made with a chain: voc, then vocals with karaoke\. Terms: voc and karaoke: MIT/);
      assert.deepEqual(errors, []);
      await context.close();
    } finally {
      await browser.close();
    }
  });

  it('a step that fails at run time fails the job and refunds every step', async () => {
    const before = (await t.request('GET', '/credits')).json.data.balance as number;
    const input = await uploadFile(t, readFileSync(song));
    // An ensemble's stems are known once it loads: its "drums" is checked, and missing, in the worker.
    const created = await t.request('POST', '/audio/splits', {
      body: { input, chain: [{ models: ['voc', 'karaoke'] }, { input: 'drums', model: 'karaoke' }] },
    });
    assert.equal(created.status, 200, created.text);
    const done = (await waitForSplit(t, created.json.data.id)).json.data;
    assert.equal(done.status, 'failed');
    assert.match(done.error.message, /step 2 splits "drums", which no earlier step makes/);
    assert.equal((await t.request('GET', '/credits')).json.data.balance, before, 'refunded');
  });
});

describe('a chain and a killed server', { skip }, () => {
  it('resumes at the step it was in: the finished step is not run again, the job succeeds once, charged once', async () => {
    const dataDir = join(work, 'crash');
    const serveEnv = { STEMSPLIT_DATA_DIR: dataDir };
    for (const [file, name] of [
      [VOCALS, 'voc'],
      [KARAOKE, 'karaoke'],
    ] as const) {
      assert.equal(runCli(['models', 'add', file as string, '--name', name, '--terms', 'MIT (a test fixture)'], serveEnv).status, 0);
    }
    const key = (JSON.parse(runCli(['keys', 'create', '--json'], serveEnv).stdout) as { key: string }).key;
    const long = join(work, 'crash.wav');
    writeSong(long, 10);
    let server = await startServeProcess([], serveEnv);
    const client = new ApiClient(() => server.url, key);
    try {
      const created = await client.request('POST', '/audio/splits', {
        body: { input: await client.upload(readFileSync(long), 'crash.wav'), chain: [{ model: 'voc' }, { input: 'vocals', model: 'karaoke' }] },
      });
      assert.equal(created.status, 200, created.text);
      const id = created.json.data.id as string;
      await client.waitForSplit(id, {
        until: (job) => (job as { chainStep?: number }).chainStep === 2 || (job.status !== 'processing' && job.status !== 'queued'),
        everyMs: 20,
        timeoutMs: 240_000,
      });
      const finished = readdirSync(dataDir, { recursive: true, encoding: 'utf8' }).find((name) => name.endsWith(join('step-1', 'done.json')));
      assert.ok(finished, 'the first step finished and said so');
      const first = statSync(join(dataDir, finished));
      await killHard(server.child);

      server = await startServeProcess([], serveEnv);
      await client.waitForSplit(id, {
        until: (job) =>
          (job.status === 'processing' && (job as { chainStep?: number }).chainStep === 2) || job.status === 'succeeded' || job.status === 'failed',
        everyMs: 20,
        timeoutMs: 240_000,
      });
      const again = existsSync(join(dataDir, finished)) ? statSync(join(dataDir, finished)) : undefined;
      if (again) assert.equal(again.mtimeMs, first.mtimeMs, 'step 1 was kept, not run again');
      const done = (await client.waitForSplit(id, { timeoutMs: 240_000 })).json.data;
      assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
      assert.deepEqual(Object.keys(done.stems).sort(), ['no_vocals', 'vocals-other', 'vocals-vocals']);
      assert.equal((await client.request('GET', '/credits')).json.data.balance, 3600 - 2 * 10, 'charged once, for two steps');
      await until(
        () => !readdirSync(dataDir, { recursive: true, encoding: 'utf8' }).some((name) => name.includes('.chain-')),
        10_000,
        () => 'the work folder is removed',
      );
    } finally {
      await killHard(server.child);
    }
  });
});
