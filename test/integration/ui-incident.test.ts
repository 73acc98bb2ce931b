// The page as a person opens it in an incident (issue 41), in Chromium at 1280×800 and 1920×1080, from a
// history kubediff records while watching the test API server and its controllers: a rollout (the
// Deployment, its ReplicaSets, their Pods), a scale from 2 to 5, a `set image`, and a ConfigMap edit whose
// last-applied-configuration annotation is 50 KB. It checks what the person reads: the events table row
// of the `set image` shows the old and the new tag; the diff of the scale is `replicas: 2` → `replicas: 5`
// as YAML lines; a rollout is one story mark that opens into its events; the search finds an image;
// nothing scrolls sideways, the 50 KB line included, folded or unfolded; axe-core finds no serious or
// critical violation. The pictures of README.md and docs/ui.md are taken here (docs/ui-*.png).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { after, afterEach, before, type TestContext, test } from 'node:test';
import { promisify } from 'node:util';
import type { Page } from 'playwright-core';
import {
  collectPageErrors,
  type DocsScreenshot,
  newPage,
  saveDocsScreenshot,
  withBrowser,
} from '../helpers/browser.ts';
import { killAll, runKubediff } from '../helpers/cli.ts';
import {
  type ClusterInfo,
  DEFAULT_CONTROLLERS,
  defaultBinDir,
  type RunningCluster,
  startCluster,
  useExistingCluster,
  WORKLOAD_CONTROLLERS,
} from '../helpers/cluster.ts';
import { testCluster } from '../helpers/cluster-env.ts';
import { changesOf } from '../helpers/events.ts';
import { KubeAdmin, type KubeObject } from '../helpers/kube-admin.ts';

const dir = mkdtempSync(join(tmpdir(), 'kubediff-ui-incident-'));
const SERVING = /serving the change history on (http:\/\/[^/\s]+)\//;
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const VIEWPORTS = [
  { width: 1280, height: 800 },
  { width: 1920, height: 1080 },
];

// A control plane of its own that runs the workload controllers (the shared one creates nothing for a
// Deployment), as test/integration/stories.test.ts does: the rollout is real.
let cluster: ClusterInfo;
let started: RunningCluster | undefined;
let admin: KubeAdmin;

before(async () => {
  if (useExistingCluster()) cluster = testCluster();
  else {
    started = await startCluster({ controllers: [...DEFAULT_CONTROLLERS, ...WORKLOAD_CONTROLLERS] });
    cluster = started;
  }
  admin = new KubeAdmin(cluster);
});

afterEach(async () => {
  await killAll();
});
after(async () => {
  await admin?.close();
  await started?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const cmPath = (ns: string, name = '') => `/api/v1/namespaces/${ns}/configmaps${name ? `/${name}` : ''}`;
const deployPath = (ns: string) => `/apis/apps/v1/namespaces/${ns}/deployments`;

const execFileAsync = promisify(execFile);
function kubectl(...args: string[]): Promise<{ stdout: string }> {
  const binary = cluster.binaries?.kubectl ?? join(defaultBinDir, 'kubectl');
  return execFileAsync(binary, ['--kubeconfig', cluster.kubeconfigPath, ...args]);
}

async function podsOf(ns: string, image: string): Promise<number> {
  const list = await admin.list(`/api/v1/namespaces/${ns}/pods`);
  return list.items.filter((pod: KubeObject) => JSON.stringify(pod).includes(`"image":"${image}"`)).length;
}

/** A kubectl-apply copy of the ConfigMap, about 50 KB: one line of YAML far wider than any screen. */
function lastApplied(ns: string, mode: string): string {
  const data = { mode, blob: 'x'.repeat(50_000) };
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'web-config', namespace: ns },
    data,
  });
}

/** Neither the page nor any diff on it scrolls sideways (each box as wide as what it holds). */
async function sidewaysScroll(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const wide: string[] = [];
    const root = document.scrollingElement ?? document.documentElement;
    if (root.scrollWidth > root.clientWidth) wide.push(`page ${root.scrollWidth} > ${root.clientWidth}`);
    for (const box of document.querySelectorAll<HTMLElement>('.diff, .diff table, .compare, #events')) {
      if (box.offsetParent !== null && box.scrollWidth > box.clientWidth + 1)
        wide.push(`${box.className || box.id} ${box.scrollWidth} > ${box.clientWidth}`);
    }
    return wide;
  });
}

