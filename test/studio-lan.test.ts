/**
 * A studio's LAN (issue 48) on the page, in a real browser against a real server on loopback: a
 * key that never existed is "not a key of this server", a revoked one is "revoked".
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { launchBrowser, NEEDS_CHROMIUM, openPage } from './support/browser.js';
import { startTestServer, type TestServer } from './support/server.js';
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
});
