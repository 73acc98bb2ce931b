// Config-file filters against the real API server: `kubediff watch -c file` with a sink filter posting to a
// loopback webhook, namespace globs, short resource names, per-resource ignores, and --explain.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, it } from 'node:test';
import { type KubediffProcess, runKubediff } from '../helpers/cli.ts';
import { clusterSuite } from '../helpers/cluster-suite.ts';
import { changeAt, matching, type TestEvent } from '../helpers/events.ts';
import { HttpReceiver } from '../helpers/http-receiver.ts';
import { ADMIN_FIELD_MANAGER } from '../helpers/kube-admin.ts';

const READY = /watching \d+ resource types?/;
const IMAGE = '/spec/template/spec/containers/0/image';
const suite = clusterSuite('config');
const { namespace } = suite;
const receivers: HttpReceiver[] = [];
suite.closeAfter(() => Promise.all(receivers.map((receiver) => receiver.close())));

let files = 0;
async function configFile(text: string): Promise<string> {
  const file = path.join(suite.dir, `config-${++files}.yaml`);
  await writeFile(file, text);
  return file;
}

async function startWatch(args: string[], env: Record<string, string> = {}): Promise<KubediffProcess> {
  const process = runKubediff(['watch', ...args], { checkEvents: true, env, timeoutMs: 30_000 });
  await process.waitForStderr(READY, 90_000);
  return process;
}

function deployment(name: string, image: string): Record<string, unknown> {
  return {
    metadata: { name, labels: { app: name } },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: 'main', image }] },
      },
    },
  };
}

const deployments = (ns: string) => `/apis/apps/v1/namespaces/${ns}/deployments`;
const configmaps = (ns: string) => `/api/v1/namespaces/${ns}/configmaps`;
const setImage = (image: string) => ({
  spec: { template: { spec: { containers: [{ name: 'main', image }] } } },
});

