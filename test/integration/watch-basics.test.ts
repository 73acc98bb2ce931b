// `kubediff watch -o json` against the real API server, as a user runs it:
// what is reported for creates, edits and deletes, exactly once and in order.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type KubediffProcess, killAll, runKubediff } from '../helpers/cli.ts';
import { testCluster } from '../helpers/cluster-env.ts';
import { describeEvent, matching, type TestEvent } from '../helpers/events.ts';
import { ADMIN_FIELD_MANAGER, adminClient, type KubeAdmin } from '../helpers/kube-admin.ts';

const READY = /watching \d+ resource types?/;
let admin: KubeAdmin;
let kubeconfig: string;

before(() => {
  admin = adminClient();
  kubeconfig = testCluster().kubeconfigPath;
});

after(async () => {
  await killAll();
  await admin.close();
});

async function startWatch(args: string[], env: Record<string, string> = {}): Promise<KubediffProcess> {
  const process = runKubediff(['watch', '--kubeconfig', kubeconfig, '-o', 'json', ...args], {
    checkEvents: true,
    env,
    timeoutMs: 30_000,
  });
  await process.waitForStderr(READY, 90_000);
  return process;
}

function eventsFor(process: KubediffProcess, uid: string): TestEvent[] {
  return process.events.filter((event) => event.object.uid === uid);
}

const configmaps = (namespace: string) => `/api/v1/namespaces/${namespace}/configmaps`;

