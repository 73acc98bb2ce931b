// src/events/handover/leader-gate.ts: the handover checkpoint. A standby holds events back and drops what the
// leader's checkpoint covers; on takeover it delivers the rest, and never what the old leader had.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ChangeEvent } from '../../../../src/events/event.ts';
import {
  CHECKPOINT_ANNOTATION,
  checkpointAnnotation,
  checkpointOf,
  LeaderGate,
} from '../../../../src/events/handover/leader-gate.ts';
import type { Informer } from '../../../../src/informer/informer.ts';
import type { Lease } from '../../../../src/kube/leader-election.ts';
import { type Logger, silentLogger } from '../../../../src/util/log.ts';

const event = (resource: string, apiVersion: string, rv: string, name = 'x'): ChangeEvent => ({
  id: `uid-${name}:${rv}`,
  type: 'UPDATED',
  time: '2026-11-22T00:00:00.000Z',
  object: { apiVersion, kind: 'K', resource, name, uid: `uid-${name}`, resourceVersion: rv },
});
const lease = (rv: Record<string, string> | undefined, raw?: string): Lease => ({
  metadata: {
    name: 'kubediff',
    annotations:
      raw !== undefined
        ? { [CHECKPOINT_ANNOTATION]: raw }
        : rv
          ? { [CHECKPOINT_ANNOTATION]: JSON.stringify({ v: 1, rv }) }
          : {},
  },
});

/** A gate connected to a delivery that keeps the ids; `g.offer(event)` hands it an event as the pipeline does. */
function gate(
  options: { log?: Logger; maxBuffered?: number; maxBufferedBytes?: number } = { maxBuffered: 5 },
) {
  const delivered: string[] = [];
  const stage = new LeaderGate({ log: silentLogger, ...options });
  const enter = stage.connect((handover) => {
    if (handover.event) delivered.push(handover.event.id);
  });
  const g = Object.assign(stage, { offer: (e: ChangeEvent) => enter({ change: undefined, event: e }) });
  return { g, delivered };
}

test('a standby delivers nothing; on takeover, only what the old leader had not processed', () => {
  const { g, delivered } = gate();
  g.offer(event('configmaps', 'v1', '100', 'a'));
  g.offer(event('deployments', 'apps/v1', '101', 'b'));
  g.offer(event('configmaps', 'v1', '105', 'c'));
  assert.deepEqual(delivered, []);
  g.observe(lease({ configmaps: '100', 'deployments.apps': '101' }));
  assert.equal(g.buffered, 1, 'the checkpoint covers two of them');
  g.offer(event('configmaps', 'v1', '106', 'd'));
  g.startLeading(lease({ configmaps: '105', 'deployments.apps': '101' }));
  assert.deepEqual(delivered, ['uid-d:106']);
  assert.equal(g.isLeader, true);
  // A late event the old leader had processed (this replica lagged) is not sent again; new ones are.
  g.offer(event('configmaps', 'v1', '104', 'e'));
  g.offer(event('configmaps', 'v1', '107', 'f'));
  g.offer(event('secrets', 'v1', '3', 'g'));
  assert.deepEqual(delivered, ['uid-d:106', 'uid-f:107', 'uid-g:3']);
});

test('the takeover observer is handed the history trail (what checkpoints covered lately) and everything held, oldest first', () => {
  const told: string[] = [];
  let now = 0;
  const stage = new LeaderGate({
    log: silentLogger,
    now: () => now,
    takeover: {
      startedLeading: (events) => told.push(`lead ${events.map((e) => e.id).join(' ')}`),
      stoppedLeading: () => told.push('stop'),
    },
  });
  const delivered: string[] = [];
  const enter = stage.connect((handover) => {
    if (handover.event) delivered.push(handover.event.id);
  });
  const offer = (e: ChangeEvent) => enter({ change: undefined, event: e });
  offer(event('configmaps', 'v1', '99', 'old'));
  stage.observe(lease({ configmaps: '99' }));
  // A minute later: what a checkpoint covered a minute ago has long been committed by the leader.
  now = 60_001;
  offer(event('configmaps', 'v1', '100', 'a'));
  stage.observe(lease({ configmaps: '100' }));
  offer(event('configmaps', 'v1', '101', 'b'));
  offer(event('configmaps', 'v1', '102', 'c'));
  stage.observe(lease({ configmaps: '101' }));
  offer(event('configmaps', 'v1', '103', 'd'));
  // The Lease at takeover covers c too: delivered is only d; the history gets a and b (covered lately:
  // the leader may have died before committing them), c and d.
  stage.startLeading(lease({ configmaps: '102' }));
  assert.deepEqual(delivered, ['uid-d:103']);
  assert.deepEqual(told, ['lead uid-a:100 uid-b:101 uid-c:102 uid-d:103']);
  stage.stopLeading();
  assert.deepEqual(told.at(-1), 'stop');
});

