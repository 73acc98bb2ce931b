// --state against the real API server (issue 8, docs/state.md): kubediff is stopped, the cluster changes,
// kubediff starts again with the same state file and reports exactly what changed while it was down,
// each event offline, nothing for unchanged objects, and no id it had already reported. Then
// `kubediff history` on that file; a kill -9 during a burst; damaged and foreign files.
// Each test has its own namespace and API groups; -n keeps other tests' objects out.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { after, afterEach, type TestContext, test } from 'node:test';
import { SqliteDatabase } from '../../src/state/sqlite-database.ts';
import { SCHEMA_VERSION } from '../../src/state/sqlite-migrations.ts';
import {
  type KubediffProcess,
  killAll,
  runKubediff,
  runKubediffToCompletion,
  WATCHING,
  watchArgs,
} from '../helpers/cli.ts';
import { testCluster } from '../helpers/cluster-env.ts';
import { describeEvent, type TestEvent } from '../helpers/events.ts';
import { gatedFirstRun } from '../helpers/gated-first-run.ts';
import { HttpReceiver } from '../helpers/http-receiver.ts';
import {
  ADMIN_FIELD_MANAGER,
  adminClient,
  type KubeObject,
  uniqueName,
  waitFor,
} from '../helpers/kube-admin.ts';
import { SERVING, scrapeMetrics } from '../helpers/metrics.ts';
import { nonEmpty } from '../helpers/non-empty.ts';
import { setCRDSchema, shardedSchema } from '../helpers/sharded-crd.ts';

const admin = adminClient();
const dir = mkdtempSync(join(tmpdir(), 'kubediff-state-it-'));

afterEach(async () => {
  await killAll();
});
after(async () => {
  await admin.close();
  rmSync(dir, { recursive: true, force: true });
});

async function namespaceFor(t: TestContext, prefix: string): Promise<string> {
  const ns = await admin.createNamespace(prefix);
  t.after(() => admin.deleteNamespace(ns));
  return ns;
}

function startWatch(ns: string, state: string, extra: string[] = []): KubediffProcess {
  return runKubediff(watchArgs(ns, [], '--state', state, ...extra), { checkEvents: true, timeoutMs: 30_000 });
}

async function history(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return runKubediffToCompletion(['history', ...args], { timeoutMs: 20_000 });
}

const id = (object: KubeObject) => `${object.metadata.uid}:${object.metadata.resourceVersion}`;
const cmPath = (ns: string, name = '') => `/api/v1/namespaces/${ns}/configmaps${name ? `/${name}` : ''}`;
const inNamespace = (ns: string) => (event: TestEvent) => event.object.namespace === ns;
const describeAll = (events: readonly TestEvent[]) => events.map(describeEvent).join('\n  ');

/** The rows of a query on a state file, read as `kubediff history` reads it: read-only, beside a watch. */
function readState(path: string, sql: string): Record<string, string>[] {
  const raw = new DatabaseSync(path, { readOnly: true });
  try {
    return raw.prepare(sql).all() as Record<string, string>[];
  } finally {
    raw.close();
  }
}

async function widgetCRD(t: TestContext, prefix: string): Promise<{ group: string; crd: string }> {
  const group = `${uniqueName(prefix)}.kubediff.test`;
  const crd = `widgets.${group}`;
  t.after(() => admin.deleteCRD(crd));
  await admin.createCRD(group, 'Widget', 'widgets');
  return { group, crd };
}

async function createWidget(group: string, ns: string, name: string): Promise<KubeObject> {
  const path = `/apis/${group}/v1/namespaces/${ns}/widgets`;
  // A fresh CRD's API can take a moment to accept objects after Established.
  return admin.waitFor(
    () =>
      admin
        .create(path, { apiVersion: `${group}/v1`, kind: 'Widget', metadata: { name }, spec: { size: 1 } })
        .catch(() => undefined),
    { timeoutMs: 20_000, what: `widget ${name} to be created` },
  );
}

