// Custom resources that come and go while kubediff runs, against the real API server, with the real
// CLI as a user runs it (PRODUCT.md, "Correctness" 5): a new CRD is watched within seconds, its
// deletion reports its objects as DELETED and stops that informer, and re-creating it works again; a
// CRD that gains a default has what it changes reported (docs/event.md, "Changes without a write").
// Every test uses its own API group, so other tests' CRDs and objects are simply filtered out.
import assert from 'node:assert/strict';
import { after, afterEach, type TestContext, test } from 'node:test';
import { type KubediffProcess, killAll, runKubediff, WATCHING } from '../helpers/cli.ts';
import { testCluster } from '../helpers/cluster-env.ts';
import { assertStreamInvariants, describeEvent, type TestEvent } from '../helpers/events.ts';
import { ADMIN_FIELD_MANAGER, adminClient, type KubeObject, uniqueName } from '../helpers/kube-admin.ts';
import { setCRDSchema, shardedSchema } from '../helpers/sharded-crd.ts';

const admin = adminClient();

/** "Within seconds": from the CRD being Established to its first object being reported. */
const PICKED_UP_WITHIN_MS = 10_000;

afterEach(async () => {
  await killAll();
});

after(async () => {
  await admin.close();
});

/** A unique API group with a Widget CRD name; the CRD is deleted after the test, whatever happens. */
function widgetGroup(t: TestContext, prefix: string): { group: string; crdName: string } {
  const group = `${uniqueName(prefix)}.kubediff.test`;
  const crdName = `widgets.${group}`;
  t.after(() => admin.deleteCRD(crdName));
  return { group, crdName };
}

async function namespaceFor(t: TestContext, prefix: string): Promise<string> {
  const ns = await admin.createNamespace(prefix);
  t.after(() => admin.deleteNamespace(ns));
  return ns;
}