test('the history trail gives way to held events at the byte bound', () => {
  const told: string[] = [];
  const one = 200 + JSON.stringify(event('configmaps', 'v1', '1', 'a')).length;
  const stage = new LeaderGate({
    log: silentLogger,
    maxBufferedBytes: 2 * one,
    takeover: {
      startedLeading: (events) => told.push(events.map((e) => e.id).join(' ')),
      stoppedLeading() {},
    },
  });
  const enter = stage.connect(() => {});
  const offer = (e: ChangeEvent) => enter({ change: undefined, event: e });
  offer(event('configmaps', 'v1', '1', 'a'));
  offer(event('configmaps', 'v1', '2', 'b'));
  stage.observe(lease({ configmaps: '2' }));
  offer(event('configmaps', 'v1', '3', 'c'));
  stage.startLeading(lease({ configmaps: '2' }));
  assert.deepEqual(told, ['uid-b:2 uid-c:3'], 'the oldest of the trail went to make room');
});

test('no checkpoint (first leader, or unreadable): everything held back is delivered', () => {
  for (const previous of [undefined, lease(undefined), lease(undefined, 'not json')]) {
    const { g, delivered } = gate();
    g.offer(event('pods', 'v1', '1', 'a'));
    g.startLeading(previous);
    assert.deepEqual(delivered, ['uid-a:1']);
  }
});

test('resourceVersions that are not numbers are never taken as covered (duplicates rather than loss)', () => {
  const { g, delivered } = gate();
  g.offer(event('widgets', 'example.com/v1', 'abc', 'a'));
  g.startLeading(lease({ 'widgets.example.com': '5' }));
  assert.deepEqual(delivered, ['uid-a:abc']);
});

test('losing the Lease holds events back again; the buffer is bounded', () => {
  const { g, delivered } = gate();
  g.startLeading(undefined);
  g.stopLeading();
  for (let rv = 1; rv <= 7; rv++) g.offer(event('pods', 'v1', String(rv), `p${rv}`));
  assert.equal(g.buffered, 5, 'the oldest are dropped beyond the bound');
  assert.deepEqual(delivered, []);
  g.startLeading(undefined);
  assert.deepEqual(delivered, ['uid-p3:3', 'uid-p4:4', 'uid-p5:5', 'uid-p6:6', 'uid-p7:7']);
});

test('the buffer is bounded in bytes too: the oldest are dropped, counted, and it is said once', () => {
  const warnings: string[] = [];
  const log = { ...silentLogger, warn: (message: string) => warnings.push(message) };
  const bound = 20_000;
  const { g, delivered } = gate({ log, maxBufferedBytes: bound });
  // Each event carries a ~3 KB change: the bound holds about six of them.
  const big = (rv: number): ChangeEvent => ({
    ...event('configmaps', 'v1', String(rv), `c${rv}`),
    changes: [{ op: 'replace', path: '/data/v', from: 'a'.repeat(1_500), to: 'b'.repeat(1_500) }],
  });
  for (let rv = 1; rv <= 50; rv++) {
    g.offer(big(rv));
    assert.ok(g.bufferedBytes <= bound, `${g.bufferedBytes} bytes held after event ${rv}`);
  }
  const held = g.buffered;
  assert.ok(held >= 5 && held <= 6, `${held} events held`);
  assert.equal(g.droppedEvents, 50 - held);
  assert.equal(warnings.length, 1);
  assert.match(
    warnings[0] ?? '',
    /standby: more than 100,000 events or 20 KiB held back .*dropping the oldest/,
  );
  // Nothing the bound kept is lost: the newest are delivered on takeover.
  g.startLeading(undefined);
  assert.deepEqual(
    delivered,
    Array.from({ length: held }, (_, i) => `uid-c${51 - held + i}:${51 - held + i}`),
  );
  assert.equal(g.bufferedBytes, 0);
});

