// Network faults and stopping, against the real API server, with the real CLI as a user runs it
// (PRODUCT.md, "Correctness" 3, 4, 7 and 9). kubediff talks to the API server through a
// fault-injecting TCP proxy; the tests break the link, change the cluster meanwhile, restore the
// link and check that every change is then reported exactly once, with the right `offline` flags.
import assert from 'node:assert/strict';
import { after, afterEach, type TestContext, test } from 'node:test';
import { type FrontRequest, startApiFront } from '../helpers/api-front.ts';
import { type KubediffProcess, killAll, runKubediff, WATCHING } from '../helpers/cli.ts';
import { compactEtcd } from '../helpers/cluster.ts';
import { needsEtcd, testCluster } from '../helpers/cluster-env.ts';
import { assertStreamInvariants, describeEvent, matching, type TestEvent } from '../helpers/events.ts';
import { type FaultProxy, startFaultProxy } from '../helpers/fault-proxy.ts';
import { adminClient, type KubeObject } from '../helpers/kube-admin.ts';

const admin = adminClient();

const DISCONNECTED = /kubediff: warning: .*; reconnecting with backoff\./;
const RECONNECTED = 'kubediff: reconnected: every watch has resumed.';

afterEach(async () => {
  await killAll();
});

after(async () => {
  await admin.close();
});

async function proxyFor(t: TestContext): Promise<FaultProxy> {
  const port = Number(new URL(testCluster().server).port);
  const proxy = await startFaultProxy({ target: { host: '127.0.0.1', port } });
  t.after(async () => {
    await killAll();
    await proxy.close();
  });
  return proxy;
}

/** Starts `kubediff watch -o json` through the proxy and waits for the end of the initial sync. */
async function watchThrough(
  proxy: FaultProxy,
  args: string[],
  env: Record<string, string> = {},
): Promise<KubediffProcess> {
  const kubeconfig = await admin.writeKubeconfig(proxy.url());
  const kd = runKubediff(['watch', '--kubeconfig', kubeconfig, '-o', 'json', ...args], {
    env,
    checkEvents: true,
    timeoutMs: 20_000,
  });
  await kd.waitForStderr(WATCHING);
  return kd;
}

/**
 * What these tests compare: the event without its time, cluster, owner (test/integration/stories.test.ts),
 * who made it (the field managers, whose timestamps vary; who-changed-it has tests of its own in
 * who-changed.test.ts) and what it reaches (usedBy: test/integration/used-by.test.ts).
 */
function essence(event: TestEvent): Record<string, unknown> {
  const { time: _time, cluster: _cluster, owner: _owner, by: _by, usedBy: _usedBy, ...rest } = event;
  if (!rest.changes) return rest;
  return { ...rest, changes: rest.changes.map(({ manager: _manager, ...change }) => change) };
}

const id = (object: KubeObject) => `${object.metadata.uid}:${object.metadata.resourceVersion}`;

function objectRef(object: KubeObject, resource: string, kind: string) {
  return {
    apiVersion: 'v1',
    kind,
    resource,
    namespace: object.metadata.namespace,
    name: object.metadata.name,
    uid: object.metadata.uid,
    resourceVersion: object.metadata.resourceVersion,
  };
}

const configMapRef = (object: KubeObject) => objectRef(object, 'configmaps', 'ConfigMap');