test('a restart with the same --state reports exactly what changed while kubediff was down', async (t) => {
  const ns = await namespaceFor(t, 'state-catchup');
  const state = join(dir, `${ns}.db`);
  const old = await widgetCRD(t, 'state-old');
  const oldWidget = await createWidget(old.group, ns, 'w-old');
  const keep = await admin.create(cmPath(ns), { metadata: { name: 'keep' }, data: { k: 'same' } });
  await admin.create(cmPath(ns), { metadata: { name: 'change' }, data: { k: '1' } });
  const gone = await admin.create(cmPath(ns), { metadata: { name: 'gone' }, data: { k: 'x' } });
  const recreateOld = await admin.create(cmPath(ns), { metadata: { name: 'recreate' }, data: { v: 'old' } });

  // Run 1: a silent baseline, then two live changes.
  const first = startWatch(ns, state);
  await first.waitForStderr(WATCHING);
  const live = await admin.create(cmPath(ns), { metadata: { name: 'live' }, data: { k: 'v' } });
  await first.waitForEvent((e) => e.id === id(live), { description: 'live ADDED' });
  const changed1 = await admin.patch(cmPath(ns, 'change'), { data: { k: '1b' } });
  await first.waitForEvent((e) => e.id === id(changed1), { description: 'live UPDATED of change' });
  const firstExit = await first.stop();
  assert.equal(firstExit.code, 0, firstExit.stderr);
  const firstEvents = first.events.filter(inNamespace(ns));
  assert.ok(
    firstEvents.every((e) => !e.offline),
    `run 1 reports nothing offline:\n  ${describeAll(firstEvents)}`,
  );

  // While down: change, delete, delete and re-create under the same name, create, a new CRD with an
  // object, and a CRD deleted with its object.
  const changed2 = await admin.patch(cmPath(ns, 'change'), { data: { k: '2' } });
  await admin.delete(cmPath(ns, 'gone'));
  await admin.delete(cmPath(ns, 'recreate'));
  await admin.waitFor(async () => (await admin.tryGet(cmPath(ns, 'recreate'))) === undefined);
  const recreateNew = await admin.create(cmPath(ns), { metadata: { name: 'recreate' }, data: { v: 'new' } });
  const fresh = await admin.create(cmPath(ns), { metadata: { name: 'fresh' }, data: { k: 'f' } });
  const added = await widgetCRD(t, 'state-new');
  const newWidget = await createWidget(added.group, ns, 'w-new');
  await admin.deleteCRD(old.crd, { wait: true });

  // Run 2: the catch-up.
  const second = startWatch(ns, state);
  await second.waitForStderr(/catching up from /);
  await second.waitForStderr(WATCHING);
  const expected: { what: string; match: (e: TestEvent) => boolean }[] = [
    {
      what: 'UPDATED change (offline, exact diff)',
      match: (e) =>
        e.type === 'UPDATED' &&
        e.id === id(changed2) &&
        JSON.stringify(e.changes) ===
          JSON.stringify([
            { op: 'replace', path: '/data/k', from: '1b', to: '2', manager: ADMIN_FIELD_MANAGER },
          ]),
    },
    {
      what: 'DELETED gone (finalStateUnknown)',
      match: (e) =>
        e.type === 'DELETED' && e.object.uid === gone.metadata.uid && e.finalStateUnknown === true,
    },
    {
      what: 'DELETED recreate, old uid (finalStateUnknown)',
      match: (e) =>
        e.type === 'DELETED' && e.object.uid === recreateOld.metadata.uid && e.finalStateUnknown === true,
    },
    { what: 'ADDED recreate, new uid', match: (e) => e.type === 'ADDED' && e.id === id(recreateNew) },
    { what: 'ADDED fresh', match: (e) => e.type === 'ADDED' && e.id === id(fresh) },
    {
      what: 'ADDED w-new (CRD created while down)',
      match: (e) => e.type === 'ADDED' && e.id === id(newWidget),
    },
    {
      what: 'DELETED w-old (CRD deleted while down)',
      match: (e) =>
        e.type === 'DELETED' && e.object.uid === oldWidget.metadata.uid && e.finalStateUnknown === true,
    },
  ];
  for (const { what, match } of expected) await second.waitForEvent(match, { description: what });
  // The catch-up is reported during the initial sync, before `watching …`: once stopped (its output
  // read to the end), run 2 has said all it would about the time it was down.
  const secondExit = await second.stop();
  assert.equal(secondExit.code, 0, secondExit.stderr);
  const secondEvents = second.events.filter(inNamespace(ns));
  const listing = describeAll(secondEvents);
  assert.equal(secondEvents.length, expected.length, `exactly the catch-up events:\n  ${listing}`);
  for (const { what, match } of expected) {
    assert.equal(secondEvents.filter(match).length, 1, `${what} once:\n  ${listing}`);
  }
  assert.ok(
    secondEvents.every((e) => e.offline === true),
    `every catch-up event is offline:\n  ${listing}`,
  );
  const recreateOrder = secondEvents.findIndex((e) => e.object.uid === recreateOld.metadata.uid);
  assert.ok(
    recreateOrder < secondEvents.findIndex((e) => e.object.uid === recreateNew.metadata.uid),
    'DELETED before ADDED',
  );
  const seenBefore = new Set(first.events.map((e) => e.id));
  assert.deepEqual(
    secondEvents.filter((e) => seenBefore.has(e.id)).map(describeEvent),
    [],
    'no id of run 1 again',
  );
  assert.ok(
    !secondEvents.some((e) => e.object.uid === keep.metadata.uid || e.object.uid === live.metadata.uid),
  );

  // Run 3 with nothing changed: nothing at all.
  const third = startWatch(ns, state);
  await third.waitForStderr(WATCHING);
  await third.stop();
  assert.deepEqual(third.events.filter(inNamespace(ns)).map(describeEvent), [], 'any event after no change');

  // `kubediff history`: everything reported in this namespace, newest last, with filters.
  const all = await history(['--state', state, '-n', ns, '-o', 'json']);
  assert.equal(all.code, 0, all.stderr);
  const recorded = all.stdout
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as TestEvent);
  assert.deepEqual(
    recorded.map((e) => e.id),
    [...firstEvents, ...secondEvents].map((e) => e.id),
    'history = what was reported, in order',
  );
  const ofChange = await history(['--state', state, '-n', ns, 'cm/change', '-o', 'json']);
  assert.deepEqual(
    ofChange.stdout
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as TestEvent).id),
    [id(changed1), id(changed2)],
  );
  const tail = await history(['--state', state, '-n', ns, '--tail', '1', '-o', 'json']);
  assert.equal((JSON.parse(tail.stdout) as TestEvent).id, recorded.at(-1)?.id);
  const since = await history(['--state', state, '-n', ns, '--since', '2h', '-o', 'json']);
  assert.equal(since.stdout, all.stdout);
  const widgets = await history(['--state', state, '-n', ns, `widgets.${old.group}`, '-o', 'json']);
  assert.equal(widgets.code, 0, widgets.stderr);
  assert.deepEqual(
    widgets.stdout
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as TestEvent).type),
    ['DELETED'],
    'a type no longer served is still in the history',
  );
  const pretty = await history(['--state', state, '-n', ns, 'configmaps/change', '-o', 'pretty']);
  assert.match(pretty.stdout, /UPDATED\s+configmaps \S+\/change .*while not watching/);
  assert.match(pretty.stdout, /data\.k: "1b" → "2"/);
  const unknown = await history(['--state', state, 'nosuchthings']);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /unknown resource type "nosuchthings"/);
});

