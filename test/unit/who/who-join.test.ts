// src/who/who-join.ts with the audit source (src/who/audit/audit-match.ts): each change gets its audit
// record (exact by uid and resourceVersion, else nearest by name and time), waits for it at most waitMs,
// keeps its order, and the bounds hold.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ChangeEvent } from '../../../src/events/event.ts';
import type { Handover } from '../../../src/events/pipeline.ts';
import { EventFailures } from '../../../src/util/event-failures.ts';
import type { Logger } from '../../../src/util/log.ts';
import { type AuditRecord, AuditSource } from '../../../src/who/audit/audit-match.ts';
import { WhoJoin } from '../../../src/who/who-join.ts';
import { sampleEvent } from '../../helpers/events.ts';

const T0 = Date.parse('2026-11-22T10:31:07.412Z');

function record(overrides: Partial<AuditRecord> = {}): AuditRecord {
  return {
    auditID: 'a1',
    verb: 'patch',
    group: 'apps',
    resource: 'deployments',
    namespace: 'shop',
    name: 'web',
    uid: 'u1',
    resourceVersion: '5',
    user: { username: 'alice', groups: ['devs'] },
    userAgent: 'kubectl/v1.36.3 (linux/amd64) kubernetes/abc',
    sourceIPs: ['10.1.2.3'],
    time: T0,
    ...overrides,
  };
}

interface JoinOptions {
  waitMs: number;
  windowMs: number;
  maxPending: number;
  maxPendingBytes: number;
  maxRecords: number;
  retainMs: number;
}

function joinWith(options: Partial<JoinOptions> = {}, warnings: string[] = []) {
  let now = T0;
  const out: ChangeEvent[] = [];
  const changes: (string | undefined)[] = [];
  const log: Logger = { info: () => {}, debug: () => {}, warn: (message) => warnings.push(message) };
  const settings = {
    waitMs: 500,
    windowMs: 5_000,
    maxPending: 100,
    maxRecords: 100,
    retainMs: 60_000,
    ...options,
  };
  const audit = new AuditSource({ ...settings, log });
  const join = new WhoJoin({ ...settings, log, now: () => now }, [audit]);
  const enter = join.connect((handover: Handover) => {
    if (handover.event) out.push(handover.event);
    changes.push(handover.change?.object.name);
  });
  const send = (event: ChangeEvent, extra: Partial<Handover> = {}) =>
    enter({
      change: {
        kind: 'updated',
        type: { group: 'apps', version: 'v1', resource: 'deployments', kind: 'Deployment', namespaced: true },
        object: { name: event.object.name },
      } as unknown as Handover['change'],
      event,
      ...extra,
    });
  return {
    join,
    offer: (records: AuditRecord[]) => join.offer(audit, records),
    stats: () => ({ ...join.stats(), ...audit.stats() }),
    out,
    changes,
    send,
    advance: (ms: number) => {
      now += ms;
    },
  };
}

test('a record that came first joins its change at once, exactly, and the event keeps its field order', () => {
  const j = joinWith();
  j.offer([record()]);
  j.send(sampleEvent());
  assert.equal(j.out.length, 1);
  const event = j.out[0] as ChangeEvent;
  assert.deepEqual(event.by, {
    user: { username: 'alice', groups: ['devs'] },
    userAgent: 'kubectl/v1.36.3 (linux/amd64) kubernetes/abc',
    sourceIPs: ['10.1.2.3'],
    auditID: 'a1',
    match: 'exact',
  });
  assert.deepEqual(Object.keys(event), ['id', 'type', 'time', 'cluster', 'object', 'by', 'changes']);
  assert.equal(j.stats().joinedExact, 1);
  assert.equal(j.stats().records, 0);
  j.join.close();
});