test('changes made while every connection is cut and refused are each reported once after reconnecting', async (t) => {
  const ns = await admin.namespaceFor(t, 'faults-cut', { settled: true });
  const configMaps = `/api/v1/namespaces/${ns}/configmaps`;
  const b0 = await admin.create(configMaps, { metadata: { name: 'b' }, data: { k: '1' } });
  const c0 = await admin.create(configMaps, { metadata: { name: 'c' }, data: { k: '1' } });

  const proxy = await proxyFor(t);
  const kd = await watchThrough(proxy, ['-n', ns], { KUBEDIFF_MAX_BACKOFF: '1s' });

  // A live change first: the watches are up and b's last reported state is k=2.
  const b1 = await admin.patch(`${configMaps}/b`, { data: { k: '2' } });
  await kd.waitForEvent(matching({ type: 'UPDATED', name: 'b' }), { description: 'the live update of b' });

  proxy.refuse(true);
  proxy.cutAll();
  await kd.waitForStderr(DISCONNECTED);
  const a0 = await admin.create(configMaps, { metadata: { name: 'a' }, data: { k: '1' } });
  const b2 = await admin.patch(`${configMaps}/b`, { data: { k: '3' } });
  await admin.delete(`${configMaps}/c`);
  assert.equal(kd.events.length, 1, 'nothing can arrive while the API server is unreachable');
  proxy.refuse(false);

  await kd.waitForStderr(RECONNECTED);
  await kd.waitForEvent(matching({ type: 'DELETED', name: 'c' }), { description: 'the deletion of c' });
  // A marker after the recovery: everything before it in the watch has been delivered.
  const a1 = await admin.patch(`${configMaps}/a`, { data: { k: '2' } });
  await kd.waitForEvent((event) => event.id === id(a1), { description: 'the marker update of a' });

  // One configmaps watch, resumed from its last resourceVersion: live events (no `offline`), in order.
  const deleted = kd.events[3];
  assert.deepEqual(
    kd.events.map(essence),
    [
      {
        id: id(b1),
        type: 'UPDATED',
        object: configMapRef(b1),
        changes: [{ op: 'replace', path: '/data/k', from: '1', to: '2' }],
      },
      { id: id(a0), type: 'ADDED', object: configMapRef(a0) },
      {
        id: id(b2),
        type: 'UPDATED',
        object: configMapRef(b2),
        changes: [{ op: 'replace', path: '/data/k', from: '2', to: '3' }],
      },
      {
        id: `${c0.metadata.uid}:${deleted?.object.resourceVersion}`,
        type: 'DELETED',
        object: { ...configMapRef(c0), resourceVersion: deleted?.object.resourceVersion },
      },
      {
        id: id(a1),
        type: 'UPDATED',
        object: configMapRef(a1),
        changes: [{ op: 'replace', path: '/data/k', from: '1', to: '2' }],
      },
    ],
    `the events were:\n${kd.events.map(describeEvent).join('\n')}`,
  );
  // The deletion happened after b's second update.
  assert.ok(Number(deleted?.object.resourceVersion) > Number(b2.metadata.resourceVersion));
  assertStreamInvariants(kd.events);
  assert.equal(b0.metadata.uid, b1.metadata.uid);
  assert.equal(kd.stderr.match(new RegExp(DISCONNECTED.source, 'g'))?.length, 1, 'one warning per outage');
});

