// Proves the test harness: the API server, etcd and the controller manager the other integration
// tests rely on really do what a cluster does.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { compactEtcd } from '../helpers/cluster.ts';
import { needsEtcd, needsNobody, testCluster } from '../helpers/cluster-env.ts';
import { adminClient, type KubeObject, uniqueName } from '../helpers/kube-admin.ts';

const admin = adminClient();
const group = `${uniqueName('harness')}.kubediff.test`;
const crdName = `widgets.${group}`;

let widgetCRD: Promise<KubeObject> | undefined;
/** The Widget CRD, created once for the tests of this file. */
const widgets = () => {
  widgetCRD ??= admin.createCRD(group, 'Widget', 'widgets', { namespaced: true });
  return widgetCRD;
};

after(async () => {
  await admin.deleteCRD(crdName);
  await admin.close();
});

const podTemplate = (name: string) => ({
  apiVersion: 'v1',
  kind: 'PodTemplate',
  metadata: { name },
  template: {
    metadata: { labels: { app: name } },
    spec: { containers: [{ name: 'main', image: 'busybox:1.36' }] },
  },
});

test('a namespace, a ConfigMap, a CRD and one of its objects can be created, changed and read', async () => {
  const ns = await admin.createNamespace('harness');
  const configMaps = `/api/v1/namespaces/${ns}/configmaps`;
  const created = await admin.create(configMaps, { metadata: { name: 'settings' }, data: { color: 'blue' } });
  assert.equal(created.metadata.namespace, ns);
  assert.ok(created.metadata.uid);

  const merged = await admin.patch(`${configMaps}/settings`, { data: { size: 'L' } });
  assert.deepEqual(merged.data, { color: 'blue', size: 'L' });
  const strategic = await admin.patch(
    `${configMaps}/settings`,
    { metadata: { labels: { tier: 'web' } } },
    'strategic',
  );
  assert.equal(strategic.metadata.labels?.tier, 'web');
  const updated = await admin.update(`${configMaps}/settings`, { ...strategic, data: { color: 'red' } });
  assert.deepEqual(updated.data, { color: 'red' });
  assert.notEqual(updated.metadata.resourceVersion, created.metadata.resourceVersion);
  const list = await admin.list(configMaps, { labelSelector: 'tier=web' });
  assert.deepEqual(
    list.items.map((item) => item.metadata.name),
    ['settings'],
  );

  const crd = await widgets();
  assert.equal(crd.metadata.name, crdName);
  const widgetsPath = `/apis/${group}/v1/namespaces/${ns}/widgets`;
  await admin.create(widgetsPath, {
    apiVersion: `${group}/v1`,
    kind: 'Widget',
    metadata: { name: 'w1' },
    spec: { size: 3 },
  });
  const widget = await admin.get(`${widgetsPath}/w1`);
  assert.deepEqual(widget.spec, { size: 3 });
  assert.equal(widget.kind, 'Widget');

  await admin.deleteNamespace(ns);
});

test('a user without rights gets 403 Forbidden, but may do discovery', { skip: needsNobody() }, async () => {
  const nobody = admin.as(testCluster().nobodyToken as string);
  try {
    const denied = await nobody.request('GET', '/api/v1/namespaces/default/configmaps');
    assert.equal(denied.status, 403);
    assert.equal((denied.body as { reason?: string }).reason, 'Forbidden');
    const discovery = await nobody.request('GET', '/api');
    assert.equal(discovery.status, 200);
  } finally {
    await nobody.close();
  }
});