test('a CRD that gained a default while kubediff was down: the catch-up reports each object it changed, UPDATED offline with cause relist, once', async (t) => {
  const ns = await namespaceFor(t, 'state-default');
  const state = join(dir, `${ns}.db`);
  const group = `${uniqueName('state-default')}.kubediff.test`;
  const crd = `widgets.${group}`;
  t.after(() => admin.deleteCRD(crd));
  await admin.createCRD(group, 'Widget', 'widgets', { schema: shardedSchema() });
  const widgets = `/apis/${group}/v1/namespaces/${ns}/widgets`;
  const widget = (name: string, spec: Record<string, number>) => ({
    apiVersion: `${group}/v1`,
    kind: 'Widget',
    metadata: { name },
    spec,
  });
  const plain = await admin.create(widgets, widget('plain', { replicas: 1 }));
  const explicit = await admin.create(widgets, widget('explicit', { replicas: 1, shards: 3 }));

  const first = startWatch(ns, state, ['-r', crd]);
  await first.waitForStderr(WATCHING);
  assert.equal((await first.stop()).code, 0);

  // While down: the upgrade. `plain` is now served with shards 1, at the same resourceVersion.
  await setCRDSchema(admin, crd, shardedSchema(1));
  await admin.waitFor(
    async () => ((await admin.get(`${widgets}/plain`)).spec as { shards?: number }).shards === 1,
    { what: 'the API server to serve the new default' },
  );

  const second = startWatch(ns, state, ['-r', crd]);
  await second.waitForStderr(WATCHING);
  // A marker: every catch-up event of the type comes before it.
  const marker = await admin.patch(`${widgets}/explicit`, { spec: { replicas: 2 } });
  await second.waitForEvent((e) => e.id === id(marker), { description: 'the marker update' });
  const events = second.events.filter(inNamespace(ns));
  assert.deepEqual(
    events.map((e) => `${e.type} ${e.object.name} ${e.cause ?? '-'} ${JSON.stringify(e.changes)}`),
    [
      `UPDATED plain relist ${JSON.stringify([{ op: 'add', path: '/spec/shards', to: 1 }])}`,
      `UPDATED explicit - ${JSON.stringify([
        { op: 'replace', path: '/spec/replicas', from: 1, to: 2, manager: ADMIN_FIELD_MANAGER },
      ])}`,
    ],
    describeAll(events),
  );
  assert.equal(events[0]?.offline, true);
  assert.notEqual(events[0]?.id, id(plain), 'not the id of its last write');
  assert.equal(marker.metadata.uid, explicit.metadata.uid);
  assert.equal((await second.stop()).code, 0);

  // Recorded: a third start finds nothing to report again.
  const third = startWatch(ns, state, ['-r', crd]);
  await third.waitForStderr(WATCHING);
  const marker2 = await admin.patch(`${widgets}/plain`, { spec: { replicas: 3 } });
  await third.waitForEvent((e) => e.id === id(marker2), { description: 'the second marker' });
  assert.deepEqual(
    third.events.filter(inNamespace(ns)).map((e) => `${e.object.name} ${e.cause ?? '-'}`),
    ['plain -'],
  );
});

