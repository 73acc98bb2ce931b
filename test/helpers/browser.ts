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
import { readFile, writeFile } from 'node:fs/promises';
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
 * A docs picture is rewritten when its size changed, or more than this share of its pixels: a new layout
 * or colour scheme moves more; what differs from run to run in the same page (the generated namespace and
 * pod names, the times, where the marks fall) moved 0.7-3.6 % of ui-incident's pictures over three runs.
 * A smaller real change (a word, a column) is rewritten with KUBEDIFF_DOCS_SCREENSHOTS=write.
 */
export const DOCS_PICTURE_CHANGED = 0.1;
/** A pixel differs when one of its channels (0–255) moved by more than this: text antialiasing moves less. */
const CHANNEL_TOLERANCE = 48;

export interface DocsScreenshot {
  file: string;
  /** The share of pixels that differ from the picture kept (1 when there was none, or another size). */
  differing: number;
  written: boolean;
}

/**
 * Takes what the viewport shows for docs/<name>.png: the pictures of the docs, made by a test from a real
 * history so that they stay true (README.md and docs/ui.md show them). The file is rewritten only when the
 * picture changed in a way that matters (DOCS_PICTURE_CHANGED), or always with
 * KUBEDIFF_DOCS_SCREENSHOTS=write, so that a test run does not dirty the checkout with a new timestamp's
 * pixels (CONTRIBUTING.md, Screenshots). The two PNGs are decoded and compared by the browser itself.
 */
export async function saveDocsScreenshot(page: Page, name: string): Promise<DocsScreenshot> {
  const file = path.join(repoRoot, 'docs', `${name.replace(/[^\w.-]+/g, '_')}.png`);
  const fresh = await page.screenshot();
  const kept = existsSync(file) ? await readFile(file) : undefined;
  const differing = kept ? await pixelsDiffering(page, kept, fresh) : 1;
  const written = differing > DOCS_PICTURE_CHANGED || process.env.KUBEDIFF_DOCS_SCREENSHOTS === 'write';
  if (written) await writeFile(file, fresh);
  return { file, differing, written };
}

/** The share of pixels of two PNGs that differ (1 when their sizes differ), decoded in `page`. */
export function pixelsDiffering(page: Page, a: Buffer, b: Buffer): Promise<number> {
  return page.evaluate(
    async ([first, second, tolerance]) => {
      const decode = async (base64: string) => {
        const bytes = Uint8Array.from(atob(base64), (char) => char.charCodeAt(0));
        const bitmap = await createImageBitmap(new Blob([bytes], { type: 'image/png' }));
        const canvas = new OffscreenCanvas(bitmap.width, bitmap.height);
        const context = canvas.getContext('2d')!;
        context.drawImage(bitmap, 0, 0);
        return context.getImageData(0, 0, bitmap.width, bitmap.height);
      };
      const [x, y] = await Promise.all([decode(first), decode(second)]);
      if (x.width !== y.width || x.height !== y.height) return 1;
      let differing = 0;
      for (let i = 0; i < x.data.length; i += 4) {
        for (let channel = 0; channel < 3; channel++) {
          if (Math.abs(x.data[i + channel]! - y.data[i + channel]!) > tolerance) {
            differing++;
            break;
          }
        }
      }
      return differing / (x.width * x.height);
    },
    [a.toString('base64'), b.toString('base64'), CHANNEL_TOLERANCE] as const,
  );
}
