// A real browser for the tests: Debian's Chromium (/usr/bin/chromium, apt packages chromium and
// chromium-driver, installed by .ci/run), driven by playwright-core, which downloads no browser of its
// own. Headless, with a fresh profile each launch (Playwright makes a temporary --user-data-dir and
// removes it on close), and with every background connection Chromium would try turned off: this
// machine's network refuses them, and a test should wait for its own page, not for them.
//
//   await withBrowser(async (browser) => {
//     const page = await newPage(browser);
//     await page.goto(url);
//     await saveScreenshot(page, 'timeline');   // .cache/test-artifacts/screenshots/timeline.png
//   });
import { existsSync } from 'node:fs';
import path from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { artifactPath } from './artifacts.ts';
import { repoRoot } from './cluster.ts';

/** Chromium's switches for a test run (Playwright adds its own automation switches to these). */
export const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** $KUBEDIFF_TEST_CHROMIUM, else /usr/bin/chromium; an Error saying how to install it when missing. */
export function chromiumPath(env: NodeJS.ProcessEnv = process.env): string {
  const executable = env.KUBEDIFF_TEST_CHROMIUM || '/usr/bin/chromium';
  if (!existsSync(executable)) {
    throw new Error(
      `${executable} is missing: the browser tests need Chromium (Debian: apt-get install chromium chromium-driver; .ci/run does), or set KUBEDIFF_TEST_CHROMIUM to a Chromium binary.`,
    );
  }
  return executable;
}

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: chromiumPath(), args: CHROMIUM_FLAGS, timeout: 120_000 });
}

/** Runs `use` with a fresh browser, closed afterwards whatever happens. */
export async function withBrowser<T>(use: (browser: Browser) => Promise<T>): Promise<T> {
  const browser = await launchBrowser();
  try {
    return await use(browser);
  } finally {
    await browser.close();
  }
}

/**
 * A page in a context of its own (cookies and storage apart from other pages), with what makes
 * screenshots comparable from run to run: one viewport size, English, UTC.
 */
export async function newPage(browser: Browser): Promise<Page> {
  const context = await browser.newContext({
    viewport: { width: 1280, height: 800 },
    locale: 'en-US',
    timezoneId: 'UTC',
  });
  return context.newPage();
}

/**
 * Errors the page's scripts throw or log (console.error), from now on: a page that works for a person
 * has none, so a test can assert the list stays empty.
 */
export function collectPageErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text());
  });
  return errors;
}

/** Saves a full-page PNG as .cache/test-artifacts/screenshots/<name>.png and returns its path. */
export async function saveScreenshot(page: Page, name: string): Promise<string> {
  const file = await artifactPath(path.join('screenshots', `${name.replace(/[^\w.-]+/g, '_')}.png`));
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

/**
 * Saves what the viewport shows as docs/<name>.png: the pictures of the docs, made by a test from a real
 * history so that they stay true (README.md and docs/ui.md show them).
 */
export async function saveDocsScreenshot(page: Page, name: string): Promise<string> {
  const file = path.join(repoRoot, 'docs', `${name.replace(/[^\w.-]+/g, '_')}.png`);
  await page.screenshot({ path: file });
  return file;
}
