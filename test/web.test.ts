/**
 * The web page of `stemsplit serve` in a real browser (Debian's chromium driven by
 * playwright-core) against a real server: upload a generated song, watch it split, play, solo,
 * download. Screenshots of the mixer go to test-artifacts/.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { crc32 } from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { createWebSession, WEB_SESSION_KEY_NAME } from '../src/services/web-session.js';
import { webSessionLink } from '../src/net/page-links.js';
import { maxDifference } from './support/assertions.js';
import { launchBrowser, NEEDS_CHROMIUM, openPage } from './support/browser.js';
import { until } from './support/wait.js';
import { writeSong } from './support/audio.js';
import { killHard, runCli } from './support/process.js';
import { startTestServer, tempDir, type TestServer } from './support/server.js';
import { fixtureDir } from './support/fixtures.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const ARTIFACTS = join(ROOT, 'test-artifacts');
const SONG_SECONDS = 4.3;
const PHONE = { viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true };

let t: TestServer;
let browser: Browser;
let songPath: string;

before(async () => {
  songPath = join(tempDir(), 'Night Drive.wav');
  writeSong(songPath, SONG_SECONDS);
  mkdirSync(ARTIFACTS, { recursive: true });
  t = await startTestServer();
  const launched = await launchBrowser();
  if (launched) browser = launched;
});
after(async () => {
  await browser?.close();
  await t.close();
});

async function stemBytes(server: TestServer, splitId: string, stem: string): Promise<Buffer> {
  const split = (await server.request('GET', `/audio/splits/${splitId}`)).json.data;
  return Buffer.from(await (await fetch(split.stems[stem])).arrayBuffer());
}

/** The entries of a zip, read by hand with each CRC-32 checked by node:zlib. */
function readStoredZip(bytes: Buffer): Map<string, Buffer> {
  const entries = new Map<string, Buffer>();
  let offset = 0;
  while (bytes.readUInt32LE(offset) === 0x04034b50) {
    assert.equal(bytes.readUInt16LE(offset + 8), 0, 'stored, not compressed');
    const crc = bytes.readUInt32LE(offset + 14);
    const size = bytes.readUInt32LE(offset + 18);
    const nameLength = bytes.readUInt16LE(offset + 26);
    const extraLength = bytes.readUInt16LE(offset + 28);
    const name = bytes.subarray(offset + 30, offset + 30 + nameLength).toString('utf8');
    const data = bytes.subarray(offset + 30 + nameLength + extraLength, offset + 30 + nameLength + extraLength + size);
    assert.equal(crc32(data), crc, `CRC-32 of ${name}`);
    entries.set(name, data);
    offset += 30 + nameLength + extraLength + size;
  }
  assert.equal(bytes.readUInt32LE(offset), 0x02014b50, 'the central directory follows the entries');
  return entries;
}

async function download(page: Page, click: () => Promise<void>): Promise<{ name: string; bytes: Buffer }> {
  const [file] = await Promise.all([page.waitForEvent('download'), click()]);
  return { name: file.suggestedFilename(), bytes: readFileSync(await file.path()) };
}

/** A float WAV as the page writes it: its format fields and its channels. */
function readFloatWav(bytes: Buffer): { format: number; channels: number; sampleRate: number; data: Float32Array[] } {
  assert.equal(bytes.toString('latin1', 0, 4), 'RIFF');
  assert.equal(bytes.toString('latin1', 8, 12), 'WAVE');
  assert.equal(bytes.readUInt32LE(4), bytes.length - 8, 'the RIFF size is the file size');
  const format = bytes.readUInt16LE(20);
  const channels = bytes.readUInt16LE(22);
  const sampleRate = bytes.readUInt32LE(24);
  assert.equal(bytes.toString('latin1', 50, 54), 'data');
  const frames = bytes.readUInt32LE(54) / (4 * channels);
  const samples = new Float32Array(bytes.buffer.slice(bytes.byteOffset + 58, bytes.byteOffset + 58 + frames * channels * 4));
  const data = Array.from({ length: channels }, (_, c) => Float32Array.from({ length: frames }, (_, i) => samples[i * channels + c] as number));
  return { format, channels, sampleRate, data };
}

/** RMS of what each stem sends to the master, as the page's meters read it. */
const levels = (page: Page): Promise<Record<string, number>> =>
  page.$$eval('#stems li', (rows) => Object.fromEntries(rows.map((row) => [row.getAttribute('data-stem'), Number(row.getAttribute('data-level'))])));
/** The meters' levels once `heard` accepts them (they follow a click within a moment); throws with the last levels after 5 s. */
async function levelsOnce(page: Page, heard: (level: Record<string, number>) => boolean): Promise<Record<string, number>> {
  let level: Record<string, number> = {};
  await until(
    async () => heard((level = await levels(page))),
    5_000,
    () => `still ${JSON.stringify(level)} after 5000 ms`,
  );
  return level;
}
const FOCUSED_LABEL = "document.activeElement.getAttribute('aria-label') || document.activeElement.textContent";
const SOUNDING = 0.001; // -60 dBFS
const SILENT = 1e-5; // -100 dBFS