describe('kubediff watch', () => {
  it('reports a ConfigMap created, edited with the exact changes, and deleted', async () => {
    const namespace = await admin.createNamespace('basics');
    const watch = await startWatch(['-n', namespace]);

    const created = await admin.create(configmaps(namespace), {
      metadata: { name: 'settings' },
      data: { color: 'blue', mode: 'fast' },
    });
    const added = await watch.waitForEvent(
      matching({ type: 'ADDED', resource: 'configmaps', name: 'settings' }),
    );
    assert.equal(added.id, `${created.metadata.uid}:${created.metadata.resourceVersion}`);
    assert.deepEqual(added.object, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      resource: 'configmaps',
      namespace,
      name: 'settings',
      uid: created.metadata.uid,
      resourceVersion: created.metadata.resourceVersion,
    });
    assert.equal(added.cluster, 'kubediff-test');

    const edited = await admin.patch(`${configmaps(namespace)}/settings`, {
      data: { color: 'red', mode: null, size: 'L' },
    });
    const updated = await watch.waitForEvent(matching({ type: 'UPDATED', name: 'settings' }));
    assert.equal(updated.id, `${created.metadata.uid}:${edited.metadata.resourceVersion}`);
    assert.deepEqual(updated.changes, [
      { op: 'replace', path: '/data/color', from: 'blue', to: 'red', manager: ADMIN_FIELD_MANAGER },
      { op: 'add', path: '/data/size', to: 'L', manager: ADMIN_FIELD_MANAGER },
      { op: 'remove', path: '/data/mode', from: 'fast', manager: ADMIN_FIELD_MANAGER },
    ]);

    await admin.delete(`${configmaps(namespace)}/settings`);
    const deleted = await watch.waitForEvent(matching({ type: 'DELETED', name: 'settings' }));
    assert.equal(deleted.offline, undefined);
    assert.deepEqual(
      eventsFor(watch, created.metadata.uid).map((event) => event.type),
      ['ADDED', 'UPDATED', 'DELETED'],
    );

    const stopped = await watch.stop('SIGINT');
    assert.equal(stopped.code, 0);
  });

  it('reports a Deployment scaled from 1 to 3 as one replace of /spec/replicas', async () => {
    const namespace = await admin.createNamespace('scale');
    const watch = await startWatch(['-n', namespace, '-r', 'deploy']);
    await admin.create(`/apis/apps/v1/namespaces/${namespace}/deployments`, {
      metadata: { name: 'web' },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: 'web' } },
        template: {
          metadata: { labels: { app: 'web' } },
          spec: { containers: [{ name: 'web', image: 'shop:1.4' }] },
        },
      },
    });
    await watch.waitForEvent(matching({ type: 'ADDED', resource: 'deployments', name: 'web' }));
    await admin.patch(`/apis/apps/v1/namespaces/${namespace}/deployments/web`, { spec: { replicas: 3 } });
    const scaled = await watch.waitForEvent(matching({ type: 'UPDATED', name: 'web' }));
    assert.deepEqual(scaled.changes, [
      { op: 'replace', path: '/spec/replicas', from: 1, to: 3, manager: ADMIN_FIELD_MANAGER },
    ]);

    // A new sidecar is one add, matched by name, not a cascade of replaces.
    await admin.patch(
      `/apis/apps/v1/namespaces/${namespace}/deployments/web`,
      {
        spec: {
          template: {
            spec: {
              containers: [
                { name: 'proxy', image: 'envoy:1.30' },
                { name: 'web', image: 'shop:1.5' },
              ],
            },
          },
        },
      },
      'merge',
    );
    const sidecar = await watch.waitForEvent(
      (event) => event.type === 'UPDATED' && event.object.name === 'web' && event.id !== scaled.id,
    );
    const paths = sidecar.changes?.map((change) => `${change.op} ${change.path}`);
    assert.deepEqual(paths, [
      'add /spec/template/spec/containers/0',
      'replace /spec/template/spec/containers/1/image',
    ]);
    // Three changes; an OUTCOME of the scale (superseded by the sidecar's rollout) may come too, or not yet.
    const changes = watch.events.filter(
      (event) => event.object.name === 'web' && ['ADDED', 'UPDATED', 'DELETED'].includes(event.type),
    );
    assert.equal(changes.length, 3);
    await watch.stop();
  });

  it('never prints a Secret value, only a short hash that shows it changed', async () => {
    const namespace = await admin.createNamespace('secret');
    const watch = await startWatch(['-n', namespace, '-r', 'secrets']);
    const plain = 'hunter2-plaintext';
    const encoded = Buffer.from(plain).toString('base64');
    await admin.create(`/api/v1/namespaces/${namespace}/secrets`, {
      metadata: {
        name: 'creds',
        annotations: {
          'kubectl.kubernetes.io/last-applied-configuration': JSON.stringify({ data: { password: encoded } }),
        },
      },
      data: { password: encoded },
    });
    await watch.waitForEvent(matching({ type: 'ADDED', name: 'creds' }));
    await admin.patch(`/api/v1/namespaces/${namespace}/secrets/creds`, {
      stringData: { password: 'hunter3-plaintext' },
      metadata: {
        annotations: {
          'kubectl.kubernetes.io/last-applied-configuration': JSON.stringify({
            stringData: { password: 'hunter3-plaintext' },
          }),
        },
      },
    });
    const updated = await watch.waitForEvent(matching({ type: 'UPDATED', name: 'creds' }));
    const changes = updated.changes ?? [];
    assert.deepEqual(
      changes.map((change) => change.path),
      ['/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration', '/data/password'],
    );
    for (const change of changes) {
      assert.match(String(change.from), /^<redacted sha256:[0-9a-f]{8}>$/);
      assert.match(String(change.to), /^<redacted sha256:[0-9a-f]{8}>$/);
      assert.notEqual(change.from, change.to);
    }
    const result = await watch.stop();
    for (const secret of [plain, encoded, 'hunter3', Buffer.from('hunter3-plaintext').toString('base64')]) {
      assert.ok(!result.stdout.includes(secret), `stdout leaks ${secret}`);
      assert.ok(!result.stderr.includes(secret), `stderr leaks ${secret}`);
    }
  });

  it('reports every change exactly once, in order, each UPDATED starting from the previous state', async () => {
    const namespace = await admin.createNamespace('order');
    const watch = await startWatch(['-n', namespace, '-r', 'cm']);
    const created = await admin.create(configmaps(namespace), {
      metadata: { name: 'counter' },
      data: { n: '0' },
    });
    const writes = 25;
    for (let n = 1; n <= writes; n++) {
      await admin.patch(`${configmaps(namespace)}/counter`, { data: { n: String(n) } });
    }
    await admin.delete(`${configmaps(namespace)}/counter`);
    await watch.waitForEvent(matching({ type: 'DELETED', name: 'counter' }));

    const stream = eventsFor(watch, created.metadata.uid);
    assert.deepEqual(
      stream.map((event) => event.type),
      ['ADDED', ...Array.from({ length: writes }, () => 'UPDATED'), 'DELETED'],
      stream.map(describeEvent).join('\n'),
    );
    assert.equal(new Set(stream.map((event) => event.id)).size, stream.length, 'ids are unique');
    let previous = '0';
    for (const event of stream.slice(1, -1)) {
      const [change] = event.changes ?? [];
      assert.deepEqual(event.changes, [
        { op: 'replace', path: '/data/n', from: previous, to: change?.to, manager: ADMIN_FIELD_MANAGER },
      ]);
      assert.equal(Number(change?.to), Number(previous) + 1);
      previous = String(change?.to);
    }
    await watch.stop();
  });

  it('starts with a silent baseline; --initial reports each existing object once, from a streaming list and across LIST pages', async () => {
    const namespace = await admin.createNamespace('baseline');
    const existing = 23;
    for (let index = 0; index < existing; index++) {
      await admin.create(configmaps(namespace), {
        metadata: { name: `old-${index}` },
        data: { index: String(index) },
      });
    }

    // The streaming list (the default; its initial events handed on 5 at a time) and the paged LIST.
    for (const sync of ['stream', 'list']) {
      const env = { KUBEDIFF_LIST_PAGE_SIZE: '5', KUBEDIFF_INITIAL_SYNC: sync };
      const silent = await startWatch(['-n', namespace, '-r', 'configmaps'], env);
      await admin.create(configmaps(namespace), { metadata: { name: `marker-${sync}` } });
      await silent.waitForEvent(matching({ type: 'ADDED', name: `marker-${sync}` }));
      // Only the marker: none of the existing objects is reported.
      assert.deepEqual(
        silent.events.map((event) => `${event.type} ${event.object.name}`),
        [`ADDED marker-${sync}`],
        `${sync}: ${silent.events.map(describeEvent).join('\n')}`,
      );
      await silent.stop();

      const initial = await startWatch(['-n', namespace, '-r', 'configmaps', '--initial'], env);
      const names = initial.events
        .map((event) => event.object.name)
        .filter((name) => name.startsWith('old-'));
      assert.equal(names.length, existing, `${sync}: ${initial.events.map(describeEvent).join('\n')}`);
      assert.equal(new Set(names).size, existing);
      assert.ok(initial.events.every((event) => event.type === 'ADDED' && event.offline === undefined));
      await initial.stop();
    }
  });

  it('drops changes under ignored paths, and updates whose every change is ignored', async () => {
    const namespace = await admin.createNamespace('ignore');
    const watch = await startWatch(['-n', namespace, '-r', 'configmaps', '--ignore', '/data/heartbeat']);
    const created = await admin.create(configmaps(namespace), {
      metadata: { name: 'app' },
      data: { heartbeat: '1', level: 'info' },
    });
    await watch.waitForEvent(matching({ type: 'ADDED', name: 'app' }));
    await admin.patch(`${configmaps(namespace)}/app`, { data: { heartbeat: '2' } });
    await admin.patch(`${configmaps(namespace)}/app`, {
      metadata: { labels: { team: 'a' } },
      data: { heartbeat: '3' },
    });
    const next = await watch.waitForEvent(matching({ type: 'UPDATED', name: 'app' }));
    // The heartbeat-only update produced nothing; the next one shows only what is not ignored.
    assert.deepEqual(next.changes, [
      { op: 'add', path: '/metadata/labels', to: { team: 'a' }, manager: ADMIN_FIELD_MANAGER },
    ]);
    assert.deepEqual(
      eventsFor(watch, created.metadata.uid).map((event) => event.type),
      ['ADDED', 'UPDATED'],
    );
    await watch.stop();
  });

  it('filters by label selector and event type on the way out', async () => {
    const namespace = await admin.createNamespace('filters');
    const watch = await startWatch([
      '-n',
      namespace,
      '-r',
      'configmaps',
      '-l',
      'app=web',
      '--events',
      'added,deleted',
    ]);
    await admin.create(configmaps(namespace), { metadata: { name: 'other', labels: { app: 'db' } } });
    await admin.create(configmaps(namespace), { metadata: { name: 'web', labels: { app: 'web' } } });
    await watch.waitForEvent(matching({ type: 'ADDED', name: 'web' }));
    await admin.patch(`${configmaps(namespace)}/web`, { data: { a: 'b' } });
    await admin.delete(`${configmaps(namespace)}/web`);
    await watch.waitForEvent(matching({ type: 'DELETED', name: 'web' }));
    assert.deepEqual(
      watch.events.map((event) => `${event.type} ${event.object.name}`),
      ['ADDED web', 'DELETED web'],
    );
    await watch.stop();
  });
});
