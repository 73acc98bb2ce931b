// `kubediff watch --ui` and `kubediff ui` in a real browser (Debian's Chromium through playwright-core),
// against a history kubediff records while watching the test API server: the timeline shows a mark per
// recorded event, a filter narrows them, clicking a mark opens the object with the right `from → to`
// and its versions as a diff of their YAML, and a change made while the page is open appears without a reload.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, test } from 'node:test';
import type { Page } from 'playwright-core';
import { collectPageErrors, newPage, saveScreenshot, withBrowser } from '../helpers/browser.ts';
import { killAll, runKubediff, runKubediffToCompletion, watchArgs } from '../helpers/cli.ts';
import { changesOf } from '../helpers/events.ts';
import { writeGeneratedHistory } from '../helpers/generated-history.ts';
import { ADMIN_FIELD_MANAGER, adminClient } from '../helpers/kube-admin.ts';

const admin = adminClient();
const dir = mkdtempSync(join(tmpdir(), 'kubediff-ui-it-'));
const SERVING = /serving the change history on (http:\/\/[^/\s]+)\//;

afterEach(async () => {
  await killAll();
});
after(async () => {
  await admin.close();
  rmSync(dir, { recursive: true, force: true });
});

const cmPath = (ns: string, name = '') => `/api/v1/namespaces/${ns}/configmaps${name ? `/${name}` : ''}`;
const deployPath = (ns: string, name = '') =>
  `/apis/apps/v1/namespaces/${ns}/deployments${name ? `/${name}` : ''}`;

function deployment(name: string) {
  return {
    metadata: { name },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: 'web', image: 'shop:1.4' }] },
      },
    },
  };
}

/** Waits until the timeline shows exactly `count` marks (the page's own rendering, no sleep). */
async function marksShown(page: Page, count: number): Promise<void> {
  await page.waitForFunction(
    (expected) => document.querySelectorAll('#timeline .mark').length === expected,
    count,
    { timeout: 20_000 },
  );
}

test('the timeline of a watched namespace: marks, a filter, a click to the diff, live updates', async (t) => {
  const ns = await admin.createNamespace('ui');
  t.after(() => admin.deleteNamespace(ns));
  const state = join(dir, `${ns}.db`);
  const kd = runKubediff(
    watchArgs(ns, ['configmaps', 'deployments'], '--state', state, '--ui', '127.0.0.1:0'),
    { checkEvents: true, timeoutMs: 30_000 },
  );
  const origin = (await kd.waitForStderr(SERVING))[1]!;
  await kd.waitForStderr(/watching \d+ resource types?/);

  // A small history: a config changed, a deployment scaled and rolled, a config created and deleted.
  await admin.create(cmPath(ns), { metadata: { name: 'web-config' }, data: { mode: 'a', level: 'info' } });
  await admin.create(deployPath(ns), deployment('web'));
  await admin.patch(cmPath(ns, 'web-config'), { data: { mode: 'b' } });
  await admin.patch(deployPath(ns, 'web'), { spec: { replicas: 3 } });
  await admin.patch(deployPath(ns, 'web'), {
    spec: { template: { spec: { containers: [{ name: 'web', image: 'shop:1.5' }] } } },
  });
  await admin.create(cmPath(ns), { metadata: { name: 'old-flags' }, data: { beta: 'on' } });
  await admin.delete(cmPath(ns, 'old-flags'));
  await kd.waitForEvent((event) => event.type === 'DELETED' && event.object.name === 'old-flags');
  // What the watch reported is what the history records: the page must show exactly those.
  const reported = changesOf(kd.events).length;

  await withBrowser(async (browser) => {
    const page = await newPage(browser);
    const errors = collectPageErrors(page);
    await page.goto(`${origin}/?namespace=${ns}&rows=kind`);
    await marksShown(page, reported);
    assert.equal(await page.locator('#timeline .mark.deleted').count(), 1);
    assert.match(
      (await page.locator('#status').textContent()) ?? '',
      new RegExp(`^${reported} events in view`),
    );
    await saveScreenshot(page, 'ui-timeline');

    // A filter narrows the marks, and the address holds it.
    await page.getByRole('searchbox', { name: 'Name' }).fill('web-config');
    await page.getByRole('searchbox', { name: 'Name' }).press('Enter');
    const webConfig = kd.events.filter((event) => event.object.name === 'web-config').length;
    await marksShown(page, webConfig);
    assert.match(page.url(), /name=web-config/);

    // A click on the UPDATED mark opens the object at that event, its change as path: from → to.
    await page.locator('#timeline .mark.updated').click();
    const selected = page.locator('#object-events li.selected');
    await selected.waitFor();
    assert.match(
      (await page.locator('#object-heading').textContent()) ?? '',
      new RegExp(`ConfigMap ${ns}/web-config`),
    );
    // With who made it: the admin client's field manager.
    assert.deepEqual(
      (await selected.locator('.changes li').allTextContents()).map((text) => text.replace(/\s+/g, ' ')),
      [`/data/mode: "a" → "b" (${ADMIN_FIELD_MANAGER})`],
    );
    // Versions A (before) and B (after) as a diff of their YAML, the changed line removed and added.
    const diff = page.locator('#compare .diff-unified');
    await diff.waitFor();
    assert.deepEqual(await diff.locator('tr.removed td.text').allTextContents(), ['  mode: a']);
    assert.deepEqual(await diff.locator('tr.added td.text').allTextContents(), ['  mode: b']);
    assert.match(page.url(), /object\.name=web-config/);
    await saveScreenshot(page, 'ui-object-history');

    // Live: a change made now appears without a reload.
    const rows = await page.locator('#events tbody tr').count();
    await admin.patch(cmPath(ns, 'web-config'), { data: { mode: 'c' } });
    await marksShown(page, webConfig + 1);
    await page.waitForFunction(
      (count) => document.querySelectorAll('#events tbody tr').length === count,
      rows + 1,
    );
    assert.match((await page.locator('#events tbody tr').first().textContent()) ?? '', /UPDATED.*web-config/);

    // The address holds the view: a pasted address with a window shows that window, here zoomed to
    // the events' few seconds (the screenshot of the README).
    const times = kd.events.map((event) => Date.parse(event.time));
    const from = new Date(Math.min(...times) - 300).toISOString();
    const to = new Date(Math.max(...times) + 300).toISOString();
    await page.goto(`${origin}/?namespace=${ns}&rows=kind&from=${from}&to=${to}`);
    await marksShown(page, changesOf(kd.events).length);
    assert.equal(await page.locator('#object').isHidden(), true);
    await saveScreenshot(page, 'ui-timeline-zoomed');
    assert.deepEqual(errors, []);
  });
});