test('kill -9 during a burst: every change reported at least once, nothing recorded as reported again', async (t) => {
  const ns = await namespaceFor(t, 'state-kill');
  const state = join(dir, `${ns}.db`);
  // 30 objects that the burst updates (two in three) or deletes (one in three).
  const pre = await Promise.all(
    Array.from({ length: 30 }, (_, i) =>
      admin.create(cmPath(ns), { metadata: { name: `pre-${i}` }, data: { v: '0' } }),
    ),
  );
  // A first run, whose baseline of configmaps is queued behind an event a webhook holds: it must be durable
  // all the same, before the burst it reports, and before kubediff says that it records state (a run
  // killed right after its first events is caught up by the next; test/helpers/gated-first-run.ts).
  const { watch: first, openWebhook } = await gatedFirstRun(t, { ns, state });
  const baseline = readState(
    state,
    "SELECT name FROM objects JOIN resources USING (resource) WHERE resource = 'configmaps' AND listed = 1 ORDER BY name",
  );
  assert.deepEqual(
    baseline.map((row) => row.name),
    pre.map((object) => object.metadata.name).sort(),
    'once kubediff says it records state, its baseline is in the file, marked complete',
  );
  openWebhook();

  const names = Array.from({ length: 300 }, (_, i) => `burst-${i}`);
  /** The id each change must have been reported under: ADDED and UPDATED by id, DELETED by uid. */
  const mustSee = new Map<string, string>();
  const deletedUids = new Map<string, string>();
  const creating = (async () => {
    for (let i = 0; i < names.length; i += 10) {
      const j = i / 10;
      const target = pre[j] as KubeObject;
      const [batch, changed] = await Promise.all([
        Promise.all(
          names
            .slice(i, i + 10)
            .map((name) => admin.create(cmPath(ns), { metadata: { name }, data: { n: name } })),
        ),
        j % 3 === 0
          ? admin.delete(cmPath(ns, target.metadata.name)).then(() => undefined)
          : admin.patch(cmPath(ns, target.metadata.name), { data: { v: String(j) } }),
      ]);
      for (const object of batch) mustSee.set(`ADDED ${object.metadata.name}`, id(object));
      if (changed) mustSee.set(`UPDATED ${target.metadata.name}`, id(changed));
      else deletedUids.set(`DELETED ${target.metadata.name}`, target.metadata.uid);
    }
  })();
  await first.waitForEvent((e) => e.object.namespace === ns && e.object.name === 'burst-60', {
    description: 'the burst under way',
  });
  // Killed once the file records an event as reported: the checks of what it recorded then hold something.
  await waitFor(() => Number(readState(state, 'SELECT count(*) AS n FROM events')[0]?.n) > 0, {
    what: 'an event recorded as reported in the state file',
  });
  await first.kill();
  await creating;
  const firstIds = new Set(first.events.filter(inNamespace(ns)).map((e) => e.id));
  assert.ok(firstIds.size < names.length, 'killed during the burst');

  // What the file records as reported: every one of those was on stdout before the kill.
  const recordedIds = new Set(readState(state, 'SELECT id FROM events').map((row) => String(row.id)));
  for (const recordedId of nonEmpty([...recordedIds], 'events recorded as reported before the kill')) {
    assert.ok(firstIds.has(recordedId), `${recordedId} was reported before it was recorded`);
  }

  const second = startWatch(ns, state, ['-r', 'configmaps']);
  await second.waitForStderr(WATCHING);
  for (const [what, wanted] of mustSee) {
    if (firstIds.has(wanted)) continue;
    await second.waitForEvent((e) => e.id === wanted, { description: `${what} after the restart` });
  }
  const deletedSeen = (uid: string) => (e: TestEvent) => e.type === 'DELETED' && e.object.uid === uid;
  for (const [what, uid] of deletedUids) {
    if (first.events.some(deletedSeen(uid))) continue;
    await second.waitForEvent(deletedSeen(uid), { description: `${what} after the restart` });
  }
  // Everything found at the restart is reported during the initial sync: once stopped, all is said.
  await second.stop();
  const secondEvents = second.events.filter(inNamespace(ns));
  const secondIds = secondEvents.map((e) => e.id);
  assert.equal(new Set(secondIds).size, secondIds.length, 'no duplicate within the second run');
  assert.deepEqual(
    secondIds.filter((x) => recordedIds.has(x)),
    [],
    'nothing recorded as reported is reported again',
  );
  assert.ok(
    secondEvents.every((e) => e.offline === true),
    `the restart reports only offline events:\n  ${describeAll(secondEvents)}`,
  );
  // Reported again (delivered before the kill, not yet recorded): at most the last moments' worth.
  const again = secondIds.filter((x) => firstIds.has(x)).length;
  t.diagnostic(
    `run 1: ${firstIds.size} events, ${recordedIds.size} recorded; run 2: ${secondIds.length} (${again} again)`,
  );
});