describe('the local session', () => {
  test('a new link makes a new "web session" key of the default account and revokes the previous one', async () => {
    const first = await createWebSession(t.server.data);
    const second = await createWebSession(t.server.data);
    assert.equal(first.account, 'default');
    assert.equal(await t.server.data.accounts.authenticate(first.key), undefined, 'the previous session key is revoked');
    assert.ok(await t.server.data.accounts.authenticate(second.key));
    const live = (await t.server.data.accounts.listKeys()).filter((k) => k.name === WEB_SESSION_KEY_NAME && k.revokedAt === null);
    assert.deepEqual(
      live.map((k) => k.id),
      [second.id],
    );
  });

  test('the link carries the key in the fragment (the addresses it is printed for: test/studio.test.ts)', () => {
    assert.equal(webSessionLink('http://127.0.0.1:8787', 'sk_stemsplit_abc'), 'http://127.0.0.1:8787/#key=sk_stemsplit_abc');
    assert.equal(webSessionLink('http://[::1]:9000', 'k'), 'http://[::1]:9000/#key=k');
  });

  test('stemsplit serve prints a working link: a one-time invite the page exchanges for its own key', { timeout: 60_000 }, async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/run.ts', 'serve', '--port', '0', '--data-dir', tempDir()], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      const link = await new Promise<string>((resolve, reject) => {
        let out = '';
        child.stdout.on('data', (chunk: Buffer) => {
          out += chunk.toString();
          const match = /^Open (http:\/\/\S+#invite=\S+) /m.exec(out);
          if (match?.[1]) resolve(match[1]);
        });
        child.once('exit', (code) => reject(new Error(`serve exited with ${code} before printing the link: ${out}`)));
      });
      const url = new URL(link);
      assert.equal(url.hostname, '127.0.0.1');
      const page = await fetch(new URL('/', url));
      assert.equal(page.status, 200);
      const key = await exchange(url.origin, decodeURIComponent(url.hash.slice('#invite='.length)));
      const credits = await fetch(new URL('/v1/credits', url), { headers: { authorization: `Bearer ${key}` } });
      assert.equal(credits.status, 200);
    } finally {
      await killHard(child);
    }
  });
});

/** The key an invite is exchanged for, as the page does it. */
async function exchange(origin: string, invite: string): Promise<string> {
  const response = await fetch(`${origin}/v1/invites/exchange`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ invite }),
  });
  assert.equal(response.status, 200);
  return ((await response.json()) as { data: { key: string } }).data.key;
}

test('serve prints an invite until one is opened, then the address alone; --new-link ends the keys and prints a new invite', { timeout: 90_000 }, async () => {
  const dataDir = tempDir();
  /** The first link line of a serve on the data dir, and what `whileRunning` makes of it. */
  const firstLine = async (args: string[], whileRunning: (line: string) => Promise<void> = async () => undefined): Promise<string> => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/run.ts', 'serve', '--port', '0', '--data-dir', dataDir, ...args], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    try {
      const line = await new Promise<string>((resolve, reject) => {
        let out = '';
        child.stdout.on('data', (chunk: Buffer) => {
          out += chunk.toString();
          const found = /^(Open |The web page is at ).*$/m.exec(out);
          if (found) resolve(found[0]);
        });
        child.once('exit', (code) => reject(new Error(`serve exited with ${code}: ${out}`)));
      });
      await whileRunning(line);
      return line;
    } finally {
      await killHard(child);
    }
  };
  let key = '';
  let origin = '';
  const made = await firstLine([], async (line) => {
    const url = new URL(/^Open (\S+) /.exec(line)?.[1] ?? '');
    origin = url.origin;
    key = await exchange(origin, decodeURIComponent(url.hash.slice('#invite='.length)));
  });
  assert.match(made, /^Open http:\/\/127\.0\.0\.1:\d+\/#invite=inv_stemsplit_/);
  assert.match(key, /^sk_stemsplit_/);
  assert.match(
    await firstLine([]),
    /^The web page is at http:\/\/127\.0\.0\.1:\d+\/: browsers that opened its invite keep their key \("stemsplit serve --print-link" prints a new invite\)/,
  );
  const renewed = await firstLine(['--new-link'], async (line) => {
    const at = new URL(/^Open (\S+) /.exec(line)?.[1] ?? '').origin;
    assert.equal(
      (await fetch(`${at}/v1/credits`, { headers: { authorization: `Bearer ${key}` } })).status,
      401,
      '--new-link ended the key the first invite made',
    );
  });
  assert.match(renewed, /^Open http:\/\/127\.0\.0\.1:\d+\/#invite=inv_stemsplit_/);
  assert.ok(!renewed.includes(made.slice(made.indexOf('#'))), 'a new invite');
});

describe('the page and its assets', () => {
  test('come from the server itself, with a strict content security policy and revalidation', async () => {
    const page = await fetch(`${t.server.url}/`);
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
    assert.match(page.headers.get('content-security-policy') ?? '', /script-src 'self'/);
    const html = await page.text();
    assert.doesNotMatch(html, /https?:\/\/(?!www\.w3\.org)/, 'no external URL in the page');
    // Relative, so the page also works under a reverse proxy's path prefix (test/proxy.test.ts).
    const referenced = [...html.matchAll(/(?:src|href)="(web\/[^"]+)"/g)].map((m) => m[1] as string);
    assert.ok(referenced.includes('web/app.js') && referenced.includes('web/app.css'));
    for (const path of ['/web/app.js']) {
      const asset = await fetch(`${t.server.url}${path}`);
      assert.equal(asset.status, 200, path);
      assert.match(asset.headers.get('content-type') ?? '', /^text\/javascript/);
      const etag = asset.headers.get('etag') ?? '';
      assert.equal((await fetch(`${t.server.url}${path}`, { headers: { 'if-none-match': etag } })).status, 304);
      assert.doesNotMatch(await asset.text(), /https?:\/\/(?!www\.w3\.org)/, `${path} loads nothing from elsewhere`);
    }
    const missing = await fetch(`${t.server.url}/web/nothing.js`);
    assert.equal(missing.status, 404);
    assert.equal(((await missing.json()) as { error: { code: string } }).error.code, 'NOT_FOUND');
  });
});