test('a change waits for a record that comes later, and those behind it wait in order', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const j = joinWith();
  j.send(sampleEvent());
  j.send(
    sampleEvent({
      id: 'u2:6',
      object: { name: 'api', uid: 'u2', resourceVersion: '6' },
      type: 'ADDED',
      changes: undefined,
    }),
  );
  assert.equal(j.out.length, 0, 'both wait: the second behind the first');
  j.offer([record({ uid: 'u2', resourceVersion: '6', name: 'api', verb: 'create', auditID: 'a2' })]);
  assert.equal(j.out.length, 0, 'the second has its record but the first still waits');
  j.offer([record()]);
  assert.deepEqual(
    j.out.map((event) => [event.id, event.by?.auditID, event.by?.match]),
    [
      ['u1:5', 'a1', 'exact'],
      ['u2:6', 'a2', 'exact'],
    ],
  );
  assert.deepEqual(j.changes, ['web', 'api'], 'the changes reach the observers with their events, in order');
  j.join.close();
});

test('without a record, a change goes on after waitMs without by, and the next one is not held longer', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const j = joinWith();
  j.send(sampleEvent());
  j.advance(200);
  j.send(sampleEvent({ id: 'u1:6', object: { resourceVersion: '6' } }));
  j.advance(300);
  t.mock.timers.tick(500);
  assert.deepEqual(
    j.out.map((event) => event.id),
    ['u1:5'],
  );
  assert.equal(j.out[0]?.by, undefined);
  j.advance(200);
  t.mock.timers.tick(200);
  assert.deepEqual(
    j.out.map((event) => event.id),
    ['u1:5', 'u1:6'],
  );
  assert.equal(j.stats().unmatched, 2);
  assert.equal(j.stats().pending, 0);
});

test('a record without response object (level Metadata) joins by name, verb and time: nearest', () => {
  const j = joinWith();
  const metadataOnly = record({ uid: undefined, resourceVersion: undefined });
  j.offer([
    { ...metadataOnly, auditID: 'far', time: T0 - 60_000 },
    { ...metadataOnly, auditID: 'create', verb: 'create' },
    { ...metadataOnly, auditID: 'near', time: T0 - 100 },
  ]);
  j.send(sampleEvent());
  assert.equal(j.out[0]?.by?.auditID, 'near');
  assert.equal(j.out[0]?.by?.match, 'nearest');
  j.join.close();
});

test('an update without a write (a CRD gained a default) names nobody: not even a nearest record of the same object', () => {
  const j = joinWith();
  j.offer([record({ uid: undefined, resourceVersion: undefined, auditID: 'near', time: T0 - 100 })]);
  j.send(sampleEvent({ id: 'u1:9', object: { resourceVersion: '9' }, offline: true, cause: 'schema' }));
  assert.equal(j.out.length, 1);
  assert.equal(j.out[0]?.by, undefined);
  // The record is still there for the write it belongs to.
  j.send(sampleEvent());
  assert.equal(j.out[1]?.by?.auditID, 'near');
  j.join.close();
});

test('a record received twice (the API server and a peer) counts once: its copy names no later write', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const j = joinWith();
  const alice = record({ uid: undefined, resourceVersion: undefined, auditID: 'alice-1' });
  j.send(sampleEvent());
  j.offer([alice]);
  assert.equal(j.out[0]?.by?.user?.username, 'alice');
  j.offer([alice]);
  // Bob's write of the same object, a second later, before his record comes: alice's copy is no candidate.
  j.advance(1_000);
  j.send(
    sampleEvent({ id: 'u1:6', time: new Date(T0 + 1_000).toISOString(), object: { resourceVersion: '6' } }),
  );
  assert.equal(j.out.length, 1, 'it waits for its own record');
  j.offer([{ ...alice, auditID: 'bob-1', user: { username: 'bob', groups: [] }, time: T0 + 1_000 }]);
  assert.deepEqual(
    j.out.map((event) => event.by?.user?.username),
    ['alice', 'bob'],
  );
  assert.equal(j.stats().recordsDuplicate, 1);
  j.join.close();
});

test('a record of another write of the same object (another resourceVersion) is not taken', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const j = joinWith();
  j.offer([record({ resourceVersion: '4', auditID: 'no-op apply' })]);
  j.send(sampleEvent());
  j.advance(500);
  t.mock.timers.tick(500);
  assert.equal(j.out[0]?.by, undefined);
});