/** axe-core's serious and critical violations on the page as it is now. */
async function seriousViolations(page: Page): Promise<string[]> {
  // Evaluated through the DevTools protocol: the page's Content Security Policy (script-src 'self') stays on.
  await page.evaluate(AXE);
  return page.evaluate(async () => {
    const axe = (
      window as unknown as {
        axe: {
          run(): Promise<{ violations: { id: string; impact: string; nodes: { target: string[] }[] }[] }>;
        };
      }
    ).axe;
    const { violations } = await axe.run();
    return violations
      .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
      .map(
        (violation) =>
          `${violation.id} (${violation.impact}): ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`,
      );
  });
}

test('an incident: a rollout, a scale, a set image and a 50 KB ConfigMap edit, read at a glance', async (t) => {
  const ns = await admin.createNamespace('ui-incident');
  await admin.waitFor(() => admin.tryGet(`/api/v1/namespaces/${ns}/serviceaccounts/default`), {
    what: `the default ServiceAccount of ${ns}`,
  });
  const kd = runKubediff(
    [
      'watch',
      '--kubeconfig',
      cluster.kubeconfigPath,
      '-o',
      'json',
      '-n',
      ns,
      ...['configmaps', 'deployments', 'replicasets', 'pods'].flatMap((resource) => ['-r', resource]),
      '--state',
      join(dir, 'history.db'),
      '--ui',
      '127.0.0.1:0',
    ],
    { checkEvents: true, timeoutMs: 60_000 },
  );
  const origin = (await kd.waitForStderr(SERVING))[1]!;
  await kd.waitForStderr(/watching \d+ resource types?/);

  await admin.create(cmPath(ns), {
    metadata: {
      name: 'web-config',
      annotations: { 'kubectl.kubernetes.io/last-applied-configuration': lastApplied(ns, 'a') },
    },
    data: { mode: 'a' },
  });
  // A rollout that replaces its pods all at once (they stay Pending without a kubelet).
  await admin.create(deployPath(ns), {
    metadata: { name: 'web' },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: 'web' } },
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '100%', maxSurge: 0 } },
      template: {
        metadata: { labels: { app: 'web' } },
        spec: { containers: [{ name: 'web', image: 'shop:1.4' }] },
      },
    },
  });
  await admin.waitFor(async () => (await podsOf(ns, 'shop:1.4')) === 2, { what: 'the 2 pods of shop:1.4' });
  await kubectl('-n', ns, 'scale', 'deployment/web', '--replicas=5');
  await admin.waitFor(async () => (await podsOf(ns, 'shop:1.4')) === 5, { what: 'the 5 pods of shop:1.4' });
  await kubectl('-n', ns, 'set', 'image', 'deployment/web', 'web=shop:1.5');
  await admin.waitFor(async () => (await podsOf(ns, 'shop:1.5')) === 5, { what: 'the 5 pods of shop:1.5' });
  await admin.patch(cmPath(ns, 'web-config'), {
    metadata: { annotations: { 'kubectl.kubernetes.io/last-applied-configuration': lastApplied(ns, 'b') } },
    data: { mode: 'b' },
  });
  await kd.waitForEvent((event) => event.object.name === 'web-config' && event.type === 'UPDATED');
  // Every pod the controllers made (2, 3 more, then 5 of shop:1.5) is in the history.
  await kd.waitForEvent(
    () => kd.events.filter((event) => event.object.kind === 'Pod' && event.type === 'ADDED').length === 10,
    { description: 'the ADDED of 10 pods' },
  );

  await withBrowser(async (browser) => {
    const page = await newPage(browser);
    const errors = collectPageErrors(page);
    const times = kd.events.map((event) => Date.parse(event.time));
    const window = `from=${new Date(Math.min(...times) - 2_000).toISOString()}&to=${new Date(Math.max(...times) + 2_000).toISOString()}`;
    await page.goto(`${origin}/?namespace=${ns}&${window}`);
    await page
      .locator('#events tbody tr')
      .nth(changesOf(kd.events).length - 1)
      .waitFor();

    // The row of the `set image` says what changed: the old tag and the new one, whole on focus.
    const setImage = page
      .locator('#events tbody tr', { hasText: '"shop:1.5"' })
      .filter({ hasText: 'Deployment' });
    const change = setImage.locator('.change-text');
    assert.match(
      (await change.textContent()) ?? '',
      /^\/spec\/template\/spec\/containers\/0\/image: "shop:1\.4" → "shop:1\.5"/,
    );
    assert.match((await setImage.locator('td').nth(4).textContent()) ?? '', /^kubectl/);

    // A rollout is one story mark with its count, which opens into its events; the address holds it.
    const story = page.locator('#timeline .story[aria-label*="Deployment"]').first();
    const storyLabel = (await story.getAttribute('aria-label')) ?? '';
    assert.match(storyLabel, /^Story of Deployment [\w-]+\/web: \d+ events \(\d+ added/);
    const storyCount = Number(/: (\d+) events/.exec(storyLabel)![1]);
    assert.ok(storyCount >= 3, storyLabel);
    assert.equal(await story.locator('text').textContent(), String(storyCount));
    pictured(t, await saveDocsScreenshot(page, 'ui-timeline'));
    await story.focus();
    await page.keyboard.press('Enter');
    await page.locator('#story').waitFor();
    assert.equal(await page.locator('#story-events tbody tr').count(), storyCount);
    assert.match((await page.locator('#story-heading').textContent()) ?? '', /^Story: Deployment .*\/web: /);
    assert.match(page.url(), /story=\d+/);
    pictured(t, await saveDocsScreenshot(page, 'ui-story'));

    // The diff of the scale: replicas 2 → 5 as YAML lines (a click on the row's object, at that event).
    const scale = page
      .locator('#events tbody tr', { hasText: '/spec/replicas: 2 → 5' })
      .filter({ hasText: 'Deployment ' });
    await scale.locator('td button').click();
    const diff = page.locator('#compare .diff-unified');
    await diff.waitFor();
    assert.deepEqual(await diff.locator('tr.removed td.text').allTextContents(), ['  replicas: 2']);
    assert.deepEqual(await diff.locator('tr.added td.text').allTextContents(), ['  replicas: 5']);

    // The ConfigMap with its 50 KB annotation: its diff folds the long line, and nothing scrolls sideways.
    await page
      .locator('#events tbody tr', { hasText: 'web-config' })
      .filter({ hasText: 'UPDATED' })
      .locator('td button')
      .click();
    await page.locator('#object-heading', { hasText: 'web-config' }).waitFor();
    await page.locator('#compare .diff-unified tr.removed .fold').first().waitFor();
    // The changed lines: the key, and the annotation, cut after FOLD_AT (300) characters, the rest folded.
    const added = page.locator('#compare .diff-unified tr.added td.text');
    assert.equal(await added.first().textContent(), '  mode: b');
    // Its first characters, and the disclosure that holds the rest (cut here: a failure stays readable).
    const annotation = ((await added.nth(1).textContent()) ?? '').slice(0, 400);
    assert.match(annotation, /^ {4}kubectl\.kubernetes\.io\/last-applied-configuration: '\{"api/);
    assert.match(annotation, /^.{300}… 49,\d{3} more characters/);
    for (const viewport of VIEWPORTS) {
      await page.setViewportSize(viewport);
      assert.deepEqual(await sidewaysScroll(page), [], `${viewport.width}×${viewport.height}`);
      const split = await page.locator('#compare .diff-split').isVisible();
      assert.equal(split, viewport.width >= 1600, 'side by side on wide screens only');
      if (viewport.width === 1280) {
        await page.locator('#compare h3').evaluate((heading) => heading.scrollIntoView({ block: 'center' }));
        pictured(t, await saveDocsScreenshot(page, 'ui-diff'));
      }
      // Unfolded, the 50 KB line wraps.
      await page.locator('#compare table:visible .fold summary').first().click();
      assert.deepEqual(await sidewaysScroll(page), [], `${viewport.width}×${viewport.height}, unfolded`);
      assert.deepEqual(await seriousViolations(page), [], `${viewport.width}×${viewport.height}`);
    }

    // Search as people type: an image, across the window.
    await page.setViewportSize(VIEWPORTS[0]!);
    await page.getByRole('searchbox', { name: 'Search' }).fill('shop:1.5');
    await page.getByRole('searchbox', { name: 'Search' }).press('Enter');
    await page.waitForURL(/q=shop%3A1\.5/);
    // The table once it holds the search's answer: no row of the ConfigMap, whose events hold no image.
    await page.waitForFunction(() => {
      const rows = [...document.querySelectorAll('#events tbody tr')];
      return rows.length > 0 && !rows.some((row) => row.textContent?.includes('web-config'));
    });
    assert.equal(await page.locator('#events tbody tr', { hasText: '"shop:1.5"' }).count(), 1);
    assert.deepEqual(errors, []);
  });
});

/** Says in the test's output how far each docs picture moved, and whether it was rewritten. */
function pictured(t: TestContext, shot: DocsScreenshot): void {
  const share = `${(shot.differing * 100).toFixed(2)} % of pixels differ`;
  t.diagnostic(`${basename(shot.file)}: ${share}, ${shot.written ? 'rewritten' : 'kept'}`);
}
