// src/events/admission-match.ts in the join (src/events/who-join.ts): a review names the change of its
// uid whose previous resourceVersion is its old one (a CREATE its ADDED), exactly when its digest is the
// stored object's; reviews of writes that failed never name one; a forged review cannot rename a write,
// only make it ambiguous; reviews received twice count once; with the audit source too, the ranks decide.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type AdmissionRecord, AdmissionSource } from '../../../src/events/admission-match.ts';
import { type AuditRecord, AuditSource } from '../../../src/events/audit-match.ts';
import type { ChangeEvent } from '../../../src/events/event.ts';
import { objectDigest } from '../../../src/events/object-digest.ts';
import type { Handover } from '../../../src/events/pipeline.ts';
import { RecordStore } from '../../../src/events/record-store.ts';
import { WhoJoin } from '../../../src/events/who-join.ts';
import type { JsonObject } from '../../../src/kube/types.ts';
import type { Logger } from '../../../src/util/log.ts';
import { sampleEvent } from '../../helpers/events.ts';
import { deployments } from '../../helpers/resource-types.ts';

const T0 = Date.parse('2026-11-22T10:31:07.412Z');
const quiet: Logger = { info: () => {}, debug: () => {}, warn: () => {} };

/** The stored (normalized) object of each version. */
const stored = (replicas: number): JsonObject => ({
  metadata: { name: 'web', namespace: 'shop', uid: 'u1' },
  spec: { replicas },
});

function review(overrides: Partial<AdmissionRecord> = {}): AdmissionRecord {
  return {
    reviewUID: `r-${Math.random()}`,
    operation: 'UPDATE',
    group: 'apps',
    resource: 'deployments',
    namespace: 'shop',
    name: 'web',
    uid: 'u1',
    oldResourceVersion: '4',
    digest: objectDigest(stored(5)),
    user: { username: 'bob', groups: ['devs'] },
    time: T0,
    ...overrides,
  };
}

function joinWith(options: { audit?: boolean; waitMs?: number; maxRecords?: number } = {}) {
  let now = T0;
  const out: ChangeEvent[] = [];
  const admission = new AdmissionSource({
    maxRecords: options.maxRecords ?? 100,
    retainMs: 60_000,
    log: quiet,
  });
  const audit = new AuditSource({ windowMs: 5_000, maxRecords: 100, retainMs: 60_000, log: quiet });
  const join = new WhoJoin({ waitMs: options.waitMs ?? 500, maxPending: 100, log: quiet, now: () => now }, [
    ...(options.audit ? [audit] : []),
    admission,
  ]);
  const enter = join.connect((handover: Handover) => {
    if (handover.event) out.push(handover.event);
  });
  /** An UPDATED from resourceVersion 4 to 5 (replicas 5), unless said otherwise. */
  const send = (
    event: ChangeEvent = sampleEvent(),
    change: { kind?: 'added' | 'updated' | 'deleted'; previous?: string; object?: JsonObject } = {},
  ) => {
    const kind = change.kind ?? 'updated';
    enter({
      change: {
        kind,
        type: deployments,
        object: {
          key: 'shop/web',
          namespace: 'shop',
          name: 'web',
          uid: 'u1',
          resourceVersion: event.object.resourceVersion,
          object: change.object ?? stored(5),
        },
        ...(kind === 'added' ? {} : { previousResourceVersion: change.previous ?? '4' }),
      },
      event,
    });
  };
  return {
    join,
    out,
    send,
    reviews: (...records: AdmissionRecord[]) => join.offer(admission, records),
    audits: (...records: AuditRecord[]) => join.offer(audit, records),
    stats: () => ({ ...join.stats(), ...admission.stats() }),
    advance: (ms: number) => {
      now += ms;
    },
  };
}

test('a review of the write names its change exactly: uid and previous version, its digest the stored object', () => {
  const j = joinWith();
  j.reviews(review({ reviewUID: 'r1' }));
  j.send();
  assert.deepEqual(j.out[0]?.by, {
    user: { username: 'bob', groups: ['devs'] },
    reviewUID: 'r1',
    match: 'exact',
  });
  assert.deepEqual(Object.keys(j.out[0] as object), [
    'id',
    'type',
    'time',
    'cluster',
    'object',
    'by',
    'changes',
  ]);
  assert.equal(j.stats().joinedExact, 1);
  assert.equal(j.stats().records, 0);
  j.join.close();
});