test('a first baseline recorded only in part (a start killed between its transactions) is caught up without reporting its other objects ADDED', async (t) => {
  const ns = await namespaceFor(t, 'state-partial');
  const state = join(dir, `${ns}.db`);
  for (const name of ['a', 'b', 'c'])
    await admin.create(cmPath(ns), { metadata: { name }, data: { k: name } });

  // Run 1 takes the baseline; the store is then left as a start killed between the baseline's
  // transactions leaves it: configmaps not marked listed, only `a` of its objects recorded.
  const first = startWatch(ns, state);
  await first.waitForStderr(WATCHING);
  assert.equal((await first.stop()).code, 0);
  const db = SqliteDatabase.open(state);
  try {
    const recorded = db.objects('configmaps');
    const a = recorded.find((object) => object.namespace === ns && object.name === 'a');
    assert.ok(a, 'run 1 recorded a');
    db.forgetObjects('configmaps');
    db.write([{ kind: 'object', resource: 'configmaps', object: a }]);
  } finally {
    db.close();
  }
  const [configmaps] = readState(state, "SELECT listed FROM resources WHERE resource = 'configmaps'");
  assert.equal(Number(configmaps?.listed), 0);

  // While down: `a` changes, `d` is created.
  const changed = await admin.patch(cmPath(ns, 'a'), { data: { k: 'a2' } });
  await admin.create(cmPath(ns), { metadata: { name: 'd' }, data: { k: 'd' } });

  // Run 2: `a`, recorded, is caught up; b, c and d take a silent baseline (which of them are new,
  // nothing tells), as the rest of the interrupted first start's would have.
  const second = startWatch(ns, state);
  await second.waitForStderr(/catching up from /);
  await second.waitForStderr(WATCHING);
  await second.waitForEvent((e) => e.id === id(changed), { description: 'UPDATED a (offline)' });
  assert.equal((await second.stop()).code, 0);
  const caughtUp = second.events.filter(inNamespace(ns));
  assert.equal(caughtUp.length, 1, `only a's change:\n  ${describeAll(caughtUp)}`);
  assert.equal(caughtUp[0]?.type, 'UPDATED');
  assert.equal(caughtUp[0]?.offline, true);

  // That baseline completed the inventory: run 3 catches up on what is created meanwhile.
  const fresh = await admin.create(cmPath(ns), { metadata: { name: 'e' }, data: { k: 'e' } });
  const third = startWatch(ns, state);
  await third.waitForEvent((e) => e.id === id(fresh), { description: 'ADDED e (offline)' });
  await third.waitForStderr(WATCHING);
  assert.equal((await third.stop()).code, 0);
  const thirdEvents = third.events.filter(inNamespace(ns));
  assert.deepEqual(
    thirdEvents.map((e) => `${e.type} ${e.object.name}${e.offline ? ' offline' : ''}`),
    ['ADDED e offline'],
  );
});

