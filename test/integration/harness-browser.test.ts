// Proves the browser the UI's tests will rely on: Debian's Chromium, driven by playwright-core, opens a
// page served on loopback, runs its script, takes a click, shows the change, and leaves a screenshot.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, test } from 'node:test';
import {
  collectPageErrors,
  DOCS_PICTURE_CHANGED,
  newPage,
  pixelsDiffering,
  saveScreenshot,
  withBrowser,
} from '../helpers/browser.ts';

const PAGE = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>kubediff harness</title></head>
<body>
  <h1>Changes</h1>
  <button type="button" id="show">Show the diff</button>
  <p id="diff" aria-live="polite"></p>
  <script src="/app.js"></script>
</body>
</html>`;
const SCRIPT = `document.getElementById('show').addEventListener('click', async () => {
  const response = await fetch('/diff.json');
  const change = await response.json();
  document.getElementById('diff').textContent = change.path + ': ' + change.from + ' → ' + change.to;
});`;

const requested: string[] = [];
const server = createServer((request, response) => {
  requested.push(request.url ?? '');
  const routes: Record<string, [string, string]> = {
    '/': ['text/html; charset=utf-8', PAGE],
    '/app.js': ['text/javascript', SCRIPT],
    '/diff.json': ['application/json', JSON.stringify({ path: 'spec.replicas', from: 1, to: 3 })],
  };
  if (request.url === '/favicon.ico') {
    response.writeHead(204).end(); // Chromium asks for one on its own; a 404 would be a console error
    return;
  }
  const route = routes[request.url ?? ''];
  response.writeHead(route ? 200 : 404, { 'content-type': route?.[0] ?? 'text/plain' });
  response.end(route?.[1] ?? 'not found');
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
after(() => new Promise((resolve) => server.close(resolve)));
const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

test('a page on loopback: a click fetches data and changes the DOM; a screenshot is saved', async () => {
  await withBrowser(async (browser) => {
    const page = await newPage(browser);
    const errors = collectPageErrors(page);
    await page.goto(`${origin}/`);
    assert.equal(await page.title(), 'kubediff harness');

    await page.getByRole('button', { name: 'Show the diff' }).click();
    const diff = page.locator('#diff');
    await diff.filter({ hasText: '→' }).waitFor();
    assert.equal(await diff.textContent(), 'spec.replicas: 1 → 3');
    assert.deepEqual(errors, []);
    assert.deepEqual(
      requested.filter((url) => url !== '/favicon.ico'),
      ['/', '/app.js', '/diff.json'],
    );

    const file = await saveScreenshot(page, 'harness-browser');
    const png = await readFile(file);
    assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  });
});

test('docs pictures: the same page is 0 % different, a changed word little, a new colour scheme much', async () => {
  await withBrowser(async (browser) => {
    const page = await newPage(browser);
    const table = (word: string, columns: number, background = 'white') =>
      `<!doctype html><html lang="en"><body style="font: 14px sans-serif; background: ${background}"><h1>Changes</h1><table>${Array.from(
        { length: 20 },
        (_, row) =>
          `<tr>${Array.from({ length: columns }, (_, column) => `<td>web-${row}-${column} ${word}</td>`).join('')}</tr>`,
      ).join('')}</table></body></html>`;
    const shot = async (html: string) => {
      await page.setContent(html);
      return page.screenshot();
    };
    const first = await shot(table('shop:1.4', 4));
    assert.equal(await pixelsDiffering(page, first, await shot(table('shop:1.4', 4))), 0);
    const word = await pixelsDiffering(page, first, await shot(table('shop:1.5', 4)));
    assert.ok(word > 0 && word <= DOCS_PICTURE_CHANGED, `a changed tag: ${word}`);
    const scheme = await pixelsDiffering(page, first, await shot(table('shop:1.4', 4, '#1e1e1e')));
    assert.ok(scheme > DOCS_PICTURE_CHANGED, `a dark background: ${scheme}`);
    await page.setViewportSize({ width: 1000, height: 800 });
    assert.equal(await pixelsDiffering(page, first, await page.screenshot()), 1, 'another size');
  });
});