test('a change that comes first waits for its review; a CREATE names the ADDED of its uid', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const j = joinWith();
  const added = sampleEvent({
    id: 'u1:4',
    type: 'ADDED',
    changes: undefined,
    object: { resourceVersion: '4' },
  });
  j.send(added, { kind: 'added', object: stored(2) });
  assert.equal(j.out.length, 0, 'it waits');
  j.reviews(
    review({
      operation: 'CREATE',
      oldResourceVersion: undefined,
      digest: objectDigest(stored(2)),
      user: { username: 'alice' },
    }),
  );
  assert.equal(j.out[0]?.by?.user?.username, 'alice');
  assert.equal(j.out[0]?.by?.match, 'exact');
  j.join.close();
});

test('reviews of writes that failed, of another version, or of a dry run never name the change', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const j = joinWith();
  j.reviews(
    // Refused by another webhook after this one allowed it: same uid and old version, another object.
    review({ user: { username: 'refused' }, digest: objectDigest(stored(9)) }),
    // A write from an older version (a retry's stale attempt).
    review({ user: { username: 'stale' }, oldResourceVersion: '3' }),
    // A CREATE's review cannot name an UPDATED.
    review({ user: { username: 'creator' }, operation: 'CREATE', oldResourceVersion: undefined }),
  );
  j.send();
  j.advance(500);
  t.mock.timers.tick(500);
  assert.equal(j.out[0]?.by, undefined);
  assert.equal(j.stats().unmatched, 1);
});

test('a subresource write (scale) is named through the uid; a verified review beats an unverifiable one', () => {
  const j = joinWith();
  j.reviews(review({ subresource: 'scale', digest: undefined, user: { username: 'scaler' } }));
  j.send();
  assert.deepEqual([j.out[0]?.by?.user?.username, j.out[0]?.by?.match], ['scaler', 'exact']);
  j.reviews(
    review({ oldResourceVersion: '5', digest: objectDigest(stored(6)), user: { username: 'bob' } }),
    // A failed scale from the same version: cannot be checked, and loses to the verified review.
    review({
      oldResourceVersion: '5',
      subresource: 'scale',
      digest: undefined,
      user: { username: 'mallory' },
    }),
  );
  j.send(sampleEvent({ id: 'u1:6', object: { resourceVersion: '6' } }), { previous: '5', object: stored(6) });
  assert.equal(j.out[1]?.by?.user?.username, 'bob');
  j.join.close();
});

test('forged reviews: a wrong object names nobody new; the exact object or an unverifiable one makes it ambiguous, never renamed', () => {
  const j = joinWith();
  // Posted before the write, for the version the object has now.
  j.reviews(review({ user: { username: 'mallory' }, digest: objectDigest(stored(7)) }), review());
  j.send();
  assert.deepEqual([j.out[0]?.by?.user?.username, j.out[0]?.by?.match], ['bob', 'exact']);
  // A forger who predicted the stored object exactly: two users for one write.
  j.reviews(
    review({ oldResourceVersion: '5', digest: objectDigest(stored(6)), user: { username: 'mallory' } }),
    review({ oldResourceVersion: '5', digest: objectDigest(stored(6)) }),
  );
  j.send(sampleEvent({ id: 'u1:6', object: { resourceVersion: '6' } }), { previous: '5', object: stored(6) });
  assert.deepEqual(j.out[1]?.by, { match: 'ambiguous' });
  // A forged scale review beside a real one.
  j.reviews(
    review({
      oldResourceVersion: '6',
      subresource: 'scale',
      digest: undefined,
      user: { username: 'mallory' },
    }),
    review({ oldResourceVersion: '6', subresource: 'scale', digest: undefined }),
  );
  j.send(sampleEvent({ id: 'u1:7', object: { resourceVersion: '7' } }), { previous: '6', object: stored(7) });
  assert.deepEqual(j.out[2]?.by, { match: 'ambiguous' });
  assert.equal(j.stats().joinedAmbiguous, 2);
  // A forgery after the change went by names nothing, and the reviews of that version are gone.
  j.reviews(
    review({
      oldResourceVersion: '6',
      subresource: 'scale',
      digest: undefined,
      user: { username: 'mallory' },
    }),
  );
  assert.equal(j.out.length, 3);
  assert.ok(j.out.every((event) => event.by?.user?.username !== 'mallory'));
  j.join.close();
});