test('an object a kill -9 kept from the store, deleted while kubediff was down: the restart reports its DELETED; one created and deleted meanwhile, both', async (t) => {
  const ns = await namespaceFor(t, 'state-replay');
  const state = join(dir, `${ns}.db`);
  // A webhook that takes nothing: what it holds is delivered on stdout but never committed.
  const stuck = await HttpReceiver.start({ defaultReply: { hang: true } });
  t.after(() => stuck.close());
  const first = startWatch(ns, state, ['-r', 'configmaps', '--webhook', stuck.url('/hook')]);
  await first.waitForStderr(WATCHING);
  const followed = () =>
    readState(state, "SELECT listed, resource_version FROM resources WHERE resource = 'configmaps'")[0];
  await waitFor(() => Number(followed()?.listed) === 1, { what: 'the ConfigMaps baseline committed' });
  const base = followed()?.resource_version;
  const shortLived = await admin.create(cmPath(ns), { metadata: { name: 'short-lived' }, data: { k: 'v' } });
  await first.waitForEvent((e) => e.id === id(shortLived), { description: 'short-lived ADDED on stdout' });
  await stuck.waitForRequests(1);
  await first.kill();
  assert.equal(
    Number(readState(state, `SELECT count(*) AS n FROM objects WHERE name = 'short-lived'`)[0]?.n),
    0,
    'reported, but not recorded: the webhook never took it',
  );
  assert.equal(followed()?.resource_version, base, 'the point recorded is not past what is committed');

  // While down: short-lived is deleted; brief is created and deleted; stays is created.
  await admin.delete(cmPath(ns, 'short-lived'));
  const brief = await admin.create(cmPath(ns), { metadata: { name: 'brief' }, data: { k: '1' } });
  const briefChanged = await admin.patch(cmPath(ns, 'brief'), { data: { k: '2' } });
  await admin.delete(cmPath(ns, 'brief'));
  const stays = await admin.create(cmPath(ns), { metadata: { name: 'stays' } });

  const receiver = await HttpReceiver.start();
  t.after(() => receiver.close());
  const second = startWatch(ns, state, ['-r', 'configmaps', '--webhook', receiver.url('/hook')]);
  await second.waitForEvent((e) => e.id === id(stays), { description: 'stays ADDED offline (the LIST)' });
  const shortLivedGone = await second.waitForEvent(
    (e) => e.type === 'DELETED' && e.object.uid === shortLived.metadata.uid,
    { description: 'short-lived DELETED (the replay)' },
  );
  const briefGone = await second.waitForEvent(
    (e) => e.type === 'DELETED' && e.object.uid === brief.metadata.uid,
    { description: 'brief DELETED (the replay)' },
  );
  const sentinel = await admin.create(cmPath(ns), { metadata: { name: 'sentinel' } });
  await second.waitForEvent((e) => e.id === id(sentinel), { description: 'sentinel ADDED, live' });
  const secondExit = await second.stop();
  assert.equal(secondExit.code, 0, secondExit.stderr);
  const reported = second.events.filter(inNamespace(ns));
  const before = reported.slice(
    0,
    reported.findIndex((e) => e.id === id(sentinel)),
  );
  // Each as it happened, offline, in order: short-lived's ADDED again (same id: not recorded), then
  // its DELETED with its last state; brief's ADDED, UPDATED and DELETED.
  assert.deepEqual(
    before
      .filter((e) => e.object.name !== 'stays')
      .map((e) => `${e.type} ${e.object.name} ${e.id}${e.offline ? ' offline' : ''}`),
    [
      `ADDED short-lived ${id(shortLived)} offline`,
      `DELETED short-lived ${shortLivedGone.id} offline`,
      `ADDED brief ${id(brief)} offline`,
      `UPDATED brief ${id(briefChanged)} offline`,
      `DELETED brief ${briefGone.id} offline`,
    ],
    describeAll(reported),
  );
  // Seen as it happened: at the deletion's resourceVersion, not an inference from a LIST.
  assert.equal(shortLivedGone.finalStateUnknown, undefined);
  assert.ok(BigInt(shortLivedGone.object.resourceVersion) > BigInt(shortLived.metadata.resourceVersion));
  assert.ok(reported.filter((e) => e.object.name === 'stays').every((e) => e.type === 'ADDED' && e.offline));
  const delivered = receiver.requests.map((request) => (JSON.parse(request.body) as TestEvent).id);
  for (const event of before) assert.ok(delivered.includes(event.id), `${event.id} delivered to the webhook`);
  // The store holds neither (their events are in the history), and the next start reports nothing again.
  assert.deepEqual(
    readState(state, `SELECT name FROM objects WHERE resource = 'configmaps' ORDER BY name`).map(
      (row) => row.name,
    ),
    ['sentinel', 'stays'],
  );
  const recorded = readState(state, `SELECT id FROM events WHERE name IN ('short-lived', 'brief')`).map(
    (row) => row.id,
  );
  assert.deepEqual(
    new Set(recorded),
    new Set([...before].filter((e) => e.object.name !== 'stays').map((e) => e.id)),
  );
  const third = startWatch(ns, state, ['-r', 'configmaps']);
  await third.waitForStderr(WATCHING);
  const last = await admin.create(cmPath(ns), { metadata: { name: 'last' } });
  await third.waitForEvent((e) => e.id === id(last), { description: 'last ADDED, live' });
  assert.equal((await third.stop()).code, 0);
  assert.deepEqual(
    third.events.filter(inNamespace(ns)).map((e) => `${e.type} ${e.object.name}`),
    ['ADDED last'],
    'nothing reported again',
  );
});