test('a DELETED joins the delete record of its uid exactly, whatever its resourceVersion', () => {
  const j = joinWith();
  j.offer([record({ verb: 'delete', resourceVersion: '4', auditID: 'del' })]);
  j.send(sampleEvent({ type: 'DELETED', changes: undefined, id: 'u1:9', object: { resourceVersion: '9' } }));
  assert.equal(j.out[0]?.by?.auditID, 'del');
  assert.equal(j.out[0]?.by?.match, 'exact');
  j.join.close();
});

test('offline events and the --initial inventory never wait', () => {
  const j = joinWith();
  j.send(sampleEvent({ offline: true }));
  j.send(sampleEvent({ id: 'u3:1', type: 'ADDED', changes: undefined, object: { uid: 'u3' } }), {
    change: {
      kind: 'added',
      initial: true,
      type: { group: 'apps', version: 'v1', resource: 'deployments', kind: 'Deployment', namespaced: true },
      object: { name: 'x' },
    } as unknown as Handover['change'],
  });
  assert.equal(j.out.length, 2);
  assert.equal(j.stats().pending, 0);
});

test('at maxPending the oldest change goes on at once; at maxRecords the oldest record is dropped; each logged once', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const warnings: string[] = [];
  const j = joinWith({ maxPending: 2, maxRecords: 2 }, warnings);
  for (let rv = 1; rv <= 4; rv++)
    j.send(sampleEvent({ id: `u1:${rv}`, object: { resourceVersion: String(rv) } }));
  assert.deepEqual(
    j.out.map((event) => event.id),
    ['u1:1', 'u1:2'],
  );
  assert.equal(j.stats().pending, 2);
  assert.equal(j.stats().releasedAtLimit, 2);
  j.offer([1, 2, 3].map((n) => record({ uid: `other${n}`, auditID: `r${n}` })));
  assert.equal(j.stats().records, 2);
  assert.equal(j.stats().recordsDropped, 1);
  assert.equal(warnings.length, 2, warnings.join('\n'));
  j.join.close();
  assert.deepEqual(
    j.out.map((event) => event.id),
    ['u1:1', 'u1:2', 'u1:3', 'u1:4'],
    'close sends on what waits',
  );
});

test('few large changes: at maxPendingBytes the oldest go on at once, counted and logged once; the last one always waits', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const warnings: string[] = [];
  // A change of about 100 KiB each (a large ConfigMap's diff); 250 KiB may wait, far below the count.
  const j = joinWith({ maxPending: 10_000, maxPendingBytes: 250 * 1024 }, warnings);
  const large = (rv: number) =>
    sampleEvent({
      id: `u1:${rv}`,
      object: { resourceVersion: String(rv) },
      changes: [{ op: 'replace', path: '/data/blob', from: 'x', to: 'y'.repeat(100 * 1024) }],
    });
  for (let rv = 1; rv <= 5; rv++) j.send(large(rv));
  // Two wait (about 200 KiB); each third one pushed the oldest on.
  assert.deepEqual(
    j.out.map((event) => [event.id, event.by]),
    [
      ['u1:1', undefined],
      ['u1:2', undefined],
      ['u1:3', undefined],
    ],
  );
  assert.equal(j.stats().pending, 2);
  assert.ok(j.stats().pendingBytes <= 250 * 1024, `${j.stats().pendingBytes} bytes wait`);
  assert.ok(j.stats().pendingBytes > 200 * 1024, 'each counts its size');
  assert.equal(j.stats().releasedAtLimit, 3);
  assert.deepEqual(warnings, [
    'who join: more than 250 KiB of changes wait for their audit record or admission review; the oldest go on at once without user. Counted in kubediff_who_pending_released_total; logged once.',
  ]);
  // Their records still join those that wait.
  j.offer([record({ resourceVersion: '4', auditID: 'a4' }), record({ resourceVersion: '5', auditID: 'a5' })]);
  assert.deepEqual(
    j.out.slice(3).map((event) => [event.id, event.by?.auditID]),
    [
      ['u1:4', 'a4'],
      ['u1:5', 'a5'],
    ],
  );
  assert.equal(j.stats().pendingBytes, 0);
  // One change larger than the bound alone waits its time: the bound never sends on the last one.
  j.send(
    sampleEvent({
      id: 'u1:6',
      object: { resourceVersion: '6' },
      changes: [{ op: 'replace', path: '/data/blob', from: 'x', to: 'z'.repeat(300 * 1024) }],
    }),
  );
  assert.equal(j.stats().pending, 1);
  assert.equal(j.stats().releasedAtLimit, 3);
  j.join.close();
});