test('a dead (black-holed) connection is noticed soon after the idle timeout, and the change made meanwhile is reported once', async (t) => {
  const ns = await admin.namespaceFor(t, 'faults-dead', { settled: true });
  const configMaps = `/api/v1/namespaces/${ns}/configmaps`;
  const d0 = await admin.create(configMaps, { metadata: { name: 'd' }, data: { k: '1' } });

  const proxy = await proxyFor(t);
  const idleTimeoutMs = 3_000;
  const kd = await watchThrough(proxy, ['-n', ns, '-r', 'configmaps'], {
    KUBEDIFF_WATCH_IDLE_TIMEOUT: `${idleTimeoutMs}ms`,
    KUBEDIFF_MAX_BACKOFF: '1s',
    // The API server sends nothing on a quiet watch for a long while; asking it to end each watch
    // after a second keeps a healthy link from ever being silent for the idle timeout.
    KUBEDIFF_WATCH_TIMEOUT: '1s',
  });

  // Healthy, if quiet, for longer than the idle timeout: no false alarm.
  const d1 = await admin.patch(`${configMaps}/d`, { data: { k: '2' } });
  await kd.waitForEvent(matching({ type: 'UPDATED', name: 'd' }), { description: 'the live update of d' });
  await kd.expectNoEvent(() => true, idleTimeoutMs + 1_500, { description: 'event while nothing changes' });
  // A later change arrives live on the same watch: it was never taken for dead and replaced.
  const sentinel = await admin.create(configMaps, { metadata: { name: 'after-the-quiet' }, data: {} });
  const sentinelEvent = await kd.waitForEvent((event) => event.id === id(sentinel), {
    description: 'the change after the quiet',
  });
  assert.equal(sentinelEvent.offline, undefined);
  assert.doesNotMatch(kd.stderr, /warning/, 'a healthy link was taken for a dead one');

  proxy.blackhole(true);
  const blackholedAt = Date.now();
  // Bounded: the idle timeout plus a little.
  await kd.waitForStderr(DISCONNECTED, idleTimeoutMs + 4_000);
  const noticedAfterMs = Date.now() - blackholedAt;
  // A streaming watch goes silent; one that was just being (re)opened gets no response.
  assert.match(kd.stderr, /went silent|no response within the timeout/);

  const d2 = await admin.patch(`${configMaps}/d`, { data: { k: '3' } });
  proxy.blackhole(false);
  await kd.waitForStderr(RECONNECTED, 20_000);
  await kd.waitForEvent((event) => event.id === id(d2), {
    description: 'the update made while the link was dead',
    timeoutMs: 20_000,
  });
  const d3 = await admin.patch(`${configMaps}/d`, { data: { k: '4' } });
  await kd.waitForEvent((event) => event.id === id(d3), { description: 'the marker update' });

  assert.deepEqual(
    kd.events.filter((event) => event.object.name === 'd').map(essence),
    [d1, d2, d3].map((object, index) => ({
      id: id(object),
      type: 'UPDATED',
      object: configMapRef(object),
      changes: [{ op: 'replace', path: '/data/k', from: String(index + 1), to: String(index + 2) }],
    })),
    `the events were:\n${kd.events.map(describeEvent).join('\n')}`,
  );
  assertStreamInvariants(kd.events);
  assert.equal(d0.metadata.uid, d1.metadata.uid);
  t.diagnostic(`dead connection noticed after ${noticedAfterMs} ms`);
});

const podTemplate = (name: string, image = 'busybox:1.36') => ({
  apiVersion: 'v1',
  kind: 'PodTemplate',
  metadata: { name },
  template: {
    metadata: { labels: { app: name } },
    spec: { containers: [{ name: 'main', image }] },
  },
});

const podTemplateRef = (object: KubeObject) => objectRef(object, 'podtemplates', 'PodTemplate');

