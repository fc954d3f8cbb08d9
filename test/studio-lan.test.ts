/**
 * A studio's LAN (issue 48) on the page, in a real browser against a real server on loopback: an
 * admin's invite opened in a member's browser becomes the member's own key, which splits with the
 * member's credits and stays until "Forget this key"; the invite does not work twice; a key that
 * never existed is "not a key of this server", a revoked one is "revoked".
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeSong } from './support/audio.js';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { launchBrowser, NEEDS_CHROMIUM, openPage } from './support/browser.js';
import { startTestServer, tempDir, type TestServer } from './support/server.js';
import { webSessionLink } from '../src/net/page-links.js';

let t: TestServer;
let browser: Browser | undefined;

/** A short song, written once. */
let song = '';
function songPath(): string {
  if (!song) {
    song = join(tempDir(), 'Take One.wav');
    writeSong(song, 2.5);
  }
  return song;
}

before(async () => {
  t = await startTestServer();
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await t.close();
});

describe('keys on the page', { skip: NEEDS_CHROMIUM }, () => {
  test('a key that never existed is "not a key of this server"; a revoked one says it was revoked', async () => {
    const context = await (browser as Browser).newContext();
    const { page, errors } = await openPage(context, `${t.server.url}/`);
    await page.getByRole('textbox', { name: 'API key' }).fill('sk_stemsplit_mistyped');
    await page.keyboard.press('Enter');
    await page
      .locator('#key-error')
      .getByText(/not a key of this server/)
      .waitFor();
    assert.equal(/revoked/.test(await page.locator('#key-error').innerText()), false);

    const made = await t.server.data.accounts.createKey('default', 'web session');
    await t.server.data.accounts.revokeKey(made.id);
    const revoked = await openPage(context, webSessionLink(t.server.url, made.key));
    await revoked.page
      .locator('#key-error')
      .getByText(/it was revoked/)
      .waitFor();
    assert.deepEqual([...errors, ...revoked.errors], []);
    await context.close();
  });

  test("an admin's invite opened by a member: their own key, their own credits, kept until 'Forget this key'; the invite works once", {
    timeout: 180_000,
  }, async () => {
    const invited = await t.request('POST', '/invites', { body: { account: 'mia', credits: 30 } });
    assert.equal(invited.status, 200, invited.text);
    const songPath = join(tempDir(), 'Mia Demo.wav');
    writeSong(songPath, 2.5);
    const context = await (browser as Browser).newContext();
    const { page, errors } = await openPage(context, invited.json.data.url);
    await page.locator('#upload-panel').waitFor();
    assert.equal(new URL(page.url()).hash, '', 'the invite is cleared from the address bar');
    const key = await page.evaluate<string | null>("localStorage.getItem('stemsplit.apiKey')");
    assert.match(key ?? '', /^sk_stemsplit_/);
    const mine = (await t.server.data.accounts.listKeys()).filter((k) => k.accountName === 'mia');
    assert.equal(mine.length, 1, 'the exchange made one key of the invited account');

    await page.locator('#file-input').setInputFiles([songPath]);
    await page.getByRole('button', { name: 'Split', exact: true }).click();
    await page.locator('#history li').filter({ hasText: 'Mia Demo.wav' }).getByText('Ready').waitFor({ timeout: 120_000 });
    assert.equal(await t.server.data.accounts.balance('mia'), 27, "the split used mia's credits");

    await page.getByRole('button', { name: 'Forget this key' }).click();
    await page
      .locator('#key-error')
      .getByText(/no longer keeps your key/)
      .waitFor();
    assert.equal(await page.evaluate<string | null>("localStorage.getItem('stemsplit.apiKey')"), null);

    const again = await openPage(context, invited.json.data.url);
    await again.page
      .locator('#key-error')
      .getByText(/This invite doesn't work: this invite was already used/)
      .waitFor();
    assert.equal(await again.page.locator('#upload-panel').isHidden(), true);
    assert.deepEqual([...errors, ...again.errors], []);
    await context.close();
  });

  test("the admin's People view invites, gives time and revokes; a member's page has none; Delete removes a split", { timeout: 180_000 }, async () => {
    const admin = await t.server.data.accounts.createKey('default', 'web session');
    const context = await (browser as Browser).newContext();
    const { page, errors } = await openPage(context, webSessionLink(t.server.url, admin.key));
    await page.locator('#people li[data-account="default"]').getByText('default (admin)').waitFor();

    await page.getByRole('textbox', { name: 'Invite someone' }).fill('noah');
    await page.getByRole('spinbutton', { name: 'Minutes of audio to give them' }).fill('2');
    await page.getByRole('button', { name: 'Invite', exact: true }).click();
    await page.locator('#invite-link-row').waitFor();
    const link = await page.locator('#invite-link').inputValue();
    assert.match(link, /#invite=inv_stemsplit_/);
    await page
      .locator('#people li[data-account="noah"]')
      .getByText(/2:00 of audio left/)
      .waitFor();
    await page.setViewportSize({ width: 390, height: 844 });
    const overflow = await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
    assert.ok(overflow <= 0, `the People view fits a phone's screen (${overflow} px over)`);
    await page.setViewportSize({ width: 1280, height: 900 });

    const memberContext = await (browser as Browser).newContext();
    const member = await openPage(memberContext, link);
    await member.page.locator('#upload-panel').waitFor();
    assert.equal(await member.page.locator('#people-panel').isHidden(), true, "a member's page has no People view");

    await page.getByRole('spinbutton', { name: 'Minutes to give noah' }).fill('3');
    await page.locator('#people li[data-account="noah"]').getByRole('button', { name: 'Give minutes' }).click();
    await page
      .locator('#people li[data-account="noah"]')
      .getByText(/5:00 of audio left/)
      .waitFor();
    assert.equal(await t.server.data.accounts.balance('noah'), 300);

    await page.getByRole('button', { name: 'Revoke the keys of noah' }).click();
    await page
      .locator('#people li[data-account="noah"]')
      .getByText(/0 working keys/)
      .waitFor();
    await member.page.getByRole('button', { name: 'Refresh' }).click();
    await member.page
      .locator('#key-error')
      .getByText(/it was revoked/)
      .waitFor();

    // Delete: a finished split of the admin's leaves the list and the disk.
    const input = await t.client.upload(readFileSync(songPath()));
    const created = await t.request('POST', '/audio/splits', { body: { input, stemModel: '4s' } });
    await t.client.waitForSplit(created.json.data.id);
    await page.getByRole('button', { name: 'Refresh' }).click();
    const row = page.locator(`#history li[data-split="${created.json.data.id}"]`);
    page.once('dialog', (dialog) => void dialog.accept());
    await row.getByRole('button', { name: /^Delete / }).click();
    await row.waitFor({ state: 'detached' });
    assert.equal((await t.request('GET', `/audio/splits/${created.json.data.id}`)).status, 404);
    const { layout } = t.server.data;
    assert.equal(existsSync(layout.absolute(layout.stemDir(created.json.data.id))), false);
    assert.deepEqual([...errors, ...member.errors], []);
    await memberContext.close();
    await context.close();
  });

  test('a batch goes on past a file the server cannot read, naming it; the good one splits', { timeout: 180_000 }, async () => {
    const dir = tempDir();
    const broken = join(dir, 'Broken Bounce.wav');
    writeFileSync(broken, Buffer.alloc(4096, 'not audio '));
    const made = await t.server.data.accounts.createKey('default', 'web session');
    const context = await (browser as Browser).newContext();
    const { page, errors } = await openPage(context, webSessionLink(t.server.url, made.key));
    await page.locator('#upload-panel').waitFor();
    await page.locator('#file-input').setInputFiles([broken, songPath()]);
    await page.getByRole('button', { name: 'Split 2 songs' }).click();
    await page.locator('#history li').filter({ hasText: 'Take One.wav' }).first().getByText('Ready').waitFor({ timeout: 120_000 });
    const said = (await page.locator('#upload-error').textContent()) ?? '';
    assert.match(said, /^"Broken Bounce\.wav": stemsplit couldn't read this file as audio/);
    assert.equal(said.includes('Take One.wav'), false, 'only the file that failed is named');
    assert.deepEqual(errors, []);
    await context.close();
  });

  test('during a job: its place in the queue (GET says queuePosition), then the time left from the measured rate', { timeout: 240_000 }, async () => {
    const dir = tempDir();
    const long = join(dir, 'Long Take.wav');
    writeSong(long, 120);
    const ids: string[] = [];
    for (const [path, name] of [
      [long, 'Long Take.wav'],
      [songPath(), 'Queued One.wav'],
      [songPath(), 'Queued Two.wav'],
    ] as const) {
      const input = await t.client.upload(readFileSync(path), name);
      const created = await t.request('POST', '/audio/splits', { body: { input, stemModel: '4s' } });
      assert.equal(created.status, 200, created.text);
      ids.push(created.json.data.id);
    }
    const [first, second, third] = ids as [string, string, string];
    try {
      await t.client.waitForSplit(first, { until: (split) => split.status === 'processing', timeoutMs: 120_000 });
      const places = await Promise.all([second, third].map(async (id) => (await t.request('GET', `/audio/splits/${id}`)).json.data.queuePosition));
      assert.deepEqual(places, [1, 2]);
      assert.equal((await t.request('GET', `/audio/splits/${first}`)).json.data.queuePosition, undefined, 'a running job has no place in the queue');

      const made = await t.server.data.accounts.createKey('default', 'web session');
      const context = await (browser as Browser).newContext();
      const { page, errors } = await openPage(context, webSessionLink(t.server.url, made.key));
      await page.getByRole('button', { name: 'Follow the progress of Queued Two.wav' }).click();
      await page.locator('#job-stage').getByText('Waiting for its turn: number 2 in the queue\u2026').waitFor();
      await page.getByRole('button', { name: 'Follow the progress of Long Take.wav' }).click();
      await page
        .locator('#job-stage')
        .getByText(/^Splitting \d+%( on .+)? \u00b7 about (\d+ min( \d+ s)?|\d+ s) left$/)
        .waitFor({ timeout: 120_000 });
      assert.deepEqual(errors, []);
      await context.close();
    } finally {
      for (const id of ids) await t.request('DELETE', `/audio/splits/${id}`);
    }
  });
});