test('kubediff ui with --token-file: the page asks for the token, and works with #token=', async (t) => {
  const ns = await admin.createNamespace('ui-token');
  t.after(() => admin.deleteNamespace(ns));
  const state = join(dir, `${ns}.db`);
  const watch = runKubediff(watchArgs(ns, ['configmaps'], '--state', state), {
    checkEvents: true,
    timeoutMs: 30_000,
  });
  await watch.waitForStderr(/watching \d+ resource types?/);
  await admin.create(cmPath(ns), { metadata: { name: 'flags' }, data: { a: '1' } });
  await watch.waitForEvent((event) => event.object.name === 'flags');
  const tokenFile = join(dir, `${ns}.token`);
  writeFileSync(tokenFile, 'ui-test-token-4f2a\n', { mode: 0o600 });
  const ui = runKubediff(['ui', '--state', state, '--listen', '127.0.0.1:0', '--token-file', tokenFile], {
    timeoutMs: 30_000,
  });
  const origin = (await ui.waitForStderr(SERVING))[1]!;

  await withBrowser(async (browser) => {
    const page = await newPage(browser);
    await page.goto(`${origin}/`);
    await page.locator('#status').filter({ hasText: 'needs its token' }).waitFor();

    await page.goto(`${origin}/?namespace=${ns}#token=ui-test-token-4f2a`);
    await marksShown(page, 1);
    assert.equal(new URL(page.url()).hash, '', 'the token leaves the address bar');
  });
  const stopped = await ui.stop('SIGTERM');
  assert.equal(stopped.code, 0);
});

test('a larger history: density when many, a cell zooms in to marks; who and story in the object view', async () => {
  const state = join(dir, 'generated.db');
  const spec = { events: 3_000, start: Date.now() - 3_000_000, stepMs: 1_000, namespaces: 7, objects: 500 };
  writeGeneratedHistory(state, spec);
  const ui = runKubediff(['ui', '--state', state, '--listen', '127.0.0.1:0'], { timeoutMs: 30_000 });
  const origin = (await ui.waitForStderr(SERVING))[1]!;
  await withBrowser(async (browser) => {
    const page = await newPage(browser);
    const errors = collectPageErrors(page);
    await page.goto(`${origin}/`);
    await page.locator('#status').filter({ hasText: '3000 events in view, shown as density' }).waitFor();
    assert.equal(await page.locator('#timeline polygon.mark').count(), 0);
    const cells = page.locator('#timeline rect.mark');
    assert.ok((await cells.count()) > 7, 'density cells in every namespace row');
    await saveScreenshot(page, 'ui-density');
    // A cell zooms into its bucket: single marks again, the window in the address.
    await cells.first().click();
    await page.waitForFunction(() => document.querySelectorAll('#timeline polygon.mark').length > 0);
    assert.match(page.url(), /from=.*&to=/);

    // Event 525 (generated-history.ts): an UPDATED of deployments obj-25 in ns-4, by alice with helm,
    // in the story of Deployment shop-web.
    await page.goto(
      `${origin}/?object.kind=deployments.apps&object.namespace=ns-4&object.name=obj-25&object.seq=526`,
    );
    const selected = page.locator('#object-events li.selected');
    await selected.waitFor();
    const text = (await selected.textContent()) ?? '';
    assert.match(text, /UPDATED by alice@example\.com \(helm\) story: Deployment shop-web/);
    assert.match(text, /\/spec\/replicas: 0 → 1/);
    assert.deepEqual(errors, []);
  });
});