test('records expire after retainMs', () => {
  const j = joinWith({ retainMs: 1_000 });
  j.offer([record({ uid: 'gone' })]);
  j.advance(1_001);
  j.offer([]);
  assert.equal(j.stats().records, 0);
  j.join.close();
});

test('matched records behind an unmatched one are let go: at most 2 × maxRecords held, whatever the order', () => {
  const j = joinWith({ maxRecords: 100 });
  // The head: a record whose change never comes (kept for retainMs, 60 s).
  j.offer([record({ uid: 'never', auditID: 'head' })]);
  // Then 10,000 writes whose record comes before their change: each is kept, then matched.
  for (let n = 1; n <= 10_000; n++) {
    j.offer([record({ uid: `u${n}`, auditID: `r${n}`, resourceVersion: '1' })]);
    j.send(sampleEvent({ id: `u${n}:1`, object: { uid: `u${n}`, resourceVersion: '1' } }));
    assert.ok(j.stats().held <= 200, `held ${j.stats().held} after ${n}`);
  }
  assert.equal(j.stats().joinedExact, 10_000);
  assert.equal(j.stats().records, 1, 'the head is still kept');
  assert.equal(j.stats().recordsDropped, 0);
  j.join.close();
});

test('a change that fails after the join is reported under handler; the changes behind it still go on', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const warnings: string[] = [];
  const log: Logger = { info: () => {}, debug: () => {}, warn: (message) => warnings.push(message) };
  const failures = new EventFailures(log);
  let now = T0;
  const audit = new AuditSource({ windowMs: 5_000, maxRecords: 100, retainMs: 60_000, log });
  const join = new WhoJoin({ waitMs: 500, maxPending: 100, failures, log, now: () => now }, [audit]);
  const out: string[] = [];
  const enter = join.connect((handover: Handover) => {
    // A stage after the join with a bug for one object.
    if (handover.event?.object.name === 'web') throw new TypeError('a bug of a later stage');
    if (handover.event) out.push(`${handover.event.object.name} by ${handover.event.by?.user?.username}`);
  });
  const change = (event: ChangeEvent): Handover => ({
    change: { kind: 'updated', object: { name: event.object.name } } as unknown as Handover['change'],
    event,
  });
  enter(change(sampleEvent()));
  enter(change(sampleEvent({ id: 'u2:6', object: { name: 'api', uid: 'u2', resourceVersion: '6' } })));
  // Records come from a webhook's request: were the exception not contained, it would end the process.
  join.offer(audit, [record(), record({ uid: 'u2', resourceVersion: '6', name: 'api', auditID: 'a2' })]);
  assert.deepEqual(out, ['api by alice']);
  // And from the join's timer.
  enter(change(sampleEvent({ id: 'u1:7', object: { resourceVersion: '7' } })));
  enter(change(sampleEvent({ id: 'u3:1', object: { name: 'db', uid: 'u3', resourceVersion: '1' } })));
  now += 500;
  t.mock.timers.tick(500);
  assert.deepEqual(out, ['api by alice', 'db by undefined']);
  assert.equal(failures.count('handler'), 2);
  assert.match(
    warnings.join('\n'),
    /^passing on a change after the who join failed for deployments\.apps shop\/web \(uid u1, resourceVersion 5\): TypeError: a bug of a later stage; it is not reported\./m,
  );
  join.close();
});
