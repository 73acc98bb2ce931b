// The UI over a PostgreSQL history (issue 19, docs/ui.md): `kubediff watch --state postgres://… --ui`
// records the test API server into a real PostgreSQL and serves the page beside it; in Debian's Chromium
// the timeline shows a mark per recorded event, a filter narrows them, a click opens the object with the
// right `from → to` and its rebuilt versions, and a change made while the page is open appears. Then
// `kubediff ui --state postgres://…` alone, as a second process on the shared database: the same
// answers, an object of one cluster, and live updates of what the watch records. The database password
// (PGPASSWORD) appears in no output, page or answer.
import assert from 'node:assert/strict';
import { after, afterEach, test } from 'node:test';
import type { Page } from 'playwright-core';
import { collectPageErrors, newPage, saveScreenshot, withBrowser } from '../helpers/browser.ts';
import { killAll, runKubediff, runKubediffToCompletion, watchArgs } from '../helpers/cli.ts';
import { changesOf } from '../helpers/events.ts';
import { ADMIN_FIELD_MANAGER, adminClient } from '../helpers/kube-admin.ts';
import { createTestDatabase } from '../helpers/postgres-env.ts';

const admin = adminClient();
const SERVING = /serving the change history on (http:\/\/[^/\s]+)\//;

afterEach(async () => {
  await killAll();
});
after(async () => {
  await admin.close();
});

const cmPath = (ns: string, name = '') => `/api/v1/namespaces/${ns}/configmaps${name ? `/${name}` : ''}`;

async function marksShown(page: Page, count: number): Promise<void> {
  await page.waitForFunction(
    (expected) => document.querySelectorAll('#timeline .mark').length === expected,
    count,
    { timeout: 20_000 },
  );
}

interface Summary {
  seq: number;
  id: string;
  type: string;
  cluster?: string;
  name: string;
}