test('a paged LIST whose continue token expires (etcd compacted between its pages) is read whole, once, said in the log', {
  skip: needsEtcd(),
}, async (t) => {
  const ns = await admin.namespaceFor(t, 'faults-list-expired', { settled: true });
  const templates = `/api/v1/namespaces/${ns}/podtemplates`;
  const names = Array.from({ length: 12 }, (_, n) => `tpl-${String(n).padStart(2, '0')}`);
  for (const name of names) await admin.create(templates, podTemplate(name));
  const front = await startApiFront();
  t.after(() => front.close());
  // The second page of the LIST (it carries a continue token) waits at the front until the test lets it.
  const collection = (request: FrontRequest) => !request.watch && request.path === templates;
  const secondPage = front.hold((request) => collection(request) && request.query.has('continue'));
  const kd = runKubediff(
    [
      'watch',
      '--kubeconfig',
      await admin.writeKubeconfig(front.url),
      '-o',
      'json',
      '-n',
      ns,
      '-r',
      'podtemplates',
      '--initial',
    ],
    { checkEvents: true, env: { KUBEDIFF_INITIAL_SYNC: 'list', KUBEDIFF_LIST_PAGE_SIZE: '5' } },
  );
  await secondPage.held;
  // Between the pages: an object of the first page changed, one deleted, a new one; then etcd
  // compacts past the first page's resourceVersion (podtemplates are served straight from etcd).
  const changed = await admin.update(`${templates}/tpl-00`, podTemplate('tpl-00', 'busybox:1.37'));
  const deleted = await admin.get(`${templates}/tpl-02`);
  await admin.delete(`${templates}/tpl-02`);
  const added = await admin.create(templates, podTemplate('tpl-new'));
  await compactEtcd(testCluster());
  secondPage.release();

  await kd.waitForStderr(
    /podtemplates in namespace \S+: its LIST outlived etcd's compaction: the continue token expired after 1 page \(5 objects, [^)]+\); reading the whole list in one request instead, as client-go's pager does\./,
  );
  await kd.waitForStderr(WATCHING);
  // One request for the whole list (no limit, no continue token), and the first page was not asked again.
  const lists = front.requests.filter(collection);
  assert.deepEqual(
    lists.map((request) => [request.query.get('limit'), request.query.has('continue')]),
    [
      ['5', false],
      ['5', true],
      [null, false],
    ],
  );
  // A live change after the sync: everything the list reports has been reported by then.
  await admin.patch(`${templates}/tpl-01`, { metadata: { labels: { marker: '1' } } });
  await kd.waitForEvent(matching({ type: 'UPDATED', name: 'tpl-01' }));
  const listing = `the events were:\n${kd.events.map(describeEvent).join('\n')}`;
  // --initial: every object once; what changed in the list's gap, as a relist reports it.
  const addedNames = kd.events.filter((event) => event.type === 'ADDED').map((event) => event.object.name);
  assert.deepEqual(addedNames.sort(), [...names, 'tpl-new'].sort(), listing);
  const gap = kd.events.filter((event) => event.type !== 'ADDED' && event.object.name !== 'tpl-01');
  assert.deepEqual(
    gap.map((event) => [
      event.type,
      event.object.name,
      event.offline ?? false,
      event.finalStateUnknown ?? false,
    ]),
    [
      ['UPDATED', 'tpl-00', true, false],
      ['DELETED', 'tpl-02', true, true],
    ],
    listing,
  );
  assert.equal(gap[0]?.id, id(changed));
  assert.equal(gap[1]?.object.uid, deleted.metadata.uid);
  assert.ok(
    kd.events.some((event) => event.id === id(added)),
    listing,
  );
  assertStreamInvariants(kd.events);
});