test('mistakes are one sentence on stderr and exit code 2', async () => {
  const missing = join(dir, 'missing.db');
  const existing = join(dir, 'empty.db');
  writeFileSync(existing, '');
  const badListen = join(dir, 'bad-listen.yaml');
  writeFileSync(badListen, `state:\n  path: ${existing}\nui:\n  listen: nowhere\n`);
  const exposed = join(dir, 'exposed.yaml');
  writeFileSync(exposed, `state:\n  path: ${existing}\nui:\n  listen: 0.0.0.0:0\n`);
  for (const [args, message] of [
    [['ui'], /^kubediff: ui needs --state <file\|postgres:\/\/…>/],
    [['ui', '--state', missing], /^kubediff: no state file at .*missing\.db: run `kubediff watch --state/],
    [
      ['ui', '--state', existing, '--listen', 'nowhere'],
      /^kubediff: invalid --listen "nowhere": use \[host\]:port/,
    ],
    [
      ['ui', '--state', existing, '--token-file', join(dir, 'no.token')],
      /^kubediff: cannot read --token-file .*no\.token: .*; pass a readable file that holds the token\./,
    ],
    [
      ['watch', '--ui', '127.0.0.1:0', '-n', 'default'],
      /^kubediff: --ui \(or ui\.listen\) shows the history that --state records/,
    ],
    [['watch', '--ui', 'x:y', '--state', existing], /^kubediff: invalid --ui "x:y"/],
    // Other machines without a token: refused unless that exposure is said to be intended.
    [
      ['ui', '--state', existing, '--listen', '0.0.0.0:0'],
      /^kubediff: the UI on 0\.0\.0\.0:0 \(--listen\) would be reachable from other machines without a token, .*: pass --token-file <file>, listen on 127\.0\.0\.1 \(and use kubectl port-forward\), or pass --allow-no-token if that exposure is intended\.\n$/,
    ],
    [
      ['watch', '--ui', ':0', '--state', existing, '-n', 'default'],
      /^kubediff: the UI on :0 \(--ui\) would be reachable .*: pass --ui-token-file <file>, .* or pass --ui-allow-no-token if/,
    ],
    [['ui', '-c', exposed], /^kubediff: the UI on 0\.0\.0\.0:0 \(ui\.listen\) would be reachable/],
    // Found when the file is read, with its line: kubediff validate says the same.
    [
      ['ui', '-c', badListen],
      /^kubediff: invalid config file .*bad-listen\.yaml:4:11: ui\.listen: expected \[host\]:port such as :8443, got "nowhere"\.\n$/,
    ],
  ] as const) {
    const result = await runKubediffToCompletion([...args]);
    assert.equal(result.code, 2, `${args.join(' ')}: ${result.stderr}`);
    assert.match(result.stderr, message);
    assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr);
  }
});

test('other machines without a token when told it is intended (--allow-no-token): served, with a warning', async () => {
  const state = join(dir, 'exposed.db');
  writeGeneratedHistory(state, {
    events: 10,
    start: Date.now() - 10_000,
    stepMs: 1_000,
    namespaces: 2,
    objects: 5,
  });
  const ui = runKubediff(['ui', '--state', state, '--listen', '0.0.0.0:0', '--allow-no-token'], {
    timeoutMs: 30_000,
  });
  await ui.waitForStderr(
    /the UI on 0\.0\.0\.0:0 is reachable from other machines and has no token \(--allow-no-token\)/,
  );
  const origin = (await ui.waitForStderr(SERVING))[1]!.replace('0.0.0.0', '127.0.0.1');
  assert.equal((await fetch(`${origin}/api/v1/facets`)).status, 200);
  const stopped = await ui.stop('SIGTERM');
  assert.equal(stopped.code, 0);
});