test('the state file, its -wal and its -shm are created 0600, whatever the umask lets through', async (t) => {
  const ns = await namespaceFor(t, 'state-modes');
  const state = join(dir, 'modes.db');
  // The usual umask (022) would leave files kubediff creates without a mode of their own readable by all.
  const umask = process.umask(0o022);
  t.after(() => process.umask(umask));
  const kd = startWatch(ns, state);
  await kd.waitForStderr(WATCHING);
  await admin.create(cmPath(ns), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'written' } });
  await kd.waitForEvent((event) => event.object.name === 'written');
  // Recorded (the WAL is written) once the event is delivered: a history query sees it.
  await admin.waitFor(
    async () => (await history(['--state', state, '-o', 'json'])).stdout.includes('written'),
    {
      what: 'the event recorded',
    },
  );
  const modes = Object.fromEntries(
    ['', '-wal', '-shm'].map((suffix) => [
      `modes.db${suffix}`,
      (statSync(`${state}${suffix}`).mode & 0o777).toString(8),
    ]),
  );
  assert.deepEqual(modes, { 'modes.db': '600', 'modes.db-wal': '600', 'modes.db-shm': '600' });
  const result = await kd.stop('SIGTERM');
  assert.equal(result.code, 0, result.stderr);
});

test('a damaged file and a foreign SQLite file are refused with one sentence and exit code 2', async () => {
  const damaged = join(dir, 'damaged.db');
  writeFileSync(damaged, Buffer.alloc(8192, 7));
  const foreign = join(dir, 'foreign.db');
  const other = new DatabaseSync(foreign);
  other.exec('CREATE TABLE invoices (id INTEGER PRIMARY KEY)');
  other.close();
  for (const [file, pattern] of [
    [
      damaged,
      /^kubediff: the state file \S+damaged\.db is damaged or not a database \(.*\); move it away or delete it to start afresh/,
    ],
    [
      foreign,
      /^kubediff: the state file \S+foreign\.db is an SQLite database of another application, not kubediff state; pass another --state path, or move it away/,
    ],
  ] as const) {
    for (const command of [
      ['watch', '--kubeconfig', testCluster().kubeconfigPath, '-o', 'json', '--state', file],
      ['history', '--state', file],
    ]) {
      const result = await runKubediffToCompletion(command, { timeoutMs: 20_000 });
      assert.equal(result.code, 2, `${command.join(' ')}: ${result.stderr}`);
      assert.match(result.stderr, pattern);
      assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr);
    }
  }
});

