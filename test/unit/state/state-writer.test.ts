// The recorder's commits (src/state/state-writer.ts) into a real SQLite state file whose writes the test
// can make fail: a store that is down keeps the queue and is retried, one past the bound drops the oldest,
// a failure that is not transient stops recording; the listed marks go with the commit that completes them.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import type { Informer } from '../../../src/informer/informer.ts';
import { SqliteDatabase } from '../../../src/state/sqlite-database.ts';
import { SqliteStateStore } from '../../../src/state/sqlite-store.ts';
import { StateWriter } from '../../../src/state/state-writer.ts';
import { DEFAULT_RETENTION, type SerializedWrite, serializeWrite } from '../../../src/state/store.ts';
import { silentLogger } from '../../../src/util/log.ts';
import { configmaps } from '../../helpers/resource-types.ts';
import { fakeInformer, storedObject } from '../../helpers/state-fixtures.ts';

const dir = mkdtempSync(join(tmpdir(), 'kubediff-writer-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let counter = 0;

const down = new Error('connection refused');
const full = new Error('database or disk is full');
const object = (name: string, rv = '1'): SerializedWrite =>
  serializeWrite({
    kind: 'object',
    resource: 'configmaps',
    object: storedObject(name, rv, { v: 'x'.repeat(1_000) }),
  });

/** A writer over a file whose writes throw `failure` while it is set. */
function setUp(options: { maxBacklogBytes?: number; informers?: Informer[] } = {}) {
  const db = SqliteDatabase.open(join(dir, `state-${++counter}.db`));
  const store = new SqliteStateStore(db);
  let failure: Error | undefined;
  const flaky = Object.assign(Object.create(store) as SqliteStateStore, {
    write: async (...args: Parameters<SqliteStateStore['write']>) => {
      if (failure) throw failure;
      return store.write(...args);
    },
    isTransient: (error: unknown) => error === down,
  });
  const warnings: string[] = [];
  let finished = 0;
  let committed = 0;
  const writer = new StateWriter({
    store: flaky,
    log: { ...silentLogger, warn: (message: string) => warnings.push(message) },
    retention: DEFAULT_RETENTION,
    pruneIntervalMs: 1e9,
    maxBacklogBytes: options.maxBacklogBytes,
    context: {
      progress: () => ({ finished: () => [finished] }),
      informers: () => options.informers ?? [],
      snapshot: () => {
        throw new Error('not leader-elected');
      },
      committed: () => {
        committed++;
      },
    },
  });
  return {
    db,
    writer,
    warnings,
    fail: (error: Error | undefined) => {
      failure = error;
    },
    finish: (count: number) => {
      finished = count;
    },
    commits: () => committed,
  };
}

test('a store that is down keeps the queue; the commit is tried again once the backoff allows, and at the end', async (t) => {
  // The clock stands still: the backoff (0.5 s ± 50 %) has not passed, whatever the machine's speed.
  t.mock.timers.enable({ apis: ['Date'], now: 1_000_000 });
  const { db, writer, warnings, fail } = setUp();
  writer.push(object('a'), []);
  fail(down);
  await writer.flush();
  assert.equal(writer.queue.length, 1);
  assert.equal(writer.failed, false);
  assert.match(
    warnings[0] ?? '',
    /^state: cannot write to .*: connection refused; changes are still reported, and kept/,
  );
  fail(undefined);
  await writer.flush();
  assert.equal(db.objectCount(), 0, 'not before the backoff');
  t.mock.timers.tick(750);
  await writer.flush();
  assert.equal(db.objectCount(), 1, 'once the backoff allows');
  writer.push(object('b'), []);
  fail(down);
  await writer.flush();
  fail(undefined);
  await writer.flush(true);
  assert.equal(db.objectCount(), 2, 'the last commit is tried whatever');
  assert.equal(writer.queue.length, 0);
});

test('down beyond the bound: the oldest dropped down to half of it, counted, said once', async () => {
  const one = object('probe');
  const entryBytes = 200 + (one.kind === 'object' ? one.json.length : 0);
  const { db, writer, warnings, fail } = setUp({ maxBacklogBytes: entryBytes * 10 });
  fail(down);
  writer.push(object('first'), []);
  await writer.flush();
  for (let i = 0; i < 20; i++) writer.push(object(`o${i}`), []);
  assert.ok(writer.queue.bytes <= entryBytes * 10, `${writer.queue.bytes} bytes held`);
  assert.ok(writer.bound.dropped > 0);
  assert.equal(warnings.filter((warning) => /dropped so that memory stays bounded/.test(warning)).length, 1);
  fail(undefined);
  await writer.flush(true);
  assert.equal(db.objectCount() + writer.bound.dropped, 21, 'every entry recorded or counted');
});

test('a failure that is not transient stops recording: said once, the queue emptied, nothing more queued', async () => {
  const { writer, warnings, fail } = setUp();
  writer.push(object('a'), []);
  fail(full);
  await writer.flush();
  assert.equal(writer.failed, true);
  assert.equal(writer.queue.length, 0);
  writer.push(object('b'), []);
  assert.equal(writer.queue.length, 0);
  assert.equal(warnings.length, 1);
  assert.match(
    warnings[0] ?? '',
    /^cannot write the state to \S+: database or disk is full; changes are still reported, but no longer recorded, and the next start will not catch up on them\.$/,
  );
});

test('what the sinks have finished with is committed, with the listed mark of the type it completes', async () => {
  const cms = fakeInformer(configmaps);
  const { db, writer, finish, commits } = setUp({ informers: [cms.informer] });
  // As the recorder does at its start: the next pruning is due in pruneIntervalMs.
  await writer.prune();
  writer.push(object('a'), [1]);
  writer.push(object('b'), [2]);
  cms.sync('7');
  writer.listed.firstListEnded(cms.informer);
  writer.queue.firstListEnded('configmaps');
  await writer.flush();
  assert.equal(commits(), 0, 'idle: no write at all');
  finish(1);
  await writer.flush();
  assert.deepEqual(
    db.objects('configmaps').map((o) => o.name),
    ['a'],
  );
  assert.equal(db.resources().length, 0);
  assert.equal(writer.listed.has('configmaps'), false);
  finish(2);
  await writer.flush();
  assert.equal(writer.listed.has('configmaps'), true);
  assert.equal(commits(), 2);
});
