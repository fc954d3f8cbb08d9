/**
 * The page in a real browser: Debian's chromium driven by playwright-core. Suites that need it skip,
 * saying why, where chromium is missing.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/** A suite's `skip`: false where chromium is installed, otherwise why not. */
export const NEEDS_CHROMIUM: false | string = existsSync(CHROMIUM) ? false : `needs ${CHROMIUM} (apt-get install chromium)`;

/** Chromium, headless; undefined where it is missing. */
export async function launchBrowser(): Promise<Browser | undefined> {
  return existsSync(CHROMIUM) ? chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS }) : undefined;
}

/** A page whose uncaught errors fail the test. */
export async function openPage(context: BrowserContext, url: string): Promise<{ page: Page; errors: string[] }> {
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  await page.goto(url);
  return { page, errors };
}
