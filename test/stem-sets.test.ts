/**
 * Stem sets that overlap, and one folder for several models (issue 47 item 6): which stems add up
 * to the mix (`mixStems`, for an ensemble of a 4-stem and a vocals/instrumental model the four,
 * not no_vocals again); splitting one song with several models into one -o keeps each model's
 * stems apart, and a --filename without {model} that would replace another model's stems is
 * refused; `models add FOLDER` takes a Demucs bag's members as the bag's, not as models of their own.
 * The page (in chromium) plays, mixes and exports the mix set only.
 */
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { outputPlaces } from '../src/cli/filename-template.js';
import { StemFolders } from '../src/cli/stem-folders.js';
import { ensemblePlan, mixPartitions } from '../src/ensemble/plan.js';
import { mixStems, type StemPartition } from '../src/separation/mix-set.js';
import { writeSong } from './support/audio.js';
import { fixtureDir } from './support/fixtures.js';
import { runCli } from './support/process.js';
import { decodePlanar } from './support/reference-audio.js';
import { startTestServer, tempDir, type TestServer } from './support/server.js';
import { launchBrowser, NEEDS_CHROMIUM, openPage } from './support/browser.js';
import { createWebSession } from '../src/services/web-session.js';
import { webSessionLink } from '../src/net/page-links.js';

const work = tempDir('stemsplit-stem-sets-');
after(() => rmSync(work, { recursive: true, force: true }));
const env = { STEMSPLIT_DATA_DIR: join(work, 'data'), STEMSPLIT_CACHE_DIR: join(work, 'cache') };
const SONG = join(work, 'song.wav');
const FOUR = { name: 'four', sources: ['drums', 'bass', 'other', 'vocals'] };
const MDX = fixtureDir('mdx');
const DEMUCS = fixtureDir('demucs');

before(() => writeSong(SONG, 1));

/** The sum of planar stems. */
function sumOf(stems: readonly Float32Array[]): Float32Array {
  const out = new Float32Array((stems[0] as Float32Array).length);
  for (const stem of stems) for (let i = 0; i < out.length; i++) out[i] = (out[i] as number) + (stem[i] as number);
  return out;
}

/** Level of `x` against `reference`, in dB. */
function levelDb(x: Float32Array, reference: Float32Array): number {
  const power = (v: Float32Array) => v.reduce((sum, s) => sum + s * s, 0);
  return 10 * Math.log10(power(x) / power(reference));
}

describe('the mix set', () => {
  it('an ensemble of a 4-stem and a vocals/instrumental model: vocals, drums, bass, other; no_vocals is their alternative, not an addition', () => {
    const members = [FOUR, { name: 'voc', sources: ['vocals', 'instrumental'] }];
    const plan = ensemblePlan(members);
    assert.deepEqual(plan.stems, ['drums', 'bass', 'other', 'vocals', 'no_vocals']);
    assert.deepEqual(mixStems(plan.stems, mixPartitions(plan, members)), ['drums', 'bass', 'other', 'vocals']);
    // Members in the other order: the same set, the finest partition wins over the first given.
    const swapped = [members[1], members[0]] as typeof members;
    const plan2 = ensemblePlan(swapped);
    assert.deepEqual(mixStems(plan2.stems, mixPartitions(plan2, swapped)).sort(), ['bass', 'drums', 'other', 'vocals']);
    // --two-stems: the pair from every member.
    const pair = ensemblePlan(members, 'vocals');
    assert.deepEqual(mixStems(pair.stems, mixPartitions(pair, members)), ['vocals', 'no_vocals']);
    // Two 2-stem models of different targets: the first model's pair (the other's is an alternative).
    const split = [
      { name: 'v', sources: ['vocals', 'instrumental'] },
      { name: 'd', sources: ['drums', 'other'] },
    ];
    const plan3 = ensemblePlan(split);
    assert.deepEqual(mixStems(plan3.stems, mixPartitions(plan3, split)), ['vocals', 'no_vocals']);
  });

  it('one stem written adds up to nothing; a chain refines the stem it split', () => {
    assert.deepEqual(mixStems(['vocals'], [{ parts: FOUR.sources }]), []);
    // A chain: the mix to 4 stems, then vocals → vocals-vocals + vocals-instrumental (vocals itself not written).
    const chain: StemPartition[] = [{ parts: FOUR.sources }, { whole: 'vocals', parts: ['vocals-vocals', 'vocals-instrumental'] }];
    const written = ['drums', 'bass', 'other', 'vocals-vocals', 'vocals-instrumental'];
    assert.deepEqual(mixStems(written, chain), ['drums', 'bass', 'other', 'vocals-vocals', 'vocals-instrumental']);
    // --keep-intermediate writes vocals too: still each part once.
    assert.deepEqual(mixStems(['vocals', ...written], chain), ['drums', 'bass', 'other', 'vocals-vocals', 'vocals-instrumental']);
  });
});