describe('in a real browser', { skip: NEEDS_CHROMIUM }, () => {
  test('a pasted key the server refuses is explained in plain words', async () => {
    const context = await browser.newContext();
    const { page, errors } = await openPage(context, `${t.server.url}/`);
    await page.getByRole('textbox', { name: 'API key' }).fill('sk_stemsplit_not-a-real-key');
    await page.keyboard.press('Enter');
    await page
      .locator('#key-error')
      .getByText(/isn't accepted/)
      .waitFor();
    assert.equal(await page.locator('#upload-panel').isHidden(), true);
    await page.screenshot({ path: join(ARTIFACTS, 'web-key-refused.png') });
    assert.deepEqual(errors, []);
    await context.close();
  });

  test('the serve link: upload, watch the split, play, solo, download a stem and all stems', async () => {
    const session = await createWebSession(t.server.data);
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
    const { page, errors } = await openPage(context, webSessionLink(t.server.url, session.key));
    await page.locator('#upload-panel').waitFor();
    assert.equal(new URL(page.url()).hash, '', 'the key leaves the address bar');
    assert.equal(await page.evaluate<string | null>("localStorage.getItem('stemsplit.apiKey')"), session.key);

    await page.getByLabel(/4 stems/).check();
    await page.locator('#file-input').setInputFiles(songPath);
    // The song waits, with its length, until "Split".
    await page.locator('#pending-files').getByText('Night Drive.wav \u00b7 0:05').waitFor();
    await page.getByRole('button', { name: 'Split', exact: true }).click();
    await page
      .locator('#job-stage')
      .getByText(/Reserving|Uploading|Starting|Waiting|Splitting|Done/)
      .first()
      .waitFor();
    await page.locator('#stems li').nth(3).waitFor({ timeout: 60_000 });
    await page.locator('#stems li[data-stem="original"]').waitFor();
    const tracks = await page.$$eval('#stems li', (rows) => rows.map((row) => row.getAttribute('data-stem') as string));
    const stems = tracks.filter((name) => name !== 'original');
    assert.deepEqual([...stems].sort(), ['bass', 'drums', 'other', 'vocals']);
    assert.equal(tracks.at(-1), 'original', 'the source is one more track, for A/B');
    assert.equal(await page.getByRole('button', { name: 'Mute original' }).getAttribute('aria-pressed'), 'true', 'muted until compared');
    await page.locator('#history li').filter({ hasText: 'Night Drive.wav' }).getByText('Ready').waitFor();
    const splitId = (await page.locator('#history li').first().getAttribute('data-split')) as string;
    assert.match(splitId, /^split_/);
    assert.match((await page.locator('#credits').textContent()) ?? '', /of audio left/);
    // Which model made the stems, the terms of its weights, and what a pull would give.
    const modelLine = (await page.locator('#mixer-model').textContent()) ?? '';
    assert.match(modelLine, /Made with stemsplit-small-4s\. Terms: MIT/);
    assert.match(modelLine, /Ran on CPU\./, 'the page says what ran the job');
    assert.match(modelLine, /stemsplit models pull htdemucs/);
    assert.match((await page.locator('#history li').first().locator('.history-meta').textContent()) ?? '', /stemsplit-small-4s/);
    await page.screenshot({ path: join(ARTIFACTS, 'web-mixer-desktop.png'), fullPage: true });

    // Every control of the mixer is reached with Tab, in order, and shows where the focus is.
    await page.getByRole('button', { name: 'Play' }).focus();
    const reached: string[] = [];
    for (let i = 0; i < 1 + 4 * tracks.length; i++) {
      await page.keyboard.press('Tab');
      reached.push(await page.evaluate<string>(FOCUSED_LABEL));
      assert.notEqual(await page.evaluate<string>('getComputedStyle(document.activeElement).outlineStyle'), 'none', `focus is visible on ${reached.at(-1)}`);
    }
    const expected = [
      'Position in the song',
      ...tracks.flatMap((name) => [`Mute ${name}`, `Solo ${name}`, `${name} volume`, `Download ${name} (${name === 'original' ? 'WAV' : 'MP3'})`]),
    ];
    assert.deepEqual(reached, expected);

    // Play: time runs and every meter reads what its stem sends.
    await page.getByRole('button', { name: 'Play' }).click();
    await page.getByRole('button', { name: 'Pause' }).waitFor();
    const playing = await levelsOnce(page, (level) => Object.values(level).some((rms) => rms > SOUNDING));
    const loudest = Object.entries(playing).sort((a, b) => b[1] - a[1])[0]?.[0] as string;

    // Solo the loudest stem: the others fall silent, it keeps sounding.
    await page.getByRole('button', { name: `Solo ${loudest}` }).click();
    assert.equal(await page.getByRole('button', { name: `Solo ${loudest}` }).getAttribute('aria-pressed'), 'true');
    await levelsOnce(page, (level) => Object.entries(level).every(([stem, rms]) => (stem === loudest ? rms > SOUNDING : rms < SILENT)));
    assert.equal(await page.locator(`#stems li[data-stem="${loudest}"]`).getAttribute('class'), 'stem');
    assert.equal(await page.locator('#stems li.is-silent').count(), 4);
    await page.screenshot({ path: join(ARTIFACTS, 'web-mixer-playing.png') });

    // Space pauses when no control that takes space has the focus.
    await page.locator('#mixer-title').click();
    await page.keyboard.press('Space');
    await page.getByRole('button', { name: 'Play' }).waitFor();
    assert.ok(Number(await page.locator('#seek').inputValue()) > 0, 'the position moved while playing');

    // A/B from the top: the original alone, then the stems again as they were (the loudest soloed).
    await page.locator('#seek').fill('0');
    await page.getByRole('button', { name: 'Play' }).click();
    await page.getByRole('button', { name: 'A/B: hear the original' }).click();
    await levelsOnce(page, (level) => Object.entries(level).every(([track, rms]) => (track === 'original' ? rms > SOUNDING : rms < SILENT)));
    await page.getByRole('button', { name: 'A/B: back to the stems' }).click();
    await levelsOnce(page, (level) => Object.entries(level).every(([track, rms]) => (track === loudest ? rms > SOUNDING : rms < SILENT)));
    await page.getByRole('button', { name: 'Pause' }).click();

    const stem = await download(page, () => page.getByRole('link', { name: `Download ${loudest} (MP3)` }).click());
    assert.equal(stem.name, `Night Drive-${loudest}.mp3`);
    assert.ok(stem.bytes.equals(await stemBytes(t, splitId, loudest)), 'the download is the stem the server made');

    const zip = await download(page, () => page.getByRole('button', { name: 'Download all (zip)' }).click());
    assert.equal(zip.name, 'Night Drive-stems.zip');
    const entries = readStoredZip(zip.bytes);
    assert.deepEqual(
      [...entries.keys()].sort(),
      ['bass', 'drums', 'other', 'vocals'].map((s) => `Night Drive-${s}.mp3`),
    );
    for (const [name, bytes] of entries) {
      const stemName = /-(\w+)\.mp3$/.exec(name)?.[1] as string;
      assert.ok(bytes.equals(await stemBytes(t, splitId, stemName)), `${name} in the zip is the stem`);
    }

    // Exports rendered in the browser: the instrumental, and the current mix as the mixer plays it.
    const instrumental = await download(page, () => page.getByRole('button', { name: 'Instrumental (WAV)' }).click());
    assert.equal(instrumental.name, 'Night Drive-instrumental.wav');
    const bed = readFloatWav(instrumental.bytes);
    assert.equal(bed.format, 3, 'IEEE float');
    assert.equal(bed.channels, 2);
    assert.ok(bed.data[0]!.length > 0.9 * SONG_SECONDS * bed.sampleRate, `${bed.data[0]!.length} frames at ${bed.sampleRate} Hz`);
    await page.getByRole('button', { name: `Solo ${loudest}` }).click(); // solo off again: every stem at unity
    const full = readFloatWav((await download(page, () => page.getByRole('button', { name: 'Current mix (WAV)' }).click())).bytes);
    assert.ok(maxDifference(full.data, bed.data) > 1e-3, 'with the vocals audible the mix is not the instrumental');
    await page.getByRole('button', { name: 'Mute vocals' }).click();
    const muted = await download(page, () => page.getByRole('button', { name: 'Current mix (WAV)' }).click());
    assert.equal(muted.name, 'Night Drive-mix.wav');
    const withoutVocals = readFloatWav(muted.bytes);
    assert.ok(maxDifference(withoutVocals.data, bed.data) < 1e-6, 'the mix with the vocals muted is the instrumental');
    await page.getByRole('button', { name: 'Mute vocals' }).click();
    await page.locator('#stems li[data-stem="drums"] input.volume').fill('0.5');
    const halfDrums = readFloatWav((await download(page, () => page.getByRole('button', { name: 'Current mix (WAV)' }).click())).bytes);
    const drumsOnly = maxDifference(halfDrums.data, full.data);
    assert.ok(drumsOnly > 1e-3, 'a volume change is in the exported mix');
    assert.deepEqual(errors, []);
    await context.close();

    // On a phone: the same job opened from the key's past splits.
    const phone = await browser.newContext(PHONE);
    const small = await openPage(phone, webSessionLink(t.server.url, session.key));
    await small.page.locator('#history li').filter({ hasText: 'Night Drive.wav' }).getByRole('button', { name: /Open/ }).click();
    await small.page.locator('#stems li').nth(3).waitFor();
    const overflow = await small.page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
    assert.ok(overflow <= 0, `nothing runs off a phone's screen (${overflow} px)`);
    await small.page.locator('#mixer-panel').screenshot({ path: join(ARTIFACTS, 'web-mixer-phone.png') });
    await small.page.screenshot({ path: join(ARTIFACTS, 'web-page-phone.png'), fullPage: true });
    assert.deepEqual(small.errors, []);
    await phone.close();
  });

  test("after a restart the same link still works and the list shows every split of the account, a CLI key's too", async () => {
    const dataDir = tempDir();
    const first = await startTestServer({ dataDir });
    const session = await createWebSession(first.server.data);
    const cliKey = (await first.server.data.accounts.createKey('default', 'cli')).key;
    const input = await first.client.upload(readFileSync(songPath), 'From the CLI key.wav');
    const created = await first.request('POST', '/audio/splits', { body: { input, stemModel: '4s' }, key: cliKey });
    assert.equal(created.status, 200, created.text);
    await first.client.waitForSplit(created.json.data.id);
    await first.close();

    const again = await startTestServer({ dataDir });
    try {
      const context = await browser.newContext();
      const { page, errors } = await openPage(context, webSessionLink(again.server.url, session.key));
      const row = page.locator('#history li').filter({ hasText: 'From the CLI key.wav' });
      await row.getByText('Ready').waitFor();
      assert.match((await row.locator('.history-meta').textContent()) ?? '', /stemsplit-small-4s/);
      // A bookmark of the page (no key in it) works too: the browser kept the key.
      await page.goto(again.server.url + '/');
      await page.locator('#history li').filter({ hasText: 'From the CLI key.wav' }).waitFor();
      await page.screenshot({ path: join(ARTIFACTS, 'web-history-after-restart.png'), fullPage: true });
      assert.deepEqual(errors, []);
      await context.close();
    } finally {
      await again.close();
    }
  });

  test('two files chosen at once both split, each in its own row; vocals + instrumental gives the vocals and the rest', { timeout: 180_000 }, async () => {
    const dir = tempDir();
    const a = join(dir, 'First Song.wav');
    const b = join(dir, 'Second Song.wav');
    writeSong(a, 2.5);
    writeSong(b, 3.5);
    const session = await createWebSession(t.server.data);
    const context = await browser.newContext();
    const { page, errors } = await openPage(context, webSessionLink(t.server.url, session.key));
    await page.locator('#upload-panel').waitFor();
    await page.getByLabel(/Vocals \+ instrumental/).check();
    await page.locator('#file-input').setInputFiles([a, b]);
    await page.getByRole('button', { name: 'Split 2 songs' }).click();
    for (const name of ['First Song.wav', 'Second Song.wav']) {
      const row = page.locator('#history li').filter({ hasText: name });
      await row.getByText('Ready').waitFor({ timeout: 120_000 });
      assert.match((await row.locator('.history-meta').textContent()) ?? '', /^Vocals \+ instrumental/);
    }
    await page.locator('#mixer-title').getByText('Second Song.wav').waitFor();
    await page.locator('#stems li').nth(1).waitFor();
    await page.locator('#stems li[data-stem="original"]').waitFor();
    const karaoke = await page.$$eval('#stems li', (rows) => rows.map((row) => row.getAttribute('data-stem')));
    assert.deepEqual(karaoke, ['vocals', 'no_vocals', 'original'], 'the server made two stems (twoStems: vocals)');
    const splitId = (await page.locator('#history li').filter({ hasText: 'Second Song.wav' }).getAttribute('data-split')) as string;
    const rest = await download(page, () => page.getByRole('link', { name: 'Download no_vocals (MP3)' }).click());
    assert.equal(rest.name, 'Second Song-no_vocals.mp3');
    assert.ok(rest.bytes.equals(await stemBytes(t, splitId, 'no_vocals')), 'the download is the stem the server made');
    const wav = await download(page, () => page.getByRole('button', { name: 'Instrumental (WAV)' }).click());
    assert.equal(wav.name, 'Second Song-instrumental.wav');
    assert.equal(readFloatWav(wav.bytes).channels, 2);
    await page.screenshot({ path: join(ARTIFACTS, 'web-two-files-karaoke.png'), fullPage: true });
    assert.deepEqual(errors, []);
    await context.close();
  });

  test("a song dropped on the page without enough credits is refused before upload, in seconds and in a musician's words", async () => {
    const poor = await t.server.data.accounts.createKey('poor', 'web');
    const context = await browser.newContext();
    const { page, errors } = await openPage(context, webSessionLink(t.server.url, poor.key));
    await page.locator('#upload-panel').waitFor();
    // A real File in a real DataTransfer, dropped on the drop zone as a file manager would.
    const base64 = readFileSync(songPath).toString('base64');
    const dataTransfer = await page.evaluateHandle(
      `(() => { const t = new DataTransfer(); t.items.add(new File([Uint8Array.from(atob(${JSON.stringify(base64)}), (c) => c.charCodeAt(0))], 'Night Drive.wav', { type: 'audio/wav' })); return t; })()`,
    );
    await page.locator('#drop-zone').dispatchEvent('drop', { dataTransfer });
    // Refused before anything is uploaded: Split cannot be pressed, and the words are a musician's.
    const message = page.locator('#pending-estimate');
    await message.getByText(/Not enough time left/).waitFor();
    assert.match(
      (await message.textContent()) ?? '',
      /this song is 5 seconds long and you have 0 seconds of audio left\. Ask the studio's admin for more time\./,
    );
    assert.equal(await page.getByRole('button', { name: 'Split', exact: true }).isDisabled(), true);
    assert.equal(
      (
        await t.server.data.store.all(
          t.server.data.store.db
            .selectFrom('uploads')
            .select('id')
            .where('accountId', '=', (await t.server.data.accounts.find('poor'))?.id ?? ''),
        )
      ).length,
      0,
      'nothing was uploaded',
    );
    await page.locator('#upload-panel').screenshot({ path: join(ARTIFACTS, 'web-upload-402.png') });
    assert.deepEqual(errors, []);
    await context.close();
  });
});

/** `12 s`, `1 min 5 s`: a time as the page words it. */
function spanWords(seconds: number): string {
  const whole = Math.max(1, Math.ceil(seconds));
  return whole < 60 ? `${whole} s` : `${Math.floor(whole / 60)} min${whole % 60 ? ` ${whole % 60} s` : ''}`;
}

/**
 * Run in the page before its own scripts: notes the type of every blob the page hands out as a
 * URL (a download's content type, which the browser's download event does not tell).
 */
const RECORD_BLOB_TYPES = `(() => {
  const make = URL.createObjectURL;
  window.__blobTypes = {};
  URL.createObjectURL = (blob) => { const url = make(blob); window.__blobTypes[url] = blob.type; return url; };
})()`;
const blobTypes = (page: Page): Promise<Record<string, string>> => page.evaluate<Record<string, string>>('window.__blobTypes');

describe('the model library on the page', { skip: NEEDS_CHROMIUM }, () => {
  const FOUR = 'stemsplit-small-4s';
  const SIX = 'stemsplit-small-6s';
  /** A server of its own: which models have run on it (and so have a measured time) is this suite's to say. */
  let lib: TestServer;
  /** A FLAC job made through the API with only the spec's stemModel: it also measures FOUR's time. */
  let apiJob: string;
  interface ListedModel {
    name: string;
    task: string;
    installed: boolean;
    allowed: boolean;
    terms: string;
    secondsPerMinute: number | null;
    scores: { sdr: Record<string, number>; source: string }[];
  }
  interface ModelList {
    items: ListedModel[];
    ensembleAlgorithms: string[];
    defaults: Record<string, string | null>;
  }
  const models = async (): Promise<ModelList> => (await lib.request('GET', '/models')).json.data as ModelList;
  const modelNamed = (list: ModelList, name: string): ListedModel => {
    const model = list.items.find((item) => item.name === name);
    assert.ok(model, `GET /v1/models lists ${name}`);
    return model;
  };

  before(async () => {
    lib = await startTestServer();
    const input = await lib.client.upload(readFileSync(songPath), 'From the API.wav');
    const created = await lib.request('POST', '/audio/splits', { body: { input, stemModel: '4s', outputFormat: 'flac' } });
    assert.equal(created.status, 200, created.text);
    apiJob = created.json.data.id as string;
    await lib.client.waitForSplit(apiJob);
  });
  after(async () => {
    await lib?.close();
  });

  test('models grouped by task, each with its terms, and the time the chosen song takes on this server', async () => {
    const list = await models();
    const four = modelNamed(list, FOUR);
    assert.equal(typeof four.secondsPerMinute, 'number', 'measured by the job that ran it');
    assert.equal(modelNamed(list, SIX).secondsPerMinute, null, 'no job ran it yet');
    const session = await createWebSession(lib.server.data);
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const { page, errors } = await openPage(context, webSessionLink(lib.server.url, session.key));
    await page.locator('#upload-panel').waitFor();
    await page.getByLabel(/Choose models/).check();
    await page.locator('#library').waitFor();

    // One group per task the library holds, each model in its task's group with its terms; those it can't run greyed out with why.
    const groups = await page.$$eval('.task-group', (sets) => sets.map((set) => set.getAttribute('data-task')));
    assert.deepEqual([...groups].sort(), [...new Set(list.items.map((model) => model.task))].sort());
    assert.equal(await page.locator('.task-group[data-task="four-stems"] legend').textContent(), '4 stems');
    assert.equal(await page.locator('.task-group[data-task="six-stems"] legend').textContent(), '6 stems');
    for (const model of list.items) {
      const row = page.locator(`.task-group[data-task="${model.task}"] li[data-model="${model.name}"]`);
      assert.equal(await row.locator('.model-terms').textContent(), `Terms: ${model.terms}`, model.name);
      assert.equal(await row.locator('input[type="checkbox"]').isDisabled(), !(model.installed && model.allowed), model.name);
      if (!model.installed) assert.match((await row.locator('.model-why').textContent()) ?? '', new RegExp(`stemsplit models pull ${model.name}`));
    }
    const time = (name: string): Promise<string | null> => page.locator(`li[data-model="${name}"] .model-time`).textContent();
    const rate = four.secondsPerMinute as number;
    const perMinute = `${rate < 10 ? rate.toFixed(1) : Math.round(rate)} s per minute of audio on this server`;
    assert.equal(await time(FOUR), `Time: ${perMinute}.`);
    assert.match((await time(SIX)) ?? '', /not measured yet on this server/);

    // A chosen song: each model's time for it, and the choice's, before anything starts.
    await page.locator('#file-input').setInputFiles(songPath);
    await page.locator('#pending-files').getByText('Night Drive.wav \u00b7 0:05').waitFor();
    const forSong = spanWords((rate * 5) / 60);
    assert.equal(await time(FOUR), `Time: about ${forSong} for the chosen audio (${perMinute}).`);
    await page.getByRole('checkbox', { name: new RegExp(`^${FOUR}`) }).check();
    const summary = (await page.locator('#choice-summary').textContent()) ?? '';
    assert.equal(summary, `Runs ${FOUR}, writing MP3 files. Terms: ${FOUR}: ${four.terms}. 0:05 of audio: about ${forSong} on this server.`);
    assert.equal(await page.locator('#pending-estimate').textContent(), `0:05 of audio: about ${forSong} on this server.`);
    await page.screenshot({ path: join(ARTIFACTS, 'web-library.png'), fullPage: true });
    await page.setViewportSize(PHONE.viewport);
    const overflow = await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
    assert.ok(overflow <= 0, `the library fits a phone's screen (${overflow} px over)`);
    await page.setViewportSize({ width: 1280, height: 900 });

    // Published SDR beside each scored model; ordered by it, the best vocal model comes first among the vocals ones.
    const viperx = list.items.find((model) => model.name === 'bs-roformer-viperx-1297');
    assert.equal(
      await page.locator('li[data-model="bs-roformer-viperx-1297"] .model-scores').first().textContent(),
      `Published SDR: vocals 11.77 dB, instrumental 16.45 dB (${viperx?.scores[0]?.source})`,
    );
    await page.locator('#library-sort-sdr').check();
    const vocalsOrder = await page.$$eval('.task-group[data-task="vocals"] li[data-model]', (rows) => rows.map((row) => row.getAttribute('data-model')));
    assert.equal(
      vocalsOrder.filter((name) => list.items.some((model) => model.name === name && !model.installed))[0],
      'bs-roformer-viperx-1296',
      vocalsOrder.join(', '),
    );

    // The quick choices say which model their alias runs now, and its terms.
    await page.getByLabel(/6 stems/).check();
    assert.equal(await page.locator('#library').isHidden(), true);
    assert.match(
      (await page.locator('#choice-summary').textContent()) ?? '',
      new RegExp(`^Runs ${list.defaults['6s']}, writing MP3 files\\. Terms: .*time not measured yet for ${SIX}`),
    );
    assert.deepEqual(errors, []);
    await context.close();
  });

  test('an ensemble written as FLAC through the page: the list says what ran, downloads are .flac files of type audio/flac', { timeout: 180_000 }, async () => {
    const session = await createWebSession(lib.server.data);
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
    await context.addInitScript(RECORD_BLOB_TYPES);
    const { page, errors } = await openPage(context, webSessionLink(lib.server.url, session.key));
    await page.locator('#upload-panel').waitFor();
    await page.getByLabel(/Choose models/).check();
    await page.getByRole('checkbox', { name: new RegExp(`^${FOUR}`) }).check();
    await page.getByRole('checkbox', { name: new RegExp(`^${SIX}`) }).check();
    await page.getByLabel('Combine with').selectOption('avg_wave');
    await page.getByLabel(`Weight of ${FOUR}`).fill('2');
    await page.getByLabel('FLAC', { exact: true }).check();
    await page.getByLabel('Bit depth').selectOption('24');
    await page.locator('#file-input').setInputFiles(songPath);
    await page.locator('#pending-files').getByText('Night Drive.wav \u00b7 0:05').waitFor();
    const list = await models();
    const [fourTerms, sixTerms] = [modelNamed(list, FOUR).terms, modelNamed(list, SIX).terms];
    const terms = fourTerms === sixTerms ? `${FOUR} and ${SIX}: ${fourTerms}` : `${FOUR}: ${fourTerms}; ${SIX}: ${sixTerms}`;
    assert.equal(
      await page.locator('#choice-summary').textContent(),
      `Runs ${FOUR} + ${SIX} one after another, combined with avg_wave (weights 2, 1), writing FLAC 24-bit files. Terms: ${terms}. ` +
        `0:05 of audio: time not measured yet for ${SIX} on this server (the first job with it measures it).`,
    );
    await page.getByRole('button', { name: 'Split', exact: true }).click();
    await page.locator('#stems li[data-stem="original"]').waitFor({ timeout: 150_000 });

    // What ran and what it wrote, as the server recorded it and as "Your splits" says it.
    const row = page.locator('#history li').filter({ hasText: 'Night Drive.wav' });
    await row.getByText('Ready').waitFor();
    const splitId = (await row.getAttribute('data-split')) as string;
    const split = (await lib.request('GET', `/audio/splits/${splitId}`)).json.data;
    assert.deepEqual(
      { models: split.models, ensemble: split.ensemble, ensembleWeights: split.ensembleWeights, outputFormat: split.outputFormat, bitDepth: split.bitDepth },
      { models: [FOUR, SIX], ensemble: 'avg_wave', ensembleWeights: [2, 1], outputFormat: 'flac', bitDepth: 24 },
    );
    assert.match(
      (await row.locator('.history-meta').textContent()) ?? '',
      new RegExp(`^Ensemble · ${FOUR} \\+ ${SIX} \\(avg_wave, weights 2, 1\\) · FLAC 24-bit · 0:05 · `),
    );
    assert.match(
      (await page.locator('#mixer-model').textContent()) ?? '',
      new RegExp(`Made with an ensemble of ${FOUR}, ${SIX} \\(their stems combined with avg_wave, weights 2, 1\\)`),
    );

    // Each stem downloads as the FLAC file the server made, named and typed as one.
    const stems = Object.keys(split.stems as Record<string, string>);
    const vocals = await download(page, () => page.getByRole('link', { name: 'Download vocals (FLAC)' }).click());
    assert.equal(vocals.name, 'Night Drive-vocals.flac');
    assert.equal(vocals.bytes.toString('latin1', 0, 4), 'fLaC');
    assert.ok(vocals.bytes.equals(await stemBytes(lib, splitId, 'vocals')), 'the download is the stem the server made');
    const href = (await page.locator('#stems li[data-stem="vocals"] a.download').getAttribute('href')) as string;
    assert.equal((await blobTypes(page))[href], 'audio/flac');
    const zip = await download(page, () => page.getByRole('button', { name: 'Download all (zip)' }).click());
    assert.equal(zip.name, 'Night Drive-stems.zip');
    assert.equal(Object.values(await blobTypes(page)).at(-1), 'application/zip');
    assert.deepEqual([...readStoredZip(zip.bytes).keys()].sort(), stems.map((stem) => `Night Drive-${stem}.flac`).sort());
    await page.screenshot({ path: join(ARTIFACTS, 'web-ensemble-flac.png'), fullPage: true });

    // The FLAC job made through the API, with only the spec's stemModel: labelled and saved as FLAC too.
    const apiRow = page.locator(`#history li[data-split="${apiJob}"]`);
    assert.match((await apiRow.locator('.history-meta').textContent()) ?? '', new RegExp(`^4 stems · ${FOUR} · FLAC · `));
    await apiRow.getByRole('button', { name: /Open/ }).click();
    await page.locator('#mixer-title').getByText('From the API.wav').waitFor();
    const drums = await download(page, () => page.getByRole('link', { name: 'Download drums (FLAC)' }).click());
    assert.equal(drums.name, 'From the API-drums.flac');
    assert.ok(drums.bytes.equals(await stemBytes(lib, apiJob, 'drums')));
    assert.deepEqual(errors, []);
    await context.close();
  });

  test('a model removed while the page offers it: its split is refused and its queued job fails, each saying why in words', {
    timeout: 180_000,
    skip: fixtureDir('mdx') === undefined ? 'needs ../shared/fixtures/mdx' : false,
  }, async () => {
    const MDX = resolve('../shared/fixtures/mdx/mdx_a_nfft6144_vocals.onnx');
    const dataDir = tempDir();
    const added = runCli(['--data-dir', dataDir, 'models', 'add', MDX, '--name', 'mdx-vocals']);
    assert.equal(added.status, 0, added.stderr);
    const first = await startTestServer({ dataDir });
    // Jobs wait in the queue until the restart below.
    await first.server.runner?.stop();
    const session = await createWebSession(first.server.data);
    const context = await browser.newContext();
    const tabs = [
      await openPage(context, webSessionLink(first.server.url, session.key)),
      await openPage(context, webSessionLink(first.server.url, session.key)),
    ];
    for (const { page } of tabs) {
      await page.getByLabel(/Choose models/).check();
      await page.getByRole('checkbox', { name: /^mdx-vocals/ }).check();
      await page.locator('#file-input').setInputFiles(songPath);
      await page.locator('#pending-files').getByText('Night Drive.wav').waitFor();
    }
    const [queued, stale] = tabs as [{ page: Page; errors: string[] }, { page: Page; errors: string[] }];
    await queued.page.getByRole('button', { name: 'Split', exact: true }).click();
    await queued.page.locator('#history li').getByText('Queued').waitFor();
    const removed = runCli(['--data-dir', dataDir, 'models', 'remove', 'mdx-vocals']);
    assert.equal(removed.status, 0, removed.stderr);

    // The other tab still offers it: the server's 422 names the model, the page says so and lists the models afresh.
    await stale.page.getByRole('button', { name: 'Split', exact: true }).click();
    const refusal = stale.page.locator('#upload-error');
    await refusal.getByText(/won't run that choice/).waitFor();
    assert.match((await refusal.textContent()) ?? '', /^This server won't run that choice: model: "mdx-vocals" is not a model of this server/);
    await until(
      async () => (await stale.page.locator('li[data-model="mdx-vocals"]').count()) === 0,
      5_000,
      () => 'mdx-vocals is still offered',
    );

    // The queued job, run after a restart (same address, so the page goes on following it), fails saying why.
    const port = Number(new URL(first.server.url).port);
    await first.close();
    const second = await startTestServer({ dataDir, port });
    try {
      const failure = queued.page.locator('#upload-error');
      await failure.getByText(/The split failed/).waitFor({ timeout: 60_000 });
      const why =
        'The split failed: the separation model failed on this song (the model mdx-vocals that this job asked for is no longer installed on this server; the credits were refunded).';
      assert.equal(await failure.textContent(), why);
      const row = queued.page.locator('#history li').filter({ hasText: 'Night Drive.wav' });
      await row.getByText('Failed', { exact: true }).waitFor();
      assert.equal(await row.locator('.history-why').textContent(), why);
      assert.match((await row.locator('.history-meta').textContent()) ?? '', /^Vocals · mdx-vocals · MP3 · /);
      assert.equal((await second.request('GET', '/credits', { key: session.key })).json.data.balance, 3600, 'refunded');
      await queued.page.screenshot({ path: join(ARTIFACTS, 'web-model-removed.png'), fullPage: true });
      assert.deepEqual([...queued.errors, ...stale.errors], []);
    } finally {
      await context.close();
      await second.close();
    }
  });
});

describe('cancelling on the page', { skip: NEEDS_CHROMIUM }, () => {
  test('a waiting split has a Cancel button: its row then says it was cancelled, no error is shown, and the credits come back', {
    timeout: 120_000,
  }, async () => {
    const server = await startTestServer();
    // The job waits in the queue: nothing runs it.
    await server.server.runner?.stop();
    const session = await createWebSession(server.server.data);
    const before = (await server.request('GET', '/credits', { key: session.key })).json.data.balance as number;
    const context = await browser.newContext();
    try {
      const { page, errors } = await openPage(context, webSessionLink(server.server.url, session.key));
      await page.locator('#file-input').setInputFiles(songPath);
      await page.locator('#pending-files').getByText('Night Drive.wav').waitFor();
      await page.getByRole('button', { name: 'Split', exact: true }).click();
      const row = () => page.locator('#history li').filter({ hasText: 'Night Drive.wav' });
      await row().getByText('Queued').waitFor();
      await row().getByRole('button', { name: 'Cancel the split of Night Drive.wav' }).click();
      await row().getByText('Cancelled', { exact: true }).waitFor();
      assert.equal(await row().locator('.history-why').textContent(), 'Cancelled: no stems were kept and its credits were refunded.');
      assert.equal(
        await row()
          .getByRole('button', { name: /Cancel the split/ })
          .count(),
        0,
        'no Cancel button on a cancelled split',
      );
      // The page stops following it without calling it a failure.
      await until(
        async () => !(await page.locator('#job').isVisible()),
        10_000,
        () => 'the job line is still shown',
      );
      assert.equal(((await page.locator('#upload-error').textContent()) ?? '').trim(), '');
      const split = (await server.request('GET', '/audio/splits', { key: session.key })).json.data.items[0];
      assert.deepEqual([split.status, split.error.code], ['failed', 'CANCELLED']);
      assert.equal((await server.request('GET', '/credits', { key: session.key })).json.data.balance, before, 'refunded');
      await page.screenshot({ path: join(ARTIFACTS, 'web-cancelled.png'), fullPage: true });
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
      await server.close();
    }
  });
});