test('the same review received twice (from the API server and from a peer) is one review', () => {
  const j = joinWith();
  j.reviews(review({ reviewUID: 'same' }), review({ reviewUID: 'same' }));
  assert.equal(j.stats().records, 1);
  assert.equal(j.stats().recordsSuperseded, 1);
  j.send();
  assert.equal(j.out[0]?.by?.match, 'exact');
  j.join.close();
});

test('DELETE: a graceful one names the UPDATED that sets deletionTimestamp, the last one names the DELETED', () => {
  const j = joinWith();
  j.reviews(review({ operation: 'DELETE', digest: undefined, user: { username: 'alice' } }));
  j.send();
  assert.equal(j.out[0]?.by?.user?.username, 'alice');
  j.reviews(
    review({
      operation: 'DELETE',
      oldResourceVersion: '5',
      digest: undefined,
      user: { username: 'kubelet' },
    }),
    // A failed update from the same version loses to the DELETE.
    review({ oldResourceVersion: '5', user: { username: 'late' } }),
  );
  j.send(sampleEvent({ id: 'u1:8', type: 'DELETED', changes: undefined, object: { resourceVersion: '8' } }), {
    kind: 'deleted',
    previous: '5',
  });
  assert.deepEqual([j.out[1]?.by?.user?.username, j.out[1]?.by?.match], ['kubelet', 'exact']);
  assert.equal(j.stats().records, 0, 'a deleted object leaves no review behind');
  j.join.close();
});

test('both sources: an exact audit record ranks first, then an exact review, then a nearest audit record', () => {
  const j = joinWith({ audit: true });
  const auditRecord = (overrides: Partial<AuditRecord>): AuditRecord => ({
    auditID: 'a1',
    verb: 'patch',
    group: 'apps',
    resource: 'deployments',
    namespace: 'shop',
    name: 'web',
    user: { username: 'audited' },
    time: T0,
    ...overrides,
  });
  j.audits(auditRecord({ uid: 'u1', resourceVersion: '5' }));
  j.reviews(review());
  j.send();
  assert.equal(j.out[0]?.by?.user?.username, 'audited');
  j.audits(auditRecord({ auditID: 'a2' }));
  j.reviews(review({ oldResourceVersion: '5', digest: objectDigest(stored(6)) }));
  j.send(sampleEvent({ id: 'u1:6', object: { resourceVersion: '6' } }), { previous: '5', object: stored(6) });
  assert.deepEqual([j.out[1]?.by?.user?.username, j.out[1]?.by?.match], ['bob', 'exact']);
  j.join.close();
});

test('reviews that named their change are let go behind one still waiting: at most 2 × maxRecords are held', () => {
  const store = new RecordStore<AdmissionRecord>({
    maxRecords: 10,
    retainMs: 60_000,
    uidOf: (record) => record.uid,
    nameKeyOf: () => undefined,
    describe: { records: 'reviews', setting: 'admission.maxRecords', metric: 'm' },
    log: quiet,
  });
  // One review that never names a change, then 1,000 that do, one after the other.
  store.add(review({ uid: 'failed-write' }), T0);
  for (let n = 0; n < 1_000; n++) {
    store.add(review({ uid: `u${n}` }), T0);
    for (const kept of [...store.byUid(`u${n}`)]) store.use(kept);
    assert.ok(store.held <= 20, `${store.held} held after ${n + 1} named`);
  }
  assert.equal(store.size, 1);
});

test('reviews are bounded: at maxRecords the oldest go, and reviews that name nothing expire', () => {
  const j = joinWith({ maxRecords: 2 });
  j.reviews(review({ uid: 'a' }), review({ uid: 'b' }), review({ uid: 'c' }));
  assert.equal(j.stats().records, 2);
  assert.equal(j.stats().recordsDropped, 1);
  j.advance(60_000);
  j.reviews();
  assert.equal(j.stats().records, 0);
  assert.equal(j.stats().recordsExpired, 2);
  j.join.close();
});