function startWatch(args: string[]): KubediffProcess {
  return runKubediff(['watch', '--kubeconfig', testCluster().kubeconfigPath, '-o', 'json', ...args], {
    checkEvents: true,
    timeoutMs: 20_000,
  });
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const id = (object: KubeObject) => `${object.metadata.uid}:${object.metadata.resourceVersion}`;
const sortedChanges = (event: TestEvent) =>
  [...(event.changes ?? [])].sort((a, b) => a.path.localeCompare(b.path));

function widget(group: string, name: string, spec: Record<string, unknown>) {
  return { apiVersion: `${group}/v1`, kind: 'Widget', metadata: { name }, spec };
}

test('a CRD created while kubediff runs is watched within seconds; deleting it reports its objects as DELETED; re-creating it works again', async (t) => {
  const { group, crdName } = widgetGroup(t, 'crd-live');
  const ns = await namespaceFor(t, 'crd-live');
  const widgets = `/apis/${group}/v1/namespaces/${ns}/widgets`;
  const ours = (event: TestEvent) => event.object.apiVersion === `${group}/v1`;
  const ourEvents = () => kd.events.filter(ours);
  const listing = () => `our events:\n${ourEvents().map(describeEvent).join('\n')}`;

  // Cluster-wide, every resource type: what a user runs.
  const kd = startWatch([]);
  await kd.waitForStderr(WATCHING);

  await admin.createCRD(group, 'Widget', 'widgets');
  const establishedAt = Date.now();
  const first = await admin.create(widgets, widget(group, 'w1', { size: 3 }));
  const added = await kd.waitForEvent((event) => event.id === id(first), {
    description: `ADDED of the first Widget (${group})`,
    timeoutMs: PICKED_UP_WITHIN_MS,
  });
  t.diagnostic(`first object of the new CRD reported ${Date.now() - establishedAt} ms after Established`);
  assert.equal(added.type, 'ADDED');
  assert.deepEqual(added.object, {
    apiVersion: `${group}/v1`,
    kind: 'Widget',
    resource: 'widgets',
    namespace: ns,
    name: 'w1',
    uid: first.metadata.uid,
    resourceVersion: first.metadata.resourceVersion,
  });
  assert.match(kd.stderr, new RegExp(`watching new resource type ${escapeRegExp(crdName)}`));

  const changed = await admin.patch(`${widgets}/w1`, { spec: { size: 4, color: 'red' } });
  const updated = await kd.waitForEvent((event) => event.id === id(changed), {
    description: 'UPDATED of the Widget',
  });
  assert.equal(updated.type, 'UPDATED');
  assert.equal(updated.offline, undefined, 'a live update');
  assert.deepEqual(sortedChanges(updated), [
    { op: 'add', path: '/spec/color', to: 'red', manager: ADMIN_FIELD_MANAGER },
    { op: 'replace', path: '/spec/size', from: 3, to: 4, manager: ADMIN_FIELD_MANAGER },
  ]);

  // Deleting the CRD deletes its objects, then the type itself goes away.
  await admin.deleteCRD(crdName, { wait: true });
  const deleted = await kd.waitForEvent(
    (event) => ours(event) && event.type === 'DELETED' && event.object.uid === first.metadata.uid,
    { description: 'DELETED of the Widget when its CRD is deleted' },
  );
  await kd.waitForStderr(new RegExp(`stopped watching ${escapeRegExp(crdName)}`));
  assert.equal(deleted.object.name, 'w1');
  t.diagnostic(`on CRD deletion: ${describeEvent(deleted)}`);

  // Re-created: watched again, and the same name with a new uid is a new object.
  await admin.createCRD(group, 'Widget', 'widgets');
  const again = await admin.create(widgets, widget(group, 'w1', { size: 1 }));
  assert.notEqual(again.metadata.uid, first.metadata.uid);
  const readded = await kd.waitForEvent((event) => event.id === id(again), {
    description: 'ADDED of the Widget after the CRD was re-created',
    timeoutMs: PICKED_UP_WITHIN_MS,
  });
  assert.equal(readded.type, 'ADDED');
  // A marker: every event of the first round has been delivered before it.
  const marker = await admin.patch(`${widgets}/w1`, { spec: { size: 2 } });
  await kd.waitForEvent((event) => event.id === id(marker), { description: 'the marker update' });

  assert.deepEqual(
    ourEvents().map((event) => `${event.type} ${event.object.name} ${event.object.uid}`),
    [
      `ADDED w1 ${first.metadata.uid}`,
      `UPDATED w1 ${first.metadata.uid}`,
      `DELETED w1 ${first.metadata.uid}`,
      `ADDED w1 ${again.metadata.uid}`,
      `UPDATED w1 ${again.metadata.uid}`,
    ],
    listing(),
  );
  assertStreamInvariants(ourEvents());
  // The informer of the deleted type was stopped, not left failing: no warning about it.
  const warnings = kd.stderr.split('\n').filter((line) => line.includes('warning') && line.includes(group));
  assert.deepEqual(warnings, [], 'no warning about the deleted (and re-created) type');
});

test('-r names a custom resource whose CRD does not exist yet: kubediff warns, starts, and reports its objects once the CRD appears', async (t) => {
  const { group, crdName } = widgetGroup(t, 'crd-later');
  const ns = await namespaceFor(t, 'crd-later');
  const widgets = `/apis/${group}/v1/namespaces/${ns}/widgets`;

  const kd = startWatch(['-r', crdName]);
  await kd.waitForStderr(new RegExp(`--resource ${escapeRegExp(crdName)}: not served yet`));
  await kd.waitForStderr(WATCHING);

  await admin.createCRD(group, 'Widget', 'widgets');
  const establishedAt = Date.now();
  const created = await admin.create(widgets, widget(group, 'late', { size: 1 }));
  const added = await kd.waitForEvent((event) => event.id === id(created), {
    description: 'ADDED of the Widget once its CRD exists',
    timeoutMs: PICKED_UP_WITHIN_MS,
  });
  t.diagnostic(`first object reported ${Date.now() - establishedAt} ms after the CRD was Established`);
  const changed = await admin.patch(`${widgets}/late`, { spec: { size: 2 } });
  const updated = await kd.waitForEvent((event) => event.id === id(changed), {
    description: 'UPDATED of the Widget',
  });

  assert.equal(added.type, 'ADDED');
  assert.equal(added.object.kind, 'Widget');
  assert.deepEqual(updated.changes, [
    { op: 'replace', path: '/spec/size', from: 1, to: 2, manager: ADMIN_FIELD_MANAGER },
  ]);
  // -r: nothing else is watched.
  assert.deepEqual(
    kd.events.map((event) => event.id),
    [id(created), id(changed)],
    `events:\n${kd.events.map(describeEvent).join('\n')}`,
  );
});

test('a CRD that gains `default: 1` for spec.shards: each object it now defaults is reported at once (UPDATED, offline, cause schema), and the next write reports only itself', async (t) => {
  const { group, crdName } = widgetGroup(t, 'crd-default');
  const ns = await namespaceFor(t, 'crd-default');
  const shardeds = `/apis/${group}/v1/namespaces/${ns}/widgets`;
  await admin.createCRD(group, 'Widget', 'widgets', { schema: shardedSchema() });
  const plain = await admin.create(shardeds, widget(group, 'plain', { replicas: 1 }));
  const explicit = await admin.create(shardeds, widget(group, 'explicit', { replicas: 1, shards: 3 }));
  const ours = (event: TestEvent) => event.object.apiVersion === `${group}/v1`;

  const kd = startWatch(['-r', crdName, '-n', ns]);
  await kd.waitForStderr(WATCHING);

  // The operator's upgrade: the API server now serves `plain` with shards 1, at the same resourceVersion.
  await setCRDSchema(admin, crdName, shardedSchema(1));
  const served = await admin.waitFor(
    async () => {
      const now = await admin.get(`${shardeds}/plain`);
      return (now.spec as { shards?: number }).shards === 1 ? now : undefined;
    },
    { what: 'the API server to serve the new default' },
  );
  assert.equal(served.metadata.resourceVersion, plain.metadata.resourceVersion, 'no write');

  const defaulted = await kd.waitForEvent((event) => event.object.uid === plain.metadata.uid, {
    description: 'the change of plain without a write',
  });
  assert.equal(defaulted.type, 'UPDATED');
  assert.deepEqual(defaulted.changes, [{ op: 'add', path: '/spec/shards', to: 1 }]);
  assert.equal(defaulted.offline, true);
  assert.equal(defaulted.cause, 'schema');
  assert.equal(defaulted.by, undefined, 'nobody wrote it');
  // At the resourceVersion of the list that found it: not the id of the write it had last.
  assert.notEqual(defaulted.id, id(plain));
  assert.ok(BigInt(defaulted.object.resourceVersion) > BigInt(plain.metadata.resourceVersion));

  // The next write: its `from` side is the state just reported, so it reports only itself.
  const written = await admin.patch(`${shardeds}/plain`, { spec: { replicas: 2 } });
  const update = await kd.waitForEvent((event) => event.id === id(written), { description: 'the write' });
  assert.deepEqual(update.changes, [
    { op: 'replace', path: '/spec/replicas', from: 1, to: 2, manager: ADMIN_FIELD_MANAGER },
  ]);
  assert.equal(update.cause, undefined);
  // A marker: `explicit` (shards set) is served as before, so nothing came for it.
  const marker = await admin.patch(`${shardeds}/explicit`, { spec: { replicas: 2 } });
  await kd.waitForEvent((event) => event.id === id(marker), { description: 'the marker update' });
  assert.deepEqual(
    kd.events.filter(ours).map((event) => `${event.type} ${event.object.name} ${event.cause ?? 'write'}`),
    ['UPDATED plain schema', 'UPDATED plain write', 'UPDATED explicit write'],
    kd.events.filter(ours).map(describeEvent).join('\n'),
  );
  assert.equal(explicit.metadata.uid, marker.metadata.uid);
  assertStreamInvariants(kd.events.filter(ours));
});
