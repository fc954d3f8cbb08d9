/**
 * A studio's LAN (issue 48) on the page, in a real browser against a real server on loopback: an
 * admin's invite opened in a member's browser becomes the member's own key, which splits with the
 * member's credits and stays until "Forget this key"; the invite does not work twice; a key that
 * never existed is "not a key of this server", a revoked one is "revoked".
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { writeSong } from '../harness/audio.js';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { launchBrowser, NEEDS_CHROMIUM, openPage } from './support/browser.js';
import { startTestServer, tempDir, type TestServer } from './support/server.js';
import { webSessionLink } from '../src/web/session.js';

let t: TestServer;
let browser: Browser | undefined;

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
    await page.locator('#key-error').getByText(/not a key of this server/).waitFor();
    assert.equal(/revoked/.test(await page.locator('#key-error').innerText()), false);

    const made = await t.server.data.accounts.createKey('default', 'web session');
    await t.server.data.accounts.revokeKey(made.id);
    const revoked = await openPage(context, webSessionLink(t.server.url, made.key));
    await revoked.page.locator('#key-error').getByText(/it was revoked/).waitFor();
    assert.deepEqual([...errors, ...revoked.errors], []);
    await context.close();
  });

  test("an admin's invite opened by a member: their own key, their own credits, kept until 'Forget this key'; the invite works once", { timeout: 180_000 }, async () => {
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
    await page.locator('#key-error').getByText(/no longer keeps your key/).waitFor();
    assert.equal(await page.evaluate<string | null>("localStorage.getItem('stemsplit.apiKey')"), null);

    const again = await openPage(context, invited.json.data.url);
    await again.page.locator('#key-error').getByText(/This invite doesn't work: this invite was already used/).waitFor();
    assert.equal(await again.page.locator('#upload-panel').isHidden(), true);
    assert.deepEqual([...errors, ...again.errors], []);
    await context.close();
  });
});
