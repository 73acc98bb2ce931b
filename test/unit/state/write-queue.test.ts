// The recorder's write queue (src/state/write-queue.ts): what may be committed given the sinks' progress,
// baselines past the entries that wait, the bytes it holds, and when a type's first LIST is committed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type SerializedWrite, serializeWrite } from '../../../src/state/store.ts';
import { sinkProgress, WriteQueue } from '../../../src/state/write-queue.ts';
import { changeEvent, storedObject } from '../../helpers/state-fixtures.ts';

const object = (name: string, rv: string, resource = 'configmaps'): SerializedWrite =>
  serializeWrite({ kind: 'object', resource, object: storedObject(name, rv) });
const event = (name: string, rv: string): SerializedWrite =>
  serializeWrite({ kind: 'event', resource: 'configmaps', event: changeEvent(name, rv) });
const note: SerializedWrite = { kind: 'resources', entries: [] };
const names = (entries: readonly { write: SerializedWrite }[]) =>
  entries.map(({ write }) => ('key' in write ? `${write.kind} ${write.key}` : write.kind));

test('a commit takes the longest prefix every sink has finished with, at most `limit`', () => {
  const queue = new WriteQueue();
  queue.push(note, []);
  queue.push(event('a', '1'), [1, 1]);
  queue.push(object('a', '1'), [1, 1]);
  queue.push(event('b', '2'), [2, 1]);
  queue.push(object('b', '2'), [2, 1]);
  assert.deepEqual(names(queue.committable([0, 5], 100)), ['resources']);
  assert.deepEqual(names(queue.committable([1, 1], 100)), ['resources', 'event', 'object ns/a']);
  assert.deepEqual(names(queue.committable([2, 1], 100)).length, 5);
  assert.deepEqual(names(queue.committable([2, 1], 2)), ['resources', 'event']);
});

test('baseline entries wait for no sink, but not past a note that waits nor past a write of the same object', () => {
  const queue = new WriteQueue();
  queue.push(event('a', '1'), [1]);
  queue.push(object('a', '1'), [1]);
  queue.push(object('x', '5', 'secrets'), [1], true);
  queue.push(object('a', '2'), [1], true);
  queue.push(note, []);
  queue.push(object('y', '6', 'secrets'), [1], true);
  assert.equal(queue.baselinesWaiting, 3);
  // x passes the event of a; the baseline of a waits behind a's write; y waits behind the note.
  assert.deepEqual(names(queue.committable([0], 100)), ['object ns/x']);
  const taken = queue.committable([0], 100);
  queue.remove(taken);
  assert.equal(queue.baselinesWaiting, 2);
  assert.deepEqual(names(queue.entries), ['event', 'object ns/a', 'object ns/a', 'resources', 'object ns/y']);
  assert.equal(queue.committable([1], 100).length, 5);
});

test('the bytes held follow the entries in and out, whichever way they leave', () => {
  const queue = new WriteQueue();
  assert.equal(queue.bytes, 0);
  for (let i = 0; i < 4; i++) queue.push(object(`o${i}`, String(i)), [i]);
  const each = queue.bytes / 4;
  assert.ok(each > 200, 'the entry overhead and its JSON');
  queue.remove(queue.oldest(1));
  assert.equal(queue.bytes, 3 * each);
  const dropped = queue.dropWhere((entry) => entry.mark[0] === 2);
  assert.deepEqual(names(dropped), ['object ns/o2']);
  assert.equal(queue.bytes, 2 * each);
  assert.equal(queue.clear().length, 2);
  assert.equal(queue.bytes, 0);
  assert.equal(queue.length, 0);
});

test("a type's first LIST is done once every entry queued before it ended is committed, this batch included", () => {
  const queue = new WriteQueue();
  queue.push(object('a', '1'), [], true);
  queue.push(object('s', '1', 'secrets'), [1]);
  queue.push(object('b', '1'), [], true);
  queue.firstListEnded('configmaps');
  queue.push(object('c', '2'), [2]);
  assert.equal(queue.firstListDone('secrets', []), false, 'a type whose first LIST did not end');
  const baseline = queue.committable([0], 100);
  assert.deepEqual(names(baseline), ['object ns/a', 'object ns/b']);
  assert.equal(queue.firstListDone('configmaps', baseline.slice(0, 1)), false);
  assert.equal(queue.firstListDone('configmaps', baseline), true);
  queue.remove(baseline);
  assert.equal(queue.firstListDone('configmaps', []), true, 'c came after the LIST');
});

test("a type's first LIST an entry of which was dropped or left is never done: its inventory is not complete", () => {
  // Dropped before the LIST ended (the store down at the first start, the backlog bound reached).
  const dropped = new WriteQueue();
  dropped.push(object('a', '1'), [], true);
  dropped.push(object('b', '1'), [], true);
  assert.deepEqual(names(dropped.dropWhere((entry) => entry.seq === 0)), ['object ns/a']);
  dropped.firstListEnded('configmaps');
  const rest = dropped.committable([0], 100);
  assert.equal(dropped.firstListDone('configmaps', rest), false);
  dropped.remove(rest);
  assert.equal(dropped.firstListDone('configmaps', []), false);
  // Dropped after it ended, and left at exit: the same.
  const after = new WriteQueue();
  after.push(object('a', '1'), [], true);
  after.push(object('b', '1'), [], true);
  after.firstListEnded('configmaps');
  after.push(object('s', '1', 'secrets'), [], true);
  after.dropWhere((entry) => entry.seq === 1);
  assert.equal(after.firstListDone('configmaps', after.committable([0], 100)), false);
  after.firstListEnded('secrets');
  after.clear();
  assert.equal(after.firstListDone('secrets', []), false);
  // A write of another type dropped leaves this one's LIST whole.
  const other = new WriteQueue();
  other.push(object('a', '1'), [], true);
  other.push(object('s', '1', 'secrets'), [1]);
  other.dropWhere((entry) => entry.seq === 1);
  other.firstListEnded('configmaps');
  assert.equal(other.firstListDone('configmaps', other.committable([0], 100)), true);
});

test("sinks' progress: finished is accepted minus pending, in the router's order", () => {
  const sinks = [
    { name: 'stdout', stats: () => ({ accepted: 5, pending: 0 }) },
    { name: 'webhook', stats: () => ({ accepted: 5, pending: 3 }) },
  ];
  const progress = sinkProgress(() => sinks);
  assert.deepEqual(progress.finished(), [5, 2]);
  assert.deepEqual(progress.accepted?.(), [5, 5]);
  assert.deepEqual(progress.names?.(), ['stdout', 'webhook']);
});
