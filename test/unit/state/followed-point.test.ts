// How far the state records each type as followed (src/state/followed-versions.ts), over a real SQLite
// file, driven as the pipeline drives the recorder: never past a change that is not committed (one a
// sink has not finished, one dropped at the backlog bound, one a new leader hands over, one of a replay
// not over), raised by committed live changes, by the end of a replay once its changes are committed,
// and by nothing a LIST's comparison found; with -n, one per namespace. A restart replays from it
// (docs/state.md, "The replay").
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import type { StoredObject } from '../../../src/informer/store.ts';
import { StateRecorder } from '../../../src/state/recorder.ts';
import { SqliteDatabase } from '../../../src/state/sqlite-database.ts';
import { SqliteStateStore } from '../../../src/state/sqlite-store.ts';
import { StateWriter } from '../../../src/state/state-writer.ts';
import { DEFAULT_RETENTION, type SerializedWrite, serializeWrite } from '../../../src/state/store.ts';
import { silentLogger } from '../../../src/util/log.ts';
import { configmaps } from '../../helpers/resource-types.ts';
import {
  changeEvent,
  type FakeInformer,
  fakeInformer,
  selection,
  storedObject,
} from '../../helpers/state-fixtures.ts';

const dir = mkdtempSync(join(tmpdir(), 'kubediff-followed-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let counter = 0;
const file = () => join(dir, `state-${++counter}.db`);

async function open(path: string) {
  const db = SqliteDatabase.open(path);
  const recorder = await StateRecorder.open({
    store: new SqliteStateStore(db),
    log: silentLogger,
    signature: 's',
    // No timer: every commit is one the test asks for (flush) or the recorder makes of its own accord.
    flushIntervalMs: 1e9,
  });
  return { db, recorder };
}

const followed = (db: SqliteDatabase) =>
  db.resources().find((entry) => entry.resource === 'configmaps')?.resourceVersion;

function inNamespace(namespace: string, name: string, rv: string): StoredObject {
  return { ...storedObject(name, rv), namespace, key: `${namespace}/${name}` };
}

/** Where the next start would replay configmaps from, the store as a kill -9 left it. */
async function nextReplayFrom(path: string, namespace?: string): Promise<string | undefined> {
  const { recorder } = await open(path);
  const plan = recorder.plan(configmaps, namespace, 'silent');
  await recorder.abandon();
  return plan.replayFrom;
}

/**
 * configmaps watched by `recorder`, one informer per key of `points` ('' for every namespace, else -n
 * with that namespace), each informer's first LIST ended at its point and the baseline committed; the
 * sink has finished `finished()`. Returns the informers by key.
 */
async function listedAt(
  recorder: StateRecorder,
  finished: () => number,
  points: Record<string, string>,
): Promise<Map<string, FakeInformer>> {
  const informers = new Map(
    Object.keys(points).map((namespace) => [namespace, fakeInformer(configmaps, namespace || undefined)]),
  );
  recorder.attach({ finished: () => [finished()], accepted: () => [finished()] }, () =>
    [...informers.values()].map((entry) => entry.informer),
  );
  recorder.noteSelection(selection([configmaps]));
  for (const [namespace, informer] of informers) {
    informer.sync(points[namespace] ?? '');
    recorder.stateChanged(informer.informer, { phase: 'watching' });
  }
  await recorder.flowControl();
  return informers;
}

/** A first run that lists configmaps at `rv` and stops cleanly: the type is followed from `rv`. */
async function firstRun(path: string, rv: string): Promise<void> {
  const { recorder } = await open(path);
  await listedAt(recorder, () => 0, { '': rv });
  await recorder.close();
}

test('from the first LIST, by committed live changes; with -n one per namespace, each replayed from its own; a replayed change keeps its event only and raises nothing', async () => {
  const path = file();
  const { db, recorder } = await open(path);
  let finished = 0;
  const change = (namespace: string, name: string, rv: string, accepted: number) =>
    recorder.changeProcessed(
      { kind: 'added', type: configmaps, object: inNamespace(namespace, name, rv) },
      changeEvent(name, rv),
      [accepted],
    );
  await listedAt(recorder, () => finished, { a: '10', b: '14' });
  assert.equal(followed(db), '{"a":"10","b":"14"}', 'listed: each namespace where its LIST ended');

  change('b', 'x', '15', 1);
  change('a', 'y', '16', 2);
  change('b', 'z', '17', 3);
  finished = 1;
  await recorder.flush();
  assert.equal(followed(db), '{"a":"10","b":"15"}');
  finished = 2;
  await recorder.flush();
  assert.equal(followed(db), '{"a":"16","b":"15"}');
  await recorder.flush();
  assert.equal(
    followed(db),
    '{"a":"16","b":"15"}',
    'the sink has not finished the change at 17: not past it',
  );
  finished = 3;
  await recorder.flush();
  assert.equal(followed(db), '{"a":"16","b":"17"}');

  // Replayed in namespace a: brief created and deleted while kubediff was down. Its events are kept, no
  // row for its object, and the point does not move: the replay is not over.
  recorder.changeProcessed(
    {
      kind: 'added',
      type: configmaps,
      object: inNamespace('a', 'brief', '18'),
      offline: true,
      replayed: true,
    },
    changeEvent('brief', '18'),
    [4],
  );
  recorder.changeProcessed(
    {
      kind: 'deleted',
      type: configmaps,
      object: inNamespace('a', 'brief', '19'),
      offline: true,
      replayed: true,
    },
    changeEvent('brief', '19', undefined, 'DELETED'),
    [5],
  );
  finished = 5;
  await recorder.flush();
  assert.equal(followed(db), '{"a":"16","b":"17"}');
  assert.deepEqual(
    db
      .history({})
      .filter((entry) => entry.object.name === 'brief')
      .map((entry) => entry.id),
    ['uid-brief:18', 'uid-brief:19'],
  );
  assert.deepEqual(
    db
      .objects('configmaps')
      .map((entry) => entry.name)
      .sort(),
    ['x', 'y', 'z'],
  );
  await recorder.close();
  // The next start replays each namespace from its own point.
  assert.equal(await nextReplayFrom(path, 'a'), '16');
  assert.equal(await nextReplayFrom(path, 'b'), '17');
  assert.equal(await nextReplayFrom(path, 'c'), undefined, 'a namespace never followed: no replay');
});

test('a restart replaying: at the replay point until the replay is over and its changes committed, then at the LIST; stopped or killed before, the next start replays it again', async () => {
  const path = file();
  await firstRun(path, '10');
  const { db, recorder } = await open(path);
  assert.equal(recorder.plan(configmaps, undefined, 'silent').replayFrom, '10');
  let finished = 0;
  // The LIST at 30 compared, the replay's watch from 10 starting: the informer is at the replay point
  // (src/informer/reflector.ts, resourceVersion), and its first LIST is marked there.
  const cms = (await listedAt(recorder, () => finished, { '': '10' })).get('') as ReturnType<
    typeof fakeInformer
  >;
  const replayed = (name: string, rv: string, kind: 'added' | 'deleted', accepted: number) =>
    recorder.changeProcessed(
      { kind, type: configmaps, object: inNamespace('ns', name, rv), offline: true, replayed: true },
      changeEvent(name, rv, undefined, kind === 'added' ? 'ADDED' : 'DELETED'),
      [accepted],
    );
  replayed('brief', '12', 'added', 1);
  finished = 1;
  await recorder.flush();
  assert.equal(followed(db), '10', "brief's ADDED committed, its DELETED not read yet");
  assert.equal(await nextReplayFrom(path), '10', 'killed now: the next start replays brief again, whole');
  replayed('brief', '14', 'deleted', 2);
  // The replay is over (a change or bookmark past the LIST, at 30): the state is the LIST's.
  recorder.stateChanged(cms.informer, { phase: 'replayed', listedAt: '30' });
  await recorder.flush();
  await recorder.flush();
  assert.equal(followed(db), '10', "brief's DELETED not committed");
  finished = 2;
  await recorder.flush();
  await recorder.flush();
  assert.equal(followed(db), '30', 'the replay committed: at the LIST');
  await recorder.close();
});

test("a relist's changes (found by comparing a LIST, in its order) raise nothing", async () => {
  const path = file();
  const { db, recorder } = await open(path);
  let finished = 0;
  await listedAt(recorder, () => finished, { '': '10' });
  // A relist at 30 (410 mid-run) finds b written at 29 and c created at 20, handed on by name.
  for (const [name, rv, accepted] of [
    ['b', '29', 1],
    ['c', '20', 2],
  ] as const) {
    recorder.changeProcessed(
      { kind: 'added', type: configmaps, object: inNamespace('ns', name, rv), offline: true },
      changeEvent(name, rv),
      [accepted],
    );
  }
  finished = 1;
  await recorder.flush();
  assert.equal(followed(db), '10', "b committed, c not: past c's ADDED a kill -9 would lose its deletion");
  // A live change after the relist, committed: every change before it is.
  recorder.changeProcessed(
    { kind: 'added', type: configmaps, object: inNamespace('ns', 'd', '31') },
    changeEvent('d', '31'),
    [3],
  );
  finished = 3;
  await recorder.flush();
  assert.equal(followed(db), '31');
  await recorder.close();
});

/** A 1 KiB ConfigMap's write: ten of them fill the bound of boundedWriter. */
function bigObject(name: string, rv: string): SerializedWrite {
  return serializeWrite({
    kind: 'object',
    resource: 'configmaps',
    object: storedObject(name, rv, { v: 'x'.repeat(1_000) }),
  });
}

/**
 * A writer over `store` whose backlog holds ten of bigObject's entries, configmaps listed at 10; one
 * sink, which has finished `finished()`.
 */
async function boundedWriter(store: SqliteStateStore, finished: () => number[]): Promise<StateWriter> {
  const probe = bigObject('probe', '1');
  const entryBytes = 200 + (probe.kind === 'object' ? probe.json.length : 0);
  const cms = fakeInformer(configmaps);
  const writer = new StateWriter({
    store,
    log: silentLogger,
    retention: DEFAULT_RETENTION,
    pruneIntervalMs: 1e9,
    maxBacklogBytes: entryBytes * 10,
    context: {
      progress: () => ({ finished }),
      informers: () => [cms.informer],
      snapshot: () => {
        throw new Error('not leader-elected');
      },
      committed: () => {},
    },
  });
  writer.push(
    {
      kind: 'resources',
      entries: [{ resource: 'configmaps', json: JSON.stringify(configmaps), watched: true }],
    },
    [],
  );
  cms.sync('10');
  writer.listed.firstListEnded(cms.informer);
  writer.queue.firstListEnded('configmaps');
  await writer.flush();
  return writer;
}

test('a change dropped at the backlog bound (the store down) holds the point below it for the rest of the run', async () => {
  const db = SqliteDatabase.open(file());
  const store = new SqliteStateStore(db);
  const down = new Error('connection refused');
  let failure: Error | undefined;
  const flaky = Object.assign(Object.create(store) as SqliteStateStore, {
    write: async (...args: Parameters<SqliteStateStore['write']>) => {
      if (failure) throw failure;
      return store.write(...args);
    },
    isTransient: (error: unknown) => error === down,
  });
  const writer = await boundedWriter(flaky, () => []);
  assert.equal(followed(db), '10');
  const live = (name: string, rv: string) =>
    writer.push(bigObject(name, rv), [], false, { namespace: 'ns', resourceVersion: rv });
  failure = down;
  live('x', '20');
  await writer.flush();
  for (let i = 0; i < 20; i++) live(`o${i}`, String(21 + i));
  assert.ok(writer.bound.dropped > 0);
  failure = undefined;
  await writer.flush(true);
  assert.equal(
    db.objects('configmaps').some((entry) => entry.name === 'x'),
    false,
    "x's ADDED was dropped",
  );
  assert.equal(followed(db), '19', "below x's dropped ADDED, whatever was committed after it");
  db.close();
});

test('-n, a restart: marking the type listed again does not move a namespace back to the point of the one behind', async () => {
  const path = file();
  {
    const { db, recorder } = await open(path);
    let finished = 0;
    await listedAt(recorder, () => finished, { a: '10', b: '14' });
    await recorder.flush();
    // b follows a brief object created and deleted at 20 and 21: reported, committed.
    for (const [kind, rv, n] of [
      ['added', '20', 1],
      ['deleted', '21', 2],
    ] as const) {
      recorder.changeProcessed(
        { kind, type: configmaps, object: inNamespace('b', 'brief', rv) },
        changeEvent('brief', rv, undefined, kind === 'added' ? 'ADDED' : 'DELETED'),
        [n],
      );
    }
    finished = 2;
    await recorder.flush();
    assert.equal(followed(db), '{"a":"10","b":"21"}');
    await recorder.close();
  }
  // The next start: each informer at its own replay point when its first LIST ends (reflector.ts).
  const { recorder } = await open(path);
  await listedAt(recorder, () => 0, {
    a: recorder.plan(configmaps, 'a', 'silent').replayFrom ?? '',
    b: recorder.plan(configmaps, 'b', 'silent').replayFrom ?? '',
  });
  // Killed here (kill -9): b would replay from a's point, and report brief (20, 21) a second time.
  assert.equal(await nextReplayFrom(path, 'b'), '21');
  await recorder.abandon();
});

test('a replay the server no longer holds (410): once the LIST is committed, the point is no longer the compacted one', async () => {
  const path = file();
  await firstRun(path, '10');
  const { db, recorder } = await open(path);
  // LIST at 3000, the replay's watch from 10: the informer at 10 when 'watching' is said ...
  const cms = (await listedAt(recorder, () => 0, { '': '10' })).get('') as FakeInformer;
  // ... then 410 Gone: the reflector goes on from the LIST (reflector.ts endReplay('gone')); bookmarks.
  recorder.stateChanged(cms.informer, { phase: 'replayed', listedAt: '3000', goneFrom: '10' });
  cms.sync('3000');
  recorder.stateChanged(cms.informer, { phase: 'watching' });
  await recorder.flush();
  await recorder.flush();
  // At the LIST: a later start does not replay from the point the server no longer holds.
  assert.equal(followed(db), '3000');
  await recorder.close();
});

test('changes committed early at the backlog bound (a sink behind) do not raise the point past what that sink has not finished', async () => {
  const db = SqliteDatabase.open(file());
  // One sink, stuck: it has finished nothing after the LIST.
  const writer = await boundedWriter(new SqliteStateStore(db), () => [0]);
  assert.equal(followed(db), '10');
  for (let i = 0; i < 20; i++)
    writer.push(bigObject(`o${i}`, String(20 + i)), [1], false, {
      namespace: 'ns',
      resourceVersion: String(20 + i),
    });
  await writer.busy;
  await writer.flush();
  assert.ok(writer.bound.unconfirmed > 0, 'committed before the sink finished');
  assert.ok(
    BigInt(followed(db) ?? '0') < 20n,
    `followed to ${followed(db)}: the sink has finished none of them, a kill -9 loses them, the replay must not skip them`,
  );
  db.close();
});

/** A shared store (as PostgreSQL's claims answer) holding configmaps listed and followed to `point`. */
class SharedStore {
  readonly label = 'postgres://db/state';
  point: string;
  constructor(point: string) {
    this.point = point;
  }
  async claim() {
    return true;
  }
  async fence() {
    return 0;
  }
  async release() {}
  async objectVersions() {
    return new Map<string, string>();
  }
  async getMeta(key: string) {
    return key === 'followed' ? '1' : 's';
  }
  async setMeta() {}
  async forgetFollowed() {
    this.point = '';
  }
  async resources() {
    return [
      { resource: 'configmaps', type: configmaps, watched: true, listed: true, resourceVersion: this.point },
    ];
  }
  async objects() {
    return [];
  }
  async forgetObjects() {}
  async write(
    _batch: readonly unknown[],
    listed: ReadonlyMap<string, string>,
    followedTo: ReadonlyMap<string, string> = new Map(),
  ) {
    for (const [, version] of listed) this.point = version;
    for (const [, version] of followedTo) this.point = version;
  }
  async prune() {
    return 0;
  }
  isTransient() {
    return false;
  }
  async close() {}
}

test('a new leader: not followed past the events it hands over until they are committed', async () => {
  const store = new SharedStore('10');
  const recorder = await StateRecorder.open({
    store: store as never,
    log: silentLogger,
    signature: 's',
    flushIntervalMs: 1e9,
    leaderElected: { fenceAfterMs: 15_000 },
  });
  let finished = 0;
  const cms = fakeInformer(configmaps);
  // One sink: it has accepted the two events handed over.
  recorder.attach({ finished: () => [finished], accepted: () => [2] }, () => [cms.informer]);
  recorder.noteSelection(selection([configmaps]));
  cms.sync('50');
  recorder.stateChanged(cms.informer, { phase: 'watching' });
  // The old leader died having delivered up to 25; the standby hands over brief, created at 30 and
  // deleted at 35, which it held back.
  recorder.startedLeading([changeEvent('brief', '30'), changeEvent('brief', '35', undefined, 'DELETED')]);
  await recorder.flush();
  assert.equal(store.point, '29', 'the resync, held below the events handed over');
  finished = 2;
  await recorder.flush();
  await recorder.flush();
  assert.equal(store.point, '50', 'committed: as far as the informers');
  await recorder.close();
});

test("a new leader: after the resync, the point does not fall back to where the standby's first LIST ended", async () => {
  const store = new SharedStore('10');
  const recorder = await StateRecorder.open({
    store: store as never,
    log: silentLogger,
    signature: 's',
    flushIntervalMs: 1e9,
    leaderElected: { fenceAfterMs: 15_000 },
  });
  const cms = fakeInformer(configmaps);
  recorder.attach({ finished: () => [0], accepted: () => [0] }, () => [cms.informer]);
  recorder.noteSelection(selection([configmaps]));
  // A standby: its first LIST ended at 50, its watch read on to 500 (the old leader recorded 50..500).
  cms.sync('50');
  recorder.stateChanged(cms.informer, { phase: 'watching' });
  cms.sync('500');
  recorder.startedLeading([]);
  await recorder.flush();
  assert.equal(store.point, '500', 'the resync: as far as the informer');
  await recorder.flush();
  // Back at 50, the next start replays 50..LIST: what the old leader reported of objects created and
  // deleted in between is reported again.
  assert.equal(store.point, '500', 'not back to the standby LIST');
  await recorder.close();
});
