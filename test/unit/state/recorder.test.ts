// The recorder (src/state/recorder.ts) over a real SQLite state file, as the pipeline drives it: nothing
// is recorded as reported before every sink has finished with it; the backlog is bounded; a state of
// another selection is not compared. The baseline (a first LIST with no previous state to compare it
// with) is durable before anything after it is reported: its objects wait for no sink, the informer that
// listed it pauses (flowControl) until they are committed, and a first run says that it records state
// only then. The parts have tests of their own (state-write-queue, state-backlog-bound, …).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import type { StoredObject } from '../../../src/informer/store.ts';
import type { ResourceType } from '../../../src/kube/types.ts';
import { StateRecorder } from '../../../src/state/recorder.ts';
import { SqliteDatabase } from '../../../src/state/sqlite-database.ts';
import { SqliteStateStore } from '../../../src/state/sqlite-store.ts';
import { silentLogger } from '../../../src/util/log.ts';
import { configmaps, secrets } from '../../helpers/resource-types.ts';
import {
  changeEvent,
  fakeInformer,
  selection as selectionOf,
  storedObject,
} from '../../helpers/state-fixtures.ts';

const dir = mkdtempSync(join(tmpdir(), 'kubediff-recorder-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let counter = 0;
const file = () => join(dir, `state-${++counter}.db`);
const object = storedObject;
const event = changeEvent;
const added = (type: ResourceType, name: string, rv: string) =>
  changeEvent(name, rv, undefined, 'ADDED', type);
const selection = (...watched: ResourceType[]) => selectionOf(watched);

async function openRecorder(path: string, infos: string[] = []) {
  const db = SqliteDatabase.open(path);
  const recorder = await StateRecorder.open({
    store: new SqliteStateStore(db),
    log: { ...silentLogger, info: (message: string) => infos.push(message) },
    signature: 's',
    // No timer: every commit in these tests is one the recorder makes of its own accord, or flush().
    flushIntervalMs: 1e9,
  });
  return { db, recorder };
}

/** The names of the configmaps recorded, sorted. */
function objectNames(db: SqliteDatabase, resource = 'configmaps'): string[] {
  return db
    .objects(resource)
    .map((o) => o.name)
    .sort();
}

function listedTypes(db: SqliteDatabase): string[] {
  return db
    .resources()
    .filter((entry) => entry.listed)
    .map((entry) => entry.resource)
    .sort();
}

test("a first LIST's baseline is committed before its informer reads on, past events a sink has not finished; then the run says it records state", async () => {
  const path = file();
  const infos: string[] = [];
  const { db, recorder } = await openRecorder(path, infos);
  const cms = fakeInformer(configmaps);
  const secretInformer = fakeInformer(secrets);
  // One sink, which finishes nothing during the test (a webhook that does not answer).
  recorder.attach({ finished: () => [0] }, () => [cms.informer, secretInformer.informer]);
  recorder.noteSelection(selection(configmaps, secrets));

  // configmaps list first: two objects, then the informer watches.
  for (const name of ['a', 'b'])
    recorder.changeProcessed(
      { kind: 'baseline', type: configmaps, object: object(name, '10') },
      undefined,
      [0],
    );
  cms.sync('10');
  recorder.stateChanged(cms.informer, { phase: 'watching' });
  const pause = recorder.flowControl();
  assert.ok(pause, 'the informer pauses after its first LIST');
  await pause;
  assert.deepEqual(objectNames(db), ['a', 'b']);
  assert.deepEqual(listedTypes(db), ['configmaps']);
  assert.equal(recorder.flowControl(), undefined, 'then it reads on');
  assert.deepEqual(infos, [], 'secrets still listing: not said yet');

  // A configmap created: its event handed to the sink, which does not finish it.
  recorder.changeProcessed(
    { kind: 'added', type: configmaps, object: object('c', '11') },
    added(configmaps, 'c', '11'),
    [1],
  );
  // secrets list now: their baseline comes after that event in the queue.
  recorder.changeProcessed({ kind: 'baseline', type: secrets, object: object('s', '12') }, undefined, [1]);
  secretInformer.sync('12');
  recorder.stateChanged(secretInformer.informer, { phase: 'watching' });
  await recorder.flowControl();
  assert.deepEqual(objectNames(db, 'secrets'), ['s'], 'the baseline did not wait for the sink');
  assert.deepEqual(listedTypes(db), ['configmaps', 'secrets']);
  assert.deepEqual(
    objectNames(db),
    ['a', 'b'],
    'the event the sink has not finished, and its object, are not recorded',
  );
  assert.equal(db.eventCount(), 0);
  assert.deepEqual(infos, [`recording state in ${path}: the next start will catch up on what it missed.`]);
  await recorder.close();
});

test('a baseline object is not committed past a discovery note that waits, nor past a write of the same object that waits', async () => {
  const { db, recorder } = await openRecorder(file());
  let finished = 0;
  const cms = fakeInformer(configmaps);
  recorder.attach({ finished: () => [finished] }, () => [cms.informer]);
  recorder.noteSelection(selection(configmaps));
  await recorder.flush();
  // An event the sink has not finished, then a new discovery (its note waits behind the event), then a
  // baseline object: the note must be applied before it, so it waits too.
  recorder.changeProcessed(
    { kind: 'added', type: configmaps, object: object('a', '1') },
    added(configmaps, 'a', '1'),
    [1],
  );
  recorder.noteSelection(selection(configmaps, secrets));
  recorder.changeProcessed({ kind: 'baseline', type: configmaps, object: object('b', '2') }, undefined, [1]);
  await recorder.flush();
  assert.equal(db.objectCount(), 0);
  finished = 1;
  await recorder.flush();
  assert.deepEqual(objectNames(db), ['a', 'b']);
  // The same object written before its baseline entry, waiting: the baseline entry waits behind it.
  recorder.changeProcessed(
    { kind: 'updated', type: configmaps, object: object('a', '3') },
    added(configmaps, 'a', '3'),
    [2],
  );
  recorder.changeProcessed({ kind: 'baseline', type: configmaps, object: object('a', '4') }, undefined, [2]);
  await recorder.flush();
  assert.equal(db.objects('configmaps').find((o) => o.name === 'a')?.resourceVersion, '1');
  finished = 2;
  await recorder.flush();
  assert.equal(db.objects('configmaps').find((o) => o.name === 'a')?.resourceVersion, '4');
  await recorder.close();
});

test('a store that is down does not hold the watch: the pause ends after one attempt', async () => {
  const db = SqliteDatabase.open(file());
  const store = new SqliteStateStore(db);
  const down = new Error('connection refused');
  let refusing = false;
  const flaky = Object.assign(Object.create(store) as SqliteStateStore, {
    write: async (...args: Parameters<SqliteStateStore['write']>) => {
      if (refusing) throw down;
      return store.write(...args);
    },
    isTransient: (error: unknown) => error === down,
  });
  const recorder = await StateRecorder.open({
    store: flaky,
    log: silentLogger,
    signature: 's',
    flushIntervalMs: 1e9,
  });
  const cms = fakeInformer(configmaps);
  recorder.attach({ finished: () => [0] }, () => [cms.informer]);
  recorder.noteSelection(selection(configmaps));
  recorder.changeProcessed({ kind: 'baseline', type: configmaps, object: object('a', '1') }, undefined, [0]);
  refusing = true;
  cms.sync('1');
  recorder.stateChanged(cms.informer, { phase: 'watching' });
  await recorder.flowControl();
  assert.equal(recorder.flowControl(), undefined);
  assert.equal(db.objectCount(), 0, 'kept in the queue, to be written when the store answers');
  refusing = false;
  await recorder.close();
  assert.equal(SqliteDatabase.open(db.path).objectCount(), 1);
});

test('a run with a previous state says so when it starts; it does not say it records state', async () => {
  const path = file();
  const first = await openRecorder(path);
  first.recorder.attach({ finished: () => [] }, () => []);
  first.recorder.noteSelection(selection(configmaps));
  await first.recorder.close();
  const infos: string[] = [];
  const second = await openRecorder(path, infos);
  const cms = fakeInformer(configmaps);
  second.recorder.attach({ finished: () => [] }, () => [cms.informer]);
  cms.sync('5');
  second.recorder.stateChanged(cms.informer, { phase: 'watching' });
  await second.recorder.flowControl();
  assert.deepEqual(infos, [
    `catching up from ${path}: changes made while kubediff was not running are reported offline.`,
  ]);
  await second.recorder.close();
});

test('the recorder commits only what every sink has finished with, in order, in one transaction', async () => {
  const path = file();
  const db = SqliteDatabase.open(path);
  const recorder = await StateRecorder.open({
    store: new SqliteStateStore(db),
    log: silentLogger,
    signature: 's',
    flushIntervalMs: 1e9,
  });
  // One sink, whose finished counter the test drives; the pipeline tells the recorder, for each change,
  // the sink's accepted count once its event was handed over.
  let finished = 0;
  recorder.attach({ finished: () => [finished] }, () => []);
  const added = (o: StoredObject, accepted: number) =>
    recorder.changeProcessed(
      { kind: 'added', type: configmaps, object: o },
      event(o.name, o.resourceVersion, '2026-01-01T00:00:00.000Z'),
      [accepted],
    );
  added(object('a', '1'), 1);
  added(object('b', '2'), 2);
  // A baseline's object (a type whose first LIST ended after those events) carries no event: it waits
  // for no sink.
  recorder.changeProcessed({ kind: 'baseline', type: configmaps, object: object('c', '3') }, undefined, [2]);
  await recorder.flush();
  assert.deepEqual(objectNames(db), ['c'], 'nothing delivered yet: nothing but the baseline recorded');
  assert.equal(db.eventCount(), 0);
  finished = 1;
  await recorder.flush();
  assert.deepEqual(objectNames(db), ['a', 'c']);
  assert.deepEqual(
    db.history({}).map((e) => e.id),
    ['uid-a:1'],
  );
  finished = 2;
  await recorder.flush();
  assert.deepEqual(objectNames(db), ['a', 'b', 'c']);
  assert.equal(recorder.backlogBytes, 0);
  await recorder.close();
});

test("the recorder's backlog is bounded in bytes: a sink that never finishes does not hold every change in memory", async () => {
  const path = file();
  const db = SqliteDatabase.open(path);
  const warnings: string[] = [];
  const bound = 200_000;
  const recorder = await StateRecorder.open({
    store: new SqliteStateStore(db),
    log: { ...silentLogger, warn: (message: string) => warnings.push(message) },
    signature: 's',
    flushIntervalMs: 1e9,
    maxBacklogBytes: bound,
  });
  // Two sinks: the first keeps up, the second (a webhook that is down) never finishes anything.
  let accepted = 0;
  recorder.attach({ finished: () => [accepted, 0], names: () => ['stdout', 'webhook down'] }, () => []);
  // 200 updates of a ~10 KB object: 2 MB of writes, ten times the bound.
  for (let rv = 1; rv <= 200; rv++) {
    const current = object('big', String(rv), { v: String(rv % 10).repeat(10_000) });
    accepted++;
    recorder.changeProcessed(
      { kind: 'updated', type: configmaps, object: current },
      event(current.name, current.resourceVersion, '2026-01-01T00:00:00.000Z', 'UPDATED'),
      [accepted, accepted],
    );
    await recorder.flush();
    assert.ok(recorder.backlogBytes <= bound, `${recorder.backlogBytes} bytes held after update ${rv}`);
  }
  // The oldest were recorded before the dead sink delivered them: counted, and said once, naming it.
  assert.ok(recorder.unconfirmedWrites > 0);
  assert.equal(warnings.length, 1);
  assert.match(
    warnings[0] ?? '',
    /^state: webhook down is more than 195 KiB of changes behind; the state store records them/,
  );
  assert.ok(db.eventCount() > 100, `${db.eventCount()} events recorded while the sink was down`);
  // Nothing lost: a clean stop records the rest, in order.
  await recorder.close();
  const reopened = SqliteDatabase.open(path);
  assert.equal(reopened.eventCount(), 200);
  assert.equal(reopened.objects('configmaps')[0]?.resourceVersion, '200');
  reopened.close();
});

test('a recorder whose file was written with another selection takes a new baseline (history kept)', async () => {
  const path = file();
  const db = SqliteDatabase.open(path);
  const first = await StateRecorder.open({
    store: new SqliteStateStore(db),
    log: silentLogger,
    signature: 'A',
  });
  first.attach({ finished: () => [] }, () => []);
  first.noteSelection(selection(configmaps));
  first.changeProcessed({ kind: 'baseline', type: configmaps, object: object('a', '1') }, undefined, []);
  await first.close();
  const warnings: string[] = [];
  const second = await StateRecorder.open({
    store: new SqliteStateStore(SqliteDatabase.open(path)),
    log: { ...silentLogger, warn: (m: string) => warnings.push(m) },
    signature: 'B',
  });
  assert.equal(second.hasPreviousState, false);
  assert.deepEqual(second.plan(configmaps, undefined, 'silent'), { initialList: 'silent' });
  assert.match(warnings.join('\n'), /taking a new baseline/);
  await second.close();
  const third = await StateRecorder.open({
    store: new SqliteStateStore(SqliteDatabase.open(path)),
    log: silentLogger,
    signature: 'B',
  });
  assert.equal(third.hasPreviousState, true);
  await third.close();
});