test('after 410 Gone, kubediff relists and reports exactly what changed in the gap, offline', {
  skip: needsEtcd(),
}, async (t) => {
  const ns = await admin.namespaceFor(t, 'faults-gone', { settled: true });
  const templates = `/api/v1/namespaces/${ns}/podtemplates`;
  const same = await admin.create(templates, podTemplate('pt-same'));
  const update0 = await admin.create(templates, podTemplate('pt-update'));
  const doomed = await admin.create(templates, podTemplate('pt-delete'));
  const recreate0 = await admin.create(templates, podTemplate('pt-recreate'));

  const proxy = await proxyFor(t);
  const kd = await watchThrough(proxy, ['-r', 'podtemplates', '-n', ns], { KUBEDIFF_MAX_BACKOFF: '1s' });

  proxy.refuse(true);
  proxy.cutAll();
  await kd.waitForStderr(DISCONNECTED);
  const added = await admin.create(templates, podTemplate('pt-new'));
  const updated = await admin.update(`${templates}/pt-update`, podTemplate('pt-update', 'busybox:1.37'));
  await admin.delete(`${templates}/pt-delete`);
  await admin.delete(`${templates}/pt-recreate`);
  const recreate1 = await admin.create(templates, podTemplate('pt-recreate'));
  // podtemplates are served straight from etcd: once compacted, resuming the watch is a real 410.
  await compactEtcd(testCluster());
  assert.equal(kd.events.length, 0, 'a silent baseline, and nothing while unreachable');
  proxy.refuse(false);

  await kd.waitForStderr(RECONNECTED);
  const gone = matching({ type: 'DELETED', name: 'pt-delete' });
  await kd.waitForEvent(gone, { description: 'the offline deletion of pt-delete' });
  // A marker on the unchanged object: it arrives live, and after the relist's events.
  const marker = await admin.patch(`${templates}/pt-same`, { metadata: { labels: { marker: '1' } } });
  const markerEvent = await kd.waitForEvent(matching({ type: 'UPDATED', name: 'pt-same' }), {
    description: 'the marker update of pt-same',
  });

  const deletedEvent = kd.events.find(gone);
  const recreatedDeletion = kd.events.find(matching({ type: 'DELETED', uid: recreate0.metadata.uid }));
  const expectedGap = [
    { id: id(added), type: 'ADDED', object: podTemplateRef(added), offline: true },
    {
      id: id(updated),
      type: 'UPDATED',
      object: podTemplateRef(updated),
      changes: [
        {
          op: 'replace',
          path: '/template/spec/containers/0/image',
          from: 'busybox:1.36',
          to: 'busybox:1.37',
        },
      ],
      offline: true,
    },
    {
      id: `${doomed.metadata.uid}:${deletedEvent?.object.resourceVersion}`,
      type: 'DELETED',
      object: { ...podTemplateRef(doomed), resourceVersion: deletedEvent?.object.resourceVersion },
      offline: true,
      finalStateUnknown: true,
    },
    {
      id: `${recreate0.metadata.uid}:${recreatedDeletion?.object.resourceVersion}`,
      type: 'DELETED',
      object: { ...podTemplateRef(recreate0), resourceVersion: recreatedDeletion?.object.resourceVersion },
      offline: true,
      finalStateUnknown: true,
    },
    { id: id(recreate1), type: 'ADDED', object: podTemplateRef(recreate1), offline: true },
  ];
  const listing = `the events were:\n${kd.events.map(describeEvent).join('\n')}`;
  const byId = (a: Record<string, unknown>, b: Record<string, unknown>) =>
    String(a.id).localeCompare(String(b.id));
  // Everything but the marker came from the relist; their order among objects is not part of the contract.
  assert.deepEqual(kd.events.slice(0, -1).map(essence).sort(byId), expectedGap.sort(byId), listing);
  assert.deepEqual(
    essence(markerEvent),
    {
      id: id(marker),
      type: 'UPDATED',
      object: podTemplateRef(marker),
      // The PodTemplate itself had no labels (its template's pods do).
      changes: [{ op: 'add', path: '/metadata/labels', to: { marker: '1' } }],
    },
    listing,
  );
  assert.equal(kd.events.at(-1), markerEvent, listing);
  // Per object, the old one's end comes before the new one's start.
  const recreateTypes = kd.events.filter(matching({ name: 'pt-recreate' })).map((event) => event.type);
  assert.deepEqual(recreateTypes, ['DELETED', 'ADDED'], listing);
  assert.equal(same.metadata.uid, marker.metadata.uid);
  assert.equal(update0.metadata.uid, updated.metadata.uid);
  assertStreamInvariants(kd.events);
});

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  test(`${signal} stops kubediff cleanly: exit code 0, promptly, every connection closed`, async (t) => {
    const ns = await admin.namespaceFor(t, `faults-${signal.toLowerCase()}`, { settled: true });
    const proxy = await proxyFor(t);
    const kd = await watchThrough(proxy, ['-n', ns]);
    assert.ok(proxy.connections > 0, 'kubediff holds connections while it watches');

    const started = Date.now();
    const result = await kd.stop(signal, 5_000);
    const tookMs = Date.now() - started;
    assert.equal(result.signal, null, `ended by ${result.signal} rather than exiting`);
    assert.equal(result.code, 0, `exit code; stderr:\n${result.stderr}`);
    assert.doesNotMatch(result.stderr, /warning|error/i, 'a clean stop says nothing alarming');
    assert.equal(result.stdout, '', 'nothing changed, nothing reported');
    await proxy.waitForIdle(2_000);
    t.diagnostic(`${signal}: exited after ${tookMs} ms`);
  });
}

test('a stop while reconnecting (backing off after losing the API server) is just as clean', async (t) => {
  const ns = await admin.namespaceFor(t, 'faults-stop-offline', { settled: true });
  const proxy = await proxyFor(t);
  const kd = await watchThrough(proxy, ['-n', ns], { KUBEDIFF_MAX_BACKOFF: '1s' });
  proxy.refuse(true);
  proxy.cutAll();
  await kd.waitForStderr(DISCONNECTED);

  const result = await kd.stop('SIGTERM', 5_000);
  assert.equal(result.code, 0, `exit code; stderr:\n${result.stderr}`);
  await proxy.waitForIdle(2_000);
});
