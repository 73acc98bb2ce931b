// The recorder's memory bound (src/state/backlog-bound.ts): at the bound, the oldest writes are committed
// early (those a sink had not finished counted, the sink named once) or, when the store cannot take them,
// dropped (never a discovery's note, never one being written; counted, said once).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BacklogBound } from '../../../src/state/backlog-bound.ts';
import { type SerializedWrite, serializeWrite } from '../../../src/state/store.ts';
import { WriteQueue } from '../../../src/state/write-queue.ts';
import { silentLogger } from '../../../src/util/log.ts';
import { storedObject } from '../../helpers/state-fixtures.ts';

const write = (name: string): SerializedWrite =>
  serializeWrite({
    kind: 'object',
    resource: 'configmaps',
    object: storedObject(name, '1', { v: 'x'.repeat(1_000) }),
  });

function setUp() {
  const warnings: string[] = [];
  const queue = new WriteQueue();
  for (let i = 0; i < 10; i++) queue.push(write(`o${i}`), [i + 1, 0]);
  // Ten entries of the same size; the bound at about five of them.
  const bound = new BacklogBound({
    maxBytes: Math.floor((queue.bytes / 10) * 5),
    log: { ...silentLogger, warn: (message: string) => warnings.push(message) },
    label: 'postgres://db/state',
  });
  return { queue, bound, warnings };
}

test('early: the oldest down to half the bound, whatever the sinks did; those not finished counted, the sink named once', () => {
  const { queue, bound, warnings } = setUp();
  assert.equal(bound.exceeded(queue), true);
  assert.equal(bound.farExceeded(queue), false);
  // The first sink has finished the first 4, the second nothing it was handed (it was handed none).
  const progress = { finished: () => [4, 0], names: () => ['stdout', 'webhook down'] };
  const early = bound.early(queue, progress);
  assert.deepEqual(
    early.map(({ write }) => (write.kind === 'object' ? write.name : '')),
    ['o0', 'o1', 'o2', 'o3', 'o4', 'o5', 'o6', 'o7'],
  );
  assert.equal(bound.unconfirmed, 4, 'o4 to o7: stdout had not finished them');
  assert.equal(warnings.length, 1);
  assert.match(
    warnings[0] ?? '',
    /^state: stdout is more than [\d.]+ KiB of changes behind; the state store records them/,
  );
  queue.remove(early);
  bound.early(queue, { finished: () => [0, 0] });
  assert.equal(warnings.length, 1, 'said once');
});

test('drop: the oldest down to half the bound, but a discovery note and what is being written; counted, said once', () => {
  const { queue, bound, warnings } = setUp();
  queue.push({ kind: 'resources', entries: [] }, []);
  const inFlight = new Set(queue.oldest(1));
  // o0 is being written: it stays, and still counts.
  assert.equal(bound.drop(queue, inFlight).length, 8);
  assert.deepEqual(
    queue.entries.map(({ write }) => (write.kind === 'object' ? write.name : write.kind)),
    ['o0', 'o9', 'resources'],
  );
  assert.equal(bound.dropped, 8);
  assert.deepEqual(warnings, [
    `state: postgres://db/state has not taken the changes of the last ${warnings[0]?.match(/last (.+?);/)?.[1]}; the oldest are dropped so that memory stays bounded: their history is lost, and the next start reports their objects again where they differ. Counted in kubediff_state_dropped_writes_total; logged once.`,
  ]);
  assert.equal(bound.drop(queue, new Set()).length, 0, 'within half the bound: nothing more');
  bound.countDropped(2);
  assert.equal(bound.dropped, 10);
});