describe('config file filters against the API server', () => {
  it('a sink that only wants Deployment image changes receives exactly those', async () => {
    const ns = await namespace('cfg-images');
    const hook = await HttpReceiver.start();
    receivers.push(hook);
    const file = await configFile(`
kubeconfig: ${suite.kubeconfig}
namespaces: [${ns}]
resources: [deploy, cm]
output: json
sinks:
  - type: webhook
    name: images
    url: \${IMAGES_HOOK}
    filter:
      resources: [deploy]
      events: [updated]
      only: [/spec/template/spec/containers/*/image]
`);
    const watch = await startWatch(['-c', file], { IMAGES_HOOK: hook.url('/images') });
    assert.match(watch.stderr, /delivering to images/);

    await suite.admin.create(deployments(ns), deployment('web', 'shop:1.0'));
    await suite.admin.create(configmaps(ns), { metadata: { name: 'settings' }, data: { color: 'blue' } });
    await watch.waitForEvent(matching({ type: 'ADDED', name: 'web' }));
    await suite.admin.patch(`${deployments(ns)}/web`, { spec: { replicas: 2 } });
    await watch.waitForEvent((e) => e.object.name === 'web' && changeAt(e, '/spec/replicas') !== undefined);
    await suite.admin.patch(`${deployments(ns)}/web`, setImage('shop:1.1'));
    await suite.admin.patch(`${configmaps(ns)}/settings`, { data: { color: 'red' } });
    await suite.admin.patch(`${deployments(ns)}/web`, { metadata: { labels: { tier: 'front' } } });
    await suite.admin.patch(`${deployments(ns)}/web`, setImage('shop:1.2'));
    const last = await watch.waitForEvent(
      (e) => e.object.name === 'web' && (changeAt(e, IMAGE)?.to as string | undefined) === 'shop:1.2',
    );

    const bodies = await hook.waitUntil(() => {
      const received = hook.jsonBodies() as TestEvent[];
      return received.some((e) => e.id === last.id) ? received : undefined;
    });
    const imageChanges = watch.events.filter(
      (e) => e.type === 'UPDATED' && e.object.kind === 'Deployment' && changeAt(e, IMAGE) !== undefined,
    );
    assert.equal(imageChanges.length, 2, 'stdout saw both image changes');
    assert.deepEqual(
      bodies.map((e) => e.id),
      imageChanges.map((e) => e.id),
      'the webhook got the image changes and nothing else',
    );
    assert.ok(
      watch.events.some((e) => e.object.kind === 'ConfigMap' && e.type === 'UPDATED'),
      'stdout, which has no filter, got the ConfigMap change',
    );
    // Nothing else trickles in afterwards (the controller keeps writing the Deployment's status and
    // annotations): one more image change is a fence, since the sink delivers in order; once the hook has
    // it, it must hold the image changes and nothing else.
    await suite.admin.patch(`${deployments(ns)}/web`, setImage('shop:1.3'));
    const fence = await watch.waitForEvent(
      (e) => e.object.name === 'web' && (changeAt(e, IMAGE)?.to as string | undefined) === 'shop:1.3',
    );
    const fenced = await hook.waitUntil(() => {
      const received = hook.jsonBodies() as TestEvent[];
      return received.some((e) => e.id === fence.id) ? received : undefined;
    });
    assert.deepEqual(
      fenced.map((e) => e.id),
      [...imageChanges.map((e) => e.id), fence.id],
    );
    assert.equal(hook.requests.length, imageChanges.length + 1);
    await watch.stop();
  });

  it('namespace globs (global and per sink), short names, per-resource ignores and --explain', async () => {
    const prefix = `cfg-glob-${Math.random().toString(36).slice(2, 7)}`;
    const a = await namespace(`${prefix}-a`);
    const b = await namespace(`${prefix}-b`);
    const other = await namespace('cfg-other');
    const hook = await HttpReceiver.start();
    receivers.push(hook);
    const file = await configFile(`
kubeconfig: ${suite.kubeconfig}
namespaces: ["${prefix}-*"]
resources: [cm, deploy]
selector: cfg-test
ignore:
  - path: /data/noise
    resources: [cm]
sinks:
  - type: stdout
    format: json
  - type: webhook
    name: not-b
    url: ${hook.url('/x')}
    filter:
      excludeNamespaces: ["*-b-*"]
      resources: [configmap]
`);
    const watch = await startWatch(['-c', file, '--explain']);
    const labels = { 'cfg-test': 'yes' };
    for (const ns of [a, b, other]) {
      await suite.admin.create(configmaps(ns), { metadata: { name: 'c', labels }, data: { color: 'blue' } });
    }
    await watch.waitForEvent(matching({ type: 'ADDED', namespace: a, name: 'c' }));
    await watch.waitForEvent(matching({ type: 'ADDED', namespace: b, name: 'c' }));
    // Only /data/noise changes: ignored for ConfigMaps, so no event at all.
    await suite.admin.patch(`${configmaps(a)}/c`, { data: { noise: '1' } });
    // A real change plus noise: the event carries only the real change.
    await suite.admin.patch(`${configmaps(a)}/c`, { data: { noise: '2', color: 'red' } });
    const updated = await watch.waitForEvent(matching({ type: 'UPDATED', namespace: a, name: 'c' }));
    assert.deepEqual(updated.changes, [
      { op: 'replace', path: '/data/color', from: 'blue', to: 'red', manager: ADMIN_FIELD_MANAGER },
    ]);
    assert.equal(
      watch.events.filter((e) => e.type === 'UPDATED' && e.object.namespace === a).length,
      1,
      'the noise-only change was dropped',
    );
    assert.ok(!watch.events.some((e) => e.object.namespace === other), 'namespace outside the glob');

    const bodies = await hook.waitUntil(() => {
      const received = hook.jsonBodies() as TestEvent[];
      return received.some((e) => e.id === updated.id) ? received : undefined;
    });
    assert.ok(
      bodies.every((e) => e.object.namespace === a),
      'the sink excludes *-b-*',
    );
    const hookUpdated = bodies.find((e) => e.id === updated.id);
    assert.deepEqual(hookUpdated?.changes, updated.changes);

    // --explain: one line per event per sink, and one for what the watch's own rules dropped.
    const explained = await watch.waitForStderr(
      new RegExp(
        `explain: ADDED configmaps ${b}/c \\S+ → not-b: dropped by excludeNamespaces: namespace ${b} is excluded \\(\\*-b-\\*\\)`,
      ),
    );
    assert.ok(explained);
    assert.match(watch.stderr, new RegExp(`explain: ADDED configmaps ${b}/c \\S+ → stdout: delivered`));
    assert.match(
      watch.stderr,
      new RegExp(
        `explain: UPDATED configmaps ${a}/c \\S+ → all sinks: dropped by ignore: every change is ignored \\(/data/noise for cm\\)`,
      ),
    );
    assert.match(
      watch.stderr,
      new RegExp(
        `explain: UPDATED configmaps ${a}/c ${updated.id} → not-b: delivered \\(resource configmap\\)`,
      ),
    );
    await watch.stop();
  });
});