describe('one -o for several models', () => {
  const out = join(work, 'out');
  const split = (args: readonly string[]) => runCli(['split', SONG, '--format', 'wav', '-o', out, ...args], env);
  const files = (dir: string) => readdirSync(dir).sort();

  it('the first model writes <song>/, another <song>/<model>/; a --filename without {model} is refused, with it placed anywhere', () => {
    const four = split(['--model', 'stemsplit-small-4s']);
    assert.equal(four.status, 0, four.stderr);
    const first = readFileSync(join(out, 'song', 'vocals.wav'));
    const six = split(['--model', 'stemsplit-small-6s']);
    assert.equal(six.status, 0, six.stderr);
    assert.deepEqual(files(join(out, 'song')), ['bass.wav', 'drums.wav', 'other.wav', 'stemsplit-small-6s', 'vocals.wav']);
    assert.deepEqual(files(join(out, 'song', 'stemsplit-small-6s')), ['bass.wav', 'drums.wav', 'guitar.wav', 'other.wav', 'piano.wav', 'vocals.wav']);
    assert.ok(readFileSync(join(out, 'song', 'vocals.wav')).equals(first), "the 4-stem model's vocals are untouched");
    assert.match(six.stdout, new RegExp(`^guitar\\t${join(out, 'song', 'stemsplit-small-6s', 'guitar.wav')}$`, 'm'));

    const refused = split(['--model', 'stemsplit-small-6s', '--filename', '{track}/{stem}.{ext}']);
    assert.equal(refused.status, 2, refused.stderr);
    assert.equal(refused.stderr.trim().split('\n').length, 1, refused.stderr);
    assert.match(
      refused.stderr,
      /^stemsplit: .*song\/(bass|drums|other|vocals)\.wav holds stemsplit-small-4s's stems and stemsplit-small-6s would replace them: put \{model\} in --filename/,
    );
    // {model} anywhere keeps the names apart: the folder part (split-batch.test.ts runs one) or the file part.
    const places = (template: string) => outputPlaces([SONG], out, { template, model: 'stemsplit-small-6s', ext: 'wav' })[0];
    assert.deepEqual(places('{track}/{stem} ({model}).{ext}'), { outDir: join(out, 'song'), stemFile: '{stem} (stemsplit-small-6s).wav' });
    assert.deepEqual(places('{model}/{track}/{stem}.{ext}'), { outDir: join(out, 'stemsplit-small-6s', 'song'), stemFile: '{stem}.wav' });
    // …and is let through by the check the refused run met, over the records the two runs left.
    const folders = new StemFolders(env.STEMSPLIT_DATA_DIR);
    folders.refuseOverwriting(join(out, 'song'), '{stem} (stemsplit-small-6s).wav', 'stemsplit-small-6s');
    assert.throws(() => folders.refuseOverwriting(join(out, 'song'), '{stem}.wav', 'stemsplit-small-6s'), /holds stemsplit-small-4s's stems/);
  });
});

describe('models add FOLDER', { skip: DEMUCS === undefined ? 'needs ../shared/fixtures/demucs' : false }, () => {
  it('a UVR folder holding a Demucs bag adds the bag; its members belong to it and are not models of their own', () => {
    const folder = join(work, 'uvr-models');
    mkdirSync(folder);
    for (const file of ['htdemucs_ft_small.yaml', 'bag_member_0.th', 'bag_member_1.th', 'bag_member_2.th', 'bag_member_3.th'])
      copyFileSync(join(DEMUCS as string, file), join(folder, file));
    const added = runCli(['models', 'add', folder, '--json'], env);
    assert.equal(added.status, 0, added.stderr);
    const models = JSON.parse(added.stdout) as Array<{ name: string; files: string[] }>;
    assert.deepEqual(
      models.map((model) => model.name),
      ['htdemucs_ft_small'],
    );
    assert.equal(models[0]?.files.length, 5, 'the bag with its four members');
  });
});

describe('the API says which stems add up to the mix', { skip: MDX === undefined ? 'needs ../shared/fixtures/mdx' : false }, () => {
  let t: TestServer;
  let splitId: string;
  let song: Float32Array;
  let stems: Map<string, Float32Array>;
  let mixSet: string[];
  before(async () => {
    const dataDir = tempDir();
    const added = runCli(['--data-dir', dataDir, 'models', 'add', join(MDX as string, 'mdx_a_nfft6144_vocals.onnx'), '--name', 'mdx-vocals'], env);
    assert.equal(added.status, 0, added.stderr);
    t = await startTestServer({ dataDir });
  });
  after(async () => {
    await t?.close();
  });

  it('an ensemble of the 4-stem model and a vocals model: mixStems are the four, and they add up to the song where all five do not', async (test) => {
    const input = await t.client.upload(readFileSync(SONG), 'song.wav');
    // The MDX fixture's weights are random, so its vocals are noise: weight 0 keeps them out of the sum, and the 4-stem model's stems, which add up to their input, decide the level.
    const created = await t.request('POST', '/audio/splits', {
      body: { input, models: ['stemsplit-small-4s', 'mdx-vocals'], ensembleWeights: [1, 0], outputFormat: 'wav', bitDepth: 32 },
    });
    assert.equal(created.status, 200, created.text);
    splitId = created.json.data.id as string;
    const done = (await t.client.waitForSplit(splitId)).json.data as { stems: Record<string, string>; mixStems: string[] };
    assert.deepEqual(Object.keys(done.stems).sort(), ['bass', 'drums', 'no_vocals', 'other', 'vocals']);
    mixSet = done.mixStems;
    assert.deepEqual([...mixSet].sort(), ['bass', 'drums', 'other', 'vocals']);
    stems = new Map<string, Float32Array>();
    for (const [name, url] of Object.entries(done.stems)) {
      const path = join(work, `api-${name}.wav`);
      writeFileSync(path, Buffer.from(await (await fetch(url)).arrayBuffer()));
      stems.set(name, decodePlanar(path, 2));
    }
    song = decodePlanar(SONG, 2);
    const mixLevel = levelDb(sumOf(mixSet.map((name) => stems.get(name) as Float32Array)), song);
    const allLevel = levelDb(sumOf([...stems.values()]), song);
    test.diagnostic(`the mix set's sum: ${mixLevel.toFixed(3)} dB against the song; every stem's: ${allLevel.toFixed(2)} dB`);
    assert.ok(Math.abs(mixLevel) < 0.1, `the mix set sums to the song's level (${mixLevel.toFixed(2)} dB)`);
    assert.ok(allLevel > 2, `every stem together counts the accompaniment twice (${allLevel.toFixed(2)} dB)`);
  });

  it("the page plays the mix set: no_vocals starts muted, the current mix is at the song's level, the instrumental is drums + bass + other", {
    skip: NEEDS_CHROMIUM,
    timeout: 60_000,
  }, async (test) => {
    const browser = await launchBrowser();
    assert.ok(browser);
    try {
      const session = await createWebSession(t.server.data);
      const context = await browser.newContext({ acceptDownloads: true });
      const { page, errors } = await openPage(context, webSessionLink(t.server.url, session.key));
      await page.locator(`#history li[data-split="${splitId}"]`).getByRole('button', { name: /Open/ }).click();
      await page.locator('#stems li[data-stem="original"]').waitFor();
      const inMix = await page.$$eval('#stems li', (rows) =>
        Object.fromEntries(rows.map((row) => [row.getAttribute('data-stem'), row.getAttribute('data-in-mix')])),
      );
      assert.deepEqual(inMix, { vocals: 'true', drums: 'true', bass: 'true', other: 'true', no_vocals: 'false', original: 'false' });
      assert.equal(await page.getByRole('button', { name: 'Mute no_vocals' }).getAttribute('aria-pressed'), 'true');
      assert.equal(await page.getByRole('button', { name: 'Mute vocals' }).getAttribute('aria-pressed'), 'false');
      const exported = async (button: string, file: string): Promise<Float32Array> => {
        const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: button }).click()]);
        const path = join(work, file);
        await download.saveAs(path);
        return decodePlanar(path, 2);
      };
      const mix = await exported('Current mix (WAV)', 'page-mix.wav');
      const mixLevel = levelDb(mix, song);
      assert.ok(Math.abs(mixLevel) < 0.1, `the page's mix is at the song's level (${mixLevel.toFixed(2)} dB), not +6 dB`);
      const instrumental = await exported('Instrumental (WAV)', 'page-instrumental.wav');
      const bed = sumOf(['drums', 'bass', 'other'].map((name) => stems.get(name) as Float32Array));
      const instrumentalLevel = levelDb(instrumental, bed);
      test.diagnostic(
        `the page's current mix: ${mixLevel.toFixed(3)} dB against the song; its instrumental: ${instrumentalLevel.toFixed(3)} dB against drums + bass + other`,
      );
      assert.ok(Math.abs(instrumentalLevel) < 0.1, `the instrumental is drums + bass + other (${instrumentalLevel.toFixed(2)} dB from their sum)`);
      assert.deepEqual(errors, []);
      await context.close();
    } finally {
      await browser.close();
    }
  });
});