test('the checkpoint: per resource, the lowest resourceVersion of its synced informers', () => {
  const informer = (group: string, resource: string, rv: string, synced = true) =>
    ({ type: { group, resource }, resourceVersion: rv, hasSynced: synced }) as unknown as Informer;
  const text = checkpointAnnotation([
    informer('', 'pods', '120'),
    informer('', 'pods', '110'),
    informer('apps', 'deployments', '130'),
    informer('', 'secrets', '140', false),
    informer('example.com', 'widgets', 'opaque'),
  ]);
  assert.deepEqual(JSON.parse(text), { v: 1, rv: { 'deployments.apps': '130', pods: '110' } });
  const parsed = checkpointOf(lease(undefined, text));
  assert.deepEqual(
    [...parsed],
    [
      ['deployments.apps', 130n],
      ['pods', 110n],
    ],
  );
});

test('a floor above what the API server is at is refused, logged and counted; what the standby held of it is delivered', async () => {
  const warnings: string[] = [];
  const log: Logger = { ...silentLogger, warn: (message) => warnings.push(message) };
  const asked: string[] = [];
  const stage = new LeaderGate({
    log,
    maxBuffered: 10,
    check: {
      // This replica's own watches: configmaps at 100; nothing of the others yet.
      seen: (resource) => (resource === 'configmaps' ? 100n : undefined),
      current: async (resource) => {
        asked.push(resource);
        if (resource === 'services') throw new Error('503 from the API server');
        return resource === 'secrets' ? 200n : 150n;
      },
    },
  });
  const delivered: string[] = [];
  const enter = stage.connect((handover) => {
    if (handover.event) delivered.push(handover.event.id);
  });
  const offer = (e: ChangeEvent) => enter({ change: undefined, event: e });
  offer(event('configmaps', 'v1', '90', 'a'));
  offer(event('configmaps', 'v1', '97', 'b'));
  offer(event('secrets', 'v1', '180', 'c'));
  offer(event('deployments', 'apps/v1', '50', 'd'));
  offer(event('services', 'v1', '60', 'e'));
  const checkpoint = { configmaps: '95', secrets: '190', 'deployments.apps': '999999999999', services: '70' };

  // A standby trims only by floors its own watches have passed: configmaps.
  stage.observe(lease(checkpoint));
  assert.equal(stage.buffered, 4);

  await stage.startLeading(lease(checkpoint));
  // configmaps 95: seen (no request); secrets 190: confirmed (200); the forged one and the unconfirmed one refused.
  assert.deepEqual(asked, ['secrets', 'deployments.apps', 'services']);
  assert.deepEqual(delivered, ['uid-b:97', 'uid-d:50', 'uid-e:60']);
  assert.equal(stage.refusedFloors, 2);
  assert.equal(warnings.length, 2, warnings.join('\n'));
  assert.match(
    warnings[0]!,
    /^took over: the previous leader's checkpoint in the Lease says deployments\.apps was delivered up to resourceVersion 999999999999, beyond the 150 the API server is at; refused .*Counted in kubediff_checkpoint_refused_total\.$/,
  );
  assert.match(
    warnings[1]!,
    /services was delivered up to resourceVersion 70, which the API server could not confirm; refused/,
  );

  // Live, after the takeover: no floor for the refused ones; the confirmed ones hold, and what they skip is counted.
  offer(event('deployments', 'apps/v1', '51', 'd'));
  offer(event('configmaps', 'v1', '94', 'a'));
  offer(event('configmaps', 'v1', '101', 'a'));
  assert.deepEqual(delivered.slice(3), ['uid-d:51', 'uid-a:101']);
  assert.equal(stage.skippedEvents, 2, 'secrets 180 held back, configmaps 94 live');
});

test('a takeover lost while its checkpoint is checked delivers nothing', async () => {
  let confirm: (rv: bigint) => void = () => {};
  const stage = new LeaderGate({
    log: silentLogger,
    check: { seen: () => undefined, current: () => new Promise((resolve) => (confirm = resolve)) },
  });
  const delivered: string[] = [];
  const enter = stage.connect((handover) => {
    if (handover.event) delivered.push(handover.event.id);
  });
  enter({ change: undefined, event: event('configmaps', 'v1', '5', 'a') });
  const taking = stage.startLeading(lease({ configmaps: '3' }));
  stage.stopLeading();
  confirm(10n);
  await taking;
  assert.equal(stage.isLeader, false);
  assert.deepEqual(delivered, []);
});