test('a state file of schema 1 (an older kubediff) is migrated and still catches up', async (t) => {
  const ns = await namespaceFor(t, 'state-migrate');
  const state = join(dir, `${ns}.db`);
  await admin.create(cmPath(ns), { metadata: { name: 'a' }, data: { k: '1' } });
  const first = startWatch(ns, state, ['-r', 'configmaps']);
  await first.waitForStderr(WATCHING);
  const b = await admin.create(cmPath(ns), { metadata: { name: 'b' }, data: { k: '1' } });
  await first.waitForEvent((e) => e.id === id(b), { description: 'b ADDED' });
  assert.equal((await first.stop()).code, 0);

  // Back to schema 1: the history without its resource, namespace and name columns (schema 2) and its
  // search column (schema 3).
  const raw = new DatabaseSync(state);
  raw.exec(`DROP INDEX events_object;
    ALTER TABLE events DROP COLUMN resource; ALTER TABLE events DROP COLUMN namespace;
    ALTER TABLE events DROP COLUMN name; ALTER TABLE events DROP COLUMN search; PRAGMA user_version = 1;`);
  raw.close();
  const tooOld = await history(['--state', state]);
  assert.equal(tooOld.code, 2);
  assert.match(tooOld.stderr, /older schema \(1\); run `kubediff watch --state \S+` once to migrate it/);

  const changed = await admin.patch(cmPath(ns, 'a'), { data: { k: '2' } });
  const second = startWatch(ns, state, ['-r', 'configmaps']);
  await second.waitForStderr(WATCHING);
  const update = await second.waitForEvent((e) => e.id === id(changed), { description: 'a UPDATED offline' });
  assert.equal(update.offline, true);
  assert.deepEqual(update.changes, [
    { op: 'replace', path: '/data/k', from: '1', to: '2', manager: ADMIN_FIELD_MANAGER },
  ]);
  assert.equal((await second.stop()).code, 0);
  assert.deepEqual(
    second.events.filter((e) => inNamespace(ns)(e) && e.id !== id(changed)).map(describeEvent),
    [],
    'only the change made meanwhile',
  );

  const check = new DatabaseSync(state, { readOnly: true });
  assert.equal(Object.values(check.prepare('PRAGMA user_version').get() ?? {})[0], SCHEMA_VERSION);
  check.close();
  const migrated = await history(['--state', state, '-n', ns, 'configmaps', '-o', 'json']);
  assert.equal(migrated.code, 0, migrated.stderr);
  assert.deepEqual(
    migrated.stdout
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as TestEvent).id),
    [id(b), id(changed)],
    'the history written before the migration is queryable by resource and namespace',
  );
});

test('a change a webhook has not taken yet is not recorded: after a kill -9 it is delivered again, same id', async (t) => {
  const ns = await namespaceFor(t, 'state-webhook');
  const state = join(dir, `${ns}.db`);
  const stuck = await HttpReceiver.start({ defaultReply: { hang: true } });
  t.after(() => stuck.close());
  const first = startWatch(ns, state, [
    '-r',
    'configmaps',
    '--webhook',
    stuck.url('/hook'),
    '--listen',
    '127.0.0.1:0',
  ]);
  const [, base] = await first.waitForStderr(SERVING);
  await first.waitForStderr(WATCHING);
  // The baseline is committed (what the next start catches up from), before the change.
  await waitFor(
    () => {
      const db = new DatabaseSync(state, { readOnly: true });
      try {
        return db.prepare("SELECT listed FROM resources WHERE resource = 'configmaps'").get()?.listed === 1;
      } finally {
        db.close();
      }
    },
    { what: 'the ConfigMaps baseline committed' },
  );
  const before = await admin.create(cmPath(ns), { metadata: { name: 'slow' }, data: { k: 'v' } });
  await first.waitForEvent((e) => e.id === id(before), { description: 'slow ADDED on stdout' });
  await stuck.waitForRequests(1);
  // The recorder has the event and holds its write back (the webhook has not taken it): the backlog.
  await waitFor(
    async () =>
      ((await scrapeMetrics(base ?? '')).get('kubediff_state_backlog_bytes{cluster="kubediff-test"}') ?? 0) >
      0,
    { what: 'the write held back in the state backlog' },
  );
  const raw = new DatabaseSync(state, { readOnly: true });
  const recorded = raw.prepare('SELECT count(*) AS n FROM events WHERE id = ?').get(id(before)) as {
    n: number;
  };
  raw.close();
  assert.equal(recorded.n, 0, 'on stdout, but the webhook has not taken it: not recorded');
  await first.kill();

  const receiver = await HttpReceiver.start();
  t.after(() => receiver.close());
  const second = startWatch(ns, state, ['-r', 'configmaps', '--webhook', receiver.url('/hook')]);
  const again = await second.waitForEvent((e) => e.id === id(before), { description: 'slow again, offline' });
  assert.equal(again.offline, true);
  const [request] = await receiver.waitForRequests(1);
  assert.equal((JSON.parse(request?.body ?? '{}') as TestEvent).id, id(before));
  assert.equal((await second.stop()).code, 0);
  const check = new DatabaseSync(state, { readOnly: true });
  const now = check.prepare('SELECT count(*) AS n FROM events WHERE id = ?').get(id(before)) as { n: number };
  check.close();
  assert.equal(now.n, 1, 'recorded once delivered');
});