test('deleting a namespace completes: its objects (custom ones too) are removed, then the namespace itself', async () => {
  const ns = await admin.createNamespace('harness-delete');
  await admin.create(`/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'doomed' } });
  await admin.create(`/api/v1/namespaces/${ns}/podtemplates`, podTemplate('doomed'));
  await widgets();
  await admin.create(`/apis/${group}/v1/namespaces/${ns}/widgets`, {
    apiVersion: `${group}/v1`,
    kind: 'Widget',
    metadata: { name: 'doomed' },
  });
  // The controller manager gives every namespace a `default` ServiceAccount.
  await admin.waitFor(() => admin.tryGet(`/api/v1/namespaces/${ns}/serviceaccounts/default`), {
    what: `the default ServiceAccount in ${ns}`,
  });

  await admin.delete(`/api/v1/namespaces/${ns}`);
  const terminating = await admin.tryGet(`/api/v1/namespaces/${ns}`);
  assert.equal(
    (terminating?.status as { phase?: string } | undefined)?.phase ?? 'gone',
    terminating ? 'Terminating' : 'gone',
  );
  await admin.waitFor(async () => (await admin.tryGet(`/api/v1/namespaces/${ns}`)) === undefined, {
    timeoutMs: 60_000,
    what: `namespace ${ns} to be deleted by the namespace controller`,
  });
  for (const collection of [
    `/api/v1/namespaces/${ns}/configmaps`,
    `/apis/${group}/v1/namespaces/${ns}/widgets`,
  ]) {
    const leftovers = await admin.list(collection);
    assert.deepEqual(leftovers.items, [], collection);
  }
});

test('a watch from a resourceVersion older than an etcd compaction gets 410 Gone', {
  skip: needsEtcd(),
}, async () => {
  const ns = await admin.createNamespace('harness-gone');
  const templates = `/api/v1/namespaces/${ns}/podtemplates`;
  const created = await admin.create(templates, podTemplate('old'));
  const oldVersion = created.metadata.resourceVersion;
  let latest: KubeObject = created;
  for (const revision of ['1', '2', '3']) {
    latest = await admin.patch(`${templates}/old`, { metadata: { labels: { revision } } });
  }

  // Before the compaction, the old resourceVersion still replays the history.
  const replay = await admin.watch(templates, { resourceVersion: oldVersion });
  assert.equal(replay.status, 200);
  const first = await nextEvent(replay.events);
  replay.close();
  assert.equal(first?.type, 'MODIFIED');

  const compacted = await compactEtcd(testCluster());
  assert.ok(compacted > Number(latest.metadata.resourceVersion));

  // A list at exactly that old resourceVersion is refused outright.
  const oldList = await admin.request('GET', templates, {
    query: { resourceVersion: oldVersion, resourceVersionMatch: 'Exact' },
  });
  assert.equal(oldList.status, 410);

  // podtemplates have no watch cache (--watch-cache-sizes=podtemplates#0): the watch goes to etcd,
  // which refuses a compacted revision. The API server reports that as 410, either as the HTTP
  // status or, once the stream has started, as an ERROR event carrying a Status with code 410.
  const expired = await admin.watch(templates, { resourceVersion: oldVersion });
  if (expired.status === 410) {
    assert.equal(expired.error?.reason, 'Expired');
  } else {
    assert.equal(expired.status, 200);
    const event = await nextEvent(expired.events);
    expired.close();
    assert.equal(event?.type, 'ERROR');
    const status = event?.object as unknown as { code?: number; reason?: string };
    assert.equal(status.code, 410);
    assert.match(String(status.reason), /^(Expired|Gone)$/);
  }

  // Watching from the compacted revision itself works (an object's resourceVersion from before the
  // compaction may expire too: other writers move etcd's revision on, see compactEtcd).
  const fresh = await admin.watch(templates, { resourceVersion: String(compacted) });
  assert.equal(fresh.status, 200);
  await admin.patch(`${templates}/old`, { metadata: { labels: { revision: '4' } } });
  const change = await nextEvent(fresh.events);
  fresh.close();
  assert.equal(change?.type, 'MODIFIED');
  assert.equal(change?.object.metadata.labels?.revision, '4');

  await admin.deleteNamespace(ns);
});

async function nextEvent<T>(events: AsyncIterable<T>, timeoutMs = 10_000): Promise<T | undefined> {
  const iterator = events[Symbol.asyncIterator]();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no watch event within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    const result = await Promise.race([iterator.next(), timeout]);
    return result.done ? undefined : result.value;
  } finally {
    clearTimeout(timer);
  }
}
