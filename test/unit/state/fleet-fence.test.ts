// The fleet's fence at delivery (src/state/fleet-fence.ts), without a server: a cluster's handovers go on
// only while this replica owns it and its lease is valid; held, in order, while the lease has run out;
// dropped for a cluster never owned or no longer owned (a stale owner never delivers); past the bound a
// cluster is given up, counted, and said once per outage. The member's side against a real PostgreSQL:
// test/integration/fleet-member.test.ts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubediffEvent } from '../../../src/events/event.ts';
import type { Handover } from '../../../src/events/pipeline.ts';
import { FleetFence } from '../../../src/state/fleet-fence.ts';
import { silentLogger } from '../../../src/util/log.ts';

/** A fence whose lease the test switches, recording what it passes on and what it says. */
function fenced(maxHeld?: number) {
  const lease = { valid: true };
  const passed: string[] = [];
  const warnings: string[] = [];
  const overflowed: string[] = [];
  const fence = new FleetFence({
    leaseValid: () => lease.valid,
    log: { ...silentLogger, warn: (message: string) => warnings.push(message) },
    onOverflow: (cluster) => overflowed.push(cluster),
    ...(maxHeld === undefined ? {} : { maxHeld }),
  });
  const admit = fence.connect((handover) => passed.push(nameOf(handover)));
  const send = (cluster: string | undefined, name: string) =>
    admit({ change: undefined, event: { id: name } as unknown as KubediffEvent, cluster });
  return { fence, lease, passed, warnings, overflowed, send };
}

function nameOf(handover: Handover<KubediffEvent>): string {
  return (handover.event as unknown as { id: string }).id;
}

test('an owned cluster with a valid lease passes its handovers on, in order; one without a cluster passes as without a fence', () => {
  const { fence, passed, send } = fenced();
  fence.own('eu');
  send('eu', 'e1');
  send(undefined, 'plain');
  send('eu', 'e2');
  assert.deepEqual(passed, ['e1', 'plain', 'e2']);
  assert.equal(fence.holding, 0);
  assert.equal(fence.dropped, 0);
  assert.equal(fence.flowControl('eu'), undefined);
});

test('a cluster never owned, or no longer owned (a stale owner), delivers nothing, and its drops are counted', () => {
  const { fence, passed, send } = fenced();
  send('eu', 'never');
  fence.own('eu');
  send('eu', 'mine');
  fence.disown('eu');
  send('eu', 'stale');
  assert.deepEqual(passed, ['mine']);
  assert.equal(fence.dropped, 2);
  assert.equal(fence.flowControl('eu'), undefined, 'a cluster not owned does not pause its informers');
});

test('the lease run out: handovers are held in order and the informers pause; renewed: they go on in order, the pause ends', async () => {
  const { fence, lease, passed, send } = fenced();
  fence.own('eu');
  fence.own('us');
  send('eu', 'e1');
  lease.valid = false;
  send('eu', 'e2');
  send('us', 'u1');
  send('eu', 'e3');
  assert.deepEqual(passed, ['e1']);
  assert.equal(fence.holding, 3);
  const paused = fence.flowControl('eu');
  assert.ok(paused, 'the informers of a held cluster pause');
  assert.equal(fence.flowControl('eu'), paused, 'one pause per cluster');

  fence.resume(); // a beat answered too late: still no lease, nothing goes on
  assert.deepEqual(passed, ['e1']);

  lease.valid = true;
  send('eu', 'e4'); // behind what is held, never before it
  assert.deepEqual(passed, ['e1']);
  fence.resume();
  await paused;
  assert.deepEqual(
    passed.filter((name) => name.startsWith('e')),
    ['e1', 'e2', 'e3', 'e4'],
  );
  assert.deepEqual(
    passed.filter((name) => name.startsWith('u')),
    ['u1'],
  );
  assert.equal(fence.holding, 0);
  assert.equal(fence.flowControl('eu'), undefined);
});

test('a cluster lost while held: what was held is dropped, never delivered, even once the lease is renewed', async () => {
  const { fence, lease, passed, send } = fenced();
  fence.own('eu');
  fence.own('us');
  lease.valid = false;
  send('eu', 'e1');
  send('eu', 'e2');
  send('us', 'u1');
  const paused = fence.flowControl('eu');
  fence.disown('eu');
  await paused; // the informers of a lost cluster are not left waiting
  lease.valid = true;
  fence.resume();
  send('eu', 'e3');
  assert.deepEqual(passed, ['u1']);
  assert.equal(fence.dropped, 3);
  assert.equal(fence.holding, 0);
});

test('past the bound a cluster is given up: counted each time, said once per outage, what it held dropped; the others keep theirs', () => {
  const { fence, lease, passed, warnings, overflowed, send } = fenced(3);
  for (const cluster of ['eu', 'us', 'ap']) fence.own(cluster);
  lease.valid = false;
  for (let i = 1; i <= 3; i++) send('eu', `e${i}`);
  assert.equal(fence.overflows, 0, 'at the bound, nothing is given up');
  send('eu', 'e4');
  assert.deepEqual(overflowed, ['eu']);
  assert.equal(fence.overflows, 1);
  assert.equal(warnings.length, 1);
  assert.match(
    warnings[0] ?? '',
    /^fleet: more than 3 changes of cluster "eu" held while this replica's heartbeat is not renewed; giving the cluster up \(it is claimed afresh, and caught up, once the database answers; nothing is lost\)\. Other clusters given up in this outage are counted in kubediff_fleet_held_overflows_total, not logged\.$/,
  );
  send('eu', 'e5'); // no longer owned: dropped, not held
  for (let i = 1; i <= 4; i++) send('us', `u${i}`);
  assert.deepEqual(overflowed, ['eu', 'us']);
  assert.equal(fence.overflows, 2);
  assert.equal(warnings.length, 1, 'one sentence per outage');
  send('ap', 'a1');
  assert.equal(fence.holding, 1);
  assert.equal(fence.dropped, 9);

  lease.valid = true;
  fence.resume();
  assert.deepEqual(passed, ['a1']);
  // The next outage says it again.
  fence.own('eu');
  lease.valid = false;
  for (let i = 1; i <= 4; i++) send('eu', `again${i}`);
  assert.equal(fence.overflows, 3);
  assert.equal(warnings.length, 2);
  assert.deepEqual(passed, ['a1']);
});