test('watch --ui and kubediff ui on a PostgreSQL history: marks, a filter, the diff, live updates; no password anywhere', async (t) => {
  const ns = await admin.createNamespace('ui-pg');
  t.after(() => admin.deleteNamespace(ns));
  const database = await createTestDatabase('ui postgres');
  t.after(() => database.drop());
  const url = new URL(database.url);
  url.password = '';
  const env = { PGPASSWORD: database.info.password };
  const cluster = 'pg-ui';
  const kd = runKubediff(
    watchArgs(ns, ['configmaps'], '--state', url.href, '--cluster-name', cluster, '--ui', '127.0.0.1:0'),
    { checkEvents: true, timeoutMs: 30_000, env },
  );
  const origin = (await kd.waitForStderr(SERVING))[1]!;
  await kd.waitForStderr(/watching \d+ resource types?/);

  await admin.create(cmPath(ns), { metadata: { name: 'web-config' }, data: { mode: 'a', level: 'info' } });
  await admin.patch(cmPath(ns, 'web-config'), { data: { mode: 'b' } });
  await admin.create(cmPath(ns), { metadata: { name: 'old-flags' }, data: { beta: 'on' } });
  await admin.delete(cmPath(ns, 'old-flags'));
  await kd.waitForEvent((event) => event.type === 'DELETED' && event.object.name === 'old-flags');
  const reported = changesOf(kd.events).length;
  const answers: string[] = [];

  await withBrowser(async (browser) => {
    const page = await newPage(browser);
    const errors = collectPageErrors(page);
    page.on('response', async (response) => {
      if (response.url().includes('/api/v1/') && !response.url().includes('/stream'))
        answers.push(await response.text().catch(() => ''));
    });
    await page.goto(`${origin}/?namespace=${ns}&rows=kind`);
    await marksShown(page, reported);
    assert.equal(await page.locator('#timeline .mark.deleted').count(), 1);
    answers.push(await page.content());
    await saveScreenshot(page, 'ui-postgres-timeline');

    await page.getByRole('searchbox', { name: 'Name' }).fill('web-config');
    await page.getByRole('searchbox', { name: 'Name' }).press('Enter');
    await marksShown(page, 2);

    await page.locator('#timeline .mark.updated').click();
    const selected = page.locator('#object-events li.selected');
    await selected.waitFor();
    assert.deepEqual(
      (await selected.locator('.changes li').allTextContents()).map((text) => text.replace(/\s+/g, ' ')),
      [`/data/mode: "a" → "b" (${ADMIN_FIELD_MANAGER})`],
    );
    // The object of the mark's cluster; its last recorded state rebuilds both versions.
    assert.match(page.url(), new RegExp(`object\\.cluster=${cluster}`));
    // Versions A (before) and B (after) as a diff of their YAML, as on a SQLite history.
    const diff = page.locator('#compare .diff-unified');
    await diff.waitFor();
    assert.deepEqual(await diff.locator('tr.removed td.text').allTextContents(), ['  mode: a']);
    assert.deepEqual(await diff.locator('tr.added td.text').allTextContents(), ['  mode: b']);

    await admin.patch(cmPath(ns, 'web-config'), { data: { mode: 'c' } });
    await marksShown(page, 3);
    answers.push(await page.content());
    assert.deepEqual(errors, []);
  });

  // `kubediff ui` alone on the shared database: what the watch recorded, newest first, and live.
  const ui = runKubediff(['ui', '--state', url.href, '--listen', '127.0.0.1:0'], { timeoutMs: 30_000, env });
  const uiOrigin = (await ui.waitForStderr(SERVING))[1]!;
  const get = async <T>(path: string): Promise<T> => {
    const response = await fetch(`${uiOrigin}${path}`);
    const text = await response.text();
    assert.equal(response.status, 200, `${path}: ${text}`);
    answers.push(text);
    return JSON.parse(text) as T;
  };
  const page = await get<{ events: Summary[] }>(`/api/v1/events?namespace=${ns}&limit=500`);
  assert.deepEqual(
    page.events.map((event) => event.id),
    changesOf(kd.events)
      .map((event) => event.id)
      .reverse(),
  );
  assert.ok(page.events.every((event) => event.cluster === cluster));
  const facets = await get<{ clusters: string[]; namespaces: string[] }>('/api/v1/facets');
  assert.deepEqual(facets.clusters, [cluster]);
  assert.ok(facets.namespaces.includes(ns));
  const object = await get<{ events: Summary[]; rebuildable: number[] }>(
    `/api/v1/object?kind=configmaps&namespace=${ns}&name=web-config&cluster=${cluster}`,
  );
  assert.deepEqual(
    object.events.map((event) => event.type),
    ['ADDED', 'UPDATED', 'UPDATED'],
  );
  assert.equal(object.rebuildable.length, 3);
  const other = await get<{ events: Summary[] }>(
    `/api/v1/object?kind=configmaps&namespace=${ns}&name=web-config&cluster=elsewhere`,
  );
  assert.deepEqual(other.events, []);

  const abort = new AbortController();
  const stream = await fetch(`${uiOrigin}/api/v1/stream?namespace=${ns}`, { signal: abort.signal });
  assert.equal(stream.status, 200);
  const chunks = stream.body![Symbol.asyncIterator]();
  await chunks.next(); // the stream's opening comment: it follows from the newest event on
  await admin.patch(cmPath(ns, 'web-config'), { data: { mode: 'd' } });
  const recorded = await kd.waitForEvent(
    (event) => event.object.name === 'web-config' && event.type === 'UPDATED',
    {
      since: reported + 1,
    },
  );
  let text = '';
  while (!text.includes('event: events')) {
    const chunk = await chunks.next();
    if (chunk.done) break;
    text += Buffer.from(chunk.value as Uint8Array).toString('utf8');
  }
  abort.abort();
  const live = JSON.parse(/data: (.*)\n/.exec(text)![1]!) as Summary[];
  assert.deepEqual(
    live.map((event) => event.id),
    [recorded.id],
  );
  answers.push(text);

  const stoppedUi = await ui.stop('SIGTERM');
  assert.equal(stoppedUi.code, 0, stoppedUi.stderr);
  const stopped = await kd.stop('SIGTERM');
  assert.equal(stopped.code, 0, stopped.stderr);
  const outputs = {
    'watch stderr': stopped.stderr,
    'ui stderr': stoppedUi.stderr,
    'pages and answers': answers.join('\n'),
  };
  for (const [name, output] of Object.entries(outputs))
    assert.ok(!output.includes(database.info.password), `the database password appears in ${name}`);
  assert.match(stoppedUi.stderr, /serving the change history/);
});

test('kubediff ui on PostgreSQL: a database without kubediff state, a password in the URL, refused credentials: one sentence, exit 2', async (t) => {
  const database = await createTestDatabase('ui postgres empty');
  t.after(() => database.drop());
  const url = new URL(database.url);
  url.password = '';
  for (const [args, env, message] of [
    [
      ['ui', '--state', url.href],
      { PGPASSWORD: database.info.password },
      /^kubediff: postgres:\/\/[^/]+\/kubediff_test_ui_postgres_empty_\w+ holds no kubediff state yet; run `kubediff watch --state <this URL>` first/,
    ],
    [
      ['ui', '--state', database.url],
      {},
      /^kubediff: the --state URL for postgres:\/\/[^/]+\/\w+ carries a password; remove it/,
    ],
    [
      ['ui', '--state', url.href],
      { PGPASSWORD: 'not-the-password' },
      /^kubediff: PostgreSQL at postgres:\/\/[^/]+\/\w+ refused the credentials/,
    ],
  ] as const) {
    const result = await runKubediffToCompletion([...args], { env });
    assert.equal(result.code, 2, `${args.join(' ')}: ${result.stderr}`);
    assert.match(result.stderr, message);
    assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr);
    assert.ok(!result.stderr.includes(database.info.password), 'the password is never printed');
  }
});
