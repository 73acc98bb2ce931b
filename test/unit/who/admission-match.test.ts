// src/who/admission/admission-match.ts in the join (src/who/who-join.ts): a review names the change of its
// uid whose previous resourceVersion is its old one (a CREATE its ADDED) when its check passes (the digest
// of its object, a scale's replicas, a DELETE's old object) or it cannot be checked; reviews of writes
// that failed never name one; a forged review cannot rename a write, only make it ambiguous, whether it
// passes its check or cannot be checked; reviews received twice count once; with the audit source too,
// an exact audit record wins and other candidates that disagree name nobody (who-source.ts, choose()).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ChangeEvent } from '../../../src/events/event.ts';
import type { Handover } from '../../../src/events/pipeline.ts';
import type { JsonObject } from '../../../src/kube/types.ts';
import type { Logger } from '../../../src/util/log.ts';
import { type AdmissionRecord, AdmissionSource } from '../../../src/who/admission/admission-match.ts';
import { objectDigest } from '../../../src/who/admission/object-digest.ts';
import { type AuditRecord, AuditSource } from '../../../src/who/audit/audit-match.ts';
import { RecordStore } from '../../../src/who/record-store.ts';
import { WhoJoin } from '../../../src/who/who-join.ts';
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
  const storedObject = (resourceVersion: string, object: JsonObject) => ({
    key: 'shop/web',
    namespace: 'shop',
    name: 'web',
    uid: 'u1',
    resourceVersion,
    object,
  });
  /**
   * An UPDATED from resourceVersion 4 (replicas 4) to 5 (replicas 5), unless said otherwise; a DELETED's
   * `object` is its last state.
   */
  const send = (
    event: ChangeEvent = sampleEvent(),
    change: {
      kind?: 'added' | 'updated' | 'deleted';
      previous?: string;
      object?: JsonObject;
      before?: JsonObject;
    } = {},
  ) => {
    const kind = change.kind ?? 'updated';
    const previous = change.previous ?? '4';
    enter({
      change: {
        kind,
        type: deployments,
        object: storedObject(event.object.resourceVersion, change.object ?? stored(5)),
        ...(kind === 'added' ? {} : { previousResourceVersion: previous }),
        ...(kind === 'updated' ? { previous: storedObject(previous, change.before ?? stored(4)) } : {}),
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

test('a scale is checked by its replicas against the new object; one that cannot be checked still names its write', () => {
  const j = joinWith();
  j.reviews(
    review({ subresource: 'scale', digest: undefined, replicas: 5, user: { username: 'scaler' } }),
    // A failed scale from the same version, to other replicas: of another write.
    review({ subresource: 'scale', digest: undefined, replicas: 9, user: { username: 'failed' } }),
  );
  j.send();
  assert.deepEqual([j.out[0]?.by?.user?.username, j.out[0]?.by?.match], ['scaler', 'exact']);
  // A custom resource's scale (its replicas may be anywhere): nothing to check it by, and alone it names.
  j.reviews(
    review({ oldResourceVersion: '5', subresource: 'scale', digest: undefined, user: { username: 'crd' } }),
  );
  j.send(sampleEvent({ id: 'u1:6', object: { resourceVersion: '6' } }), { previous: '5', object: stored(6) });
  assert.deepEqual([j.out[1]?.by?.user?.username, j.out[1]?.by?.match], ['crd', 'exact']);
  // The new object's replicas not stored (ignored, redacted): the scale cannot be checked, not refuted.
  j.reviews(review({ oldResourceVersion: '6', subresource: 'scale', digest: undefined, replicas: 3 }));
  j.send(sampleEvent({ id: 'u1:7', object: { resourceVersion: '7' } }), {
    previous: '6',
    object: { metadata: { name: 'web', uid: 'u1' }, spec: {} },
  });
  assert.deepEqual([j.out[2]?.by?.user?.username, j.out[2]?.by?.match], ['bob', 'exact']);
  j.join.close();
});

test('issue 36: a forged UPDATE whose digest is the stored object does not outrank a real scale: ambiguous', () => {
  const j = joinWith();
  // The forger copied the object and predicted the replicas; bob's real scale passes its check too.
  j.reviews(
    review({ digest: objectDigest(stored(5)), user: { username: 'alice' } }),
    review({ subresource: 'scale', digest: undefined, replicas: 5, user: { username: 'bob' } }),
  );
  j.send();
  assert.deepEqual(j.out[0]?.by, { match: 'ambiguous' });
  assert.equal(j.stats().joinedAmbiguous, 1);
  j.join.close();
});

test('a review that passes its check never wins against one that cannot be checked: ambiguous', () => {
  const j = joinWith();
  // The real write's review cannot be checked (a status write, another API version); a forger
  // predicted the stored object exactly.
  j.reviews(
    review({ subresource: 'status', digest: undefined, user: { username: 'bob' } }),
    review({ digest: objectDigest(stored(5)), user: { username: 'alice' } }),
  );
  j.send();
  assert.deepEqual(j.out[0]?.by, { match: 'ambiguous' });
  // The same username with other groups is someone else: a forger cannot add groups to a real user.
  j.reviews(
    review({
      oldResourceVersion: '5',
      digest: objectDigest(stored(6)),
      user: { username: 'bob', groups: ['devs'] },
    }),
    review({
      oldResourceVersion: '5',
      digest: objectDigest(stored(6)),
      user: { username: 'bob', groups: ['system:masters'] },
    }),
  );
  j.send(sampleEvent({ id: 'u1:6', object: { resourceVersion: '6' } }), { previous: '5', object: stored(6) });
  assert.deepEqual(j.out[1]?.by, { match: 'ambiguous' });
  // Reviews that agree name their user, by the review that passed its check.
  j.reviews(
    review({ reviewUID: 'unchecked', oldResourceVersion: '6', subresource: 'status', digest: undefined }),
    review({ reviewUID: 'checked', oldResourceVersion: '6', digest: objectDigest(stored(7)) }),
  );
  j.send(sampleEvent({ id: 'u1:7', object: { resourceVersion: '7' } }), { previous: '6', object: stored(7) });
  assert.deepEqual([j.out[2]?.by?.user?.username, j.out[2]?.by?.reviewUID], ['bob', 'checked']);
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

test('DELETE: its old object is checked against the state before the UPDATED it makes, and the last state of a DELETED', () => {
  const j = joinWith();
  j.reviews(
    review({
      operation: 'DELETE',
      digest: undefined,
      oldDigest: objectDigest(stored(4)),
      user: { username: 'alice' },
    }),
    // A DELETE from the same version whose old object is another: forged.
    review({
      operation: 'DELETE',
      digest: undefined,
      oldDigest: objectDigest(stored(3)),
      user: { username: 'forger' },
    }),
  );
  j.send();
  assert.deepEqual([j.out[0]?.by?.user?.username, j.out[0]?.by?.match], ['alice', 'exact']);
  j.reviews(
    review({
      operation: 'DELETE',
      oldResourceVersion: '5',
      digest: undefined,
      oldDigest: objectDigest(stored(5)),
      user: { username: 'kubelet' },
    }),
    // A failed update from the same version: its object is not the deleted one (the DELETED carries
    // none), so it cannot be checked; it names someone else: nobody is named.
    review({ oldResourceVersion: '5', user: { username: 'late' } }),
  );
  const deletedAt = (resourceVersion: string, previous: string, last: JsonObject) =>
    j.send(
      sampleEvent({
        id: `u1:${resourceVersion}`,
        type: 'DELETED',
        changes: undefined,
        object: { resourceVersion },
      }),
      {
        kind: 'deleted',
        previous,
        object: last,
      },
    );
  deletedAt('8', '5', stored(5));
  assert.deepEqual(j.out[1]?.by, { match: 'ambiguous' });
  assert.equal(j.stats().records, 0, 'a deleted object leaves no review behind');
  j.join.close();
});

test('issue 36: a forged DELETE that carries only the uid and version does not rename the finalizer removal', () => {
  const j = joinWith();
  const beingDeleted: JsonObject = {
    metadata: {
      name: 'web',
      namespace: 'shop',
      uid: 'u1',
      deletionTimestamp: '2026-11-22T10:31:07Z',
      finalizers: ['x/y'],
    },
    spec: { replicas: 5 },
  };
  const deleted = () =>
    j.send(
      sampleEvent({ id: 'u1:9', type: 'DELETED', changes: undefined, object: { resourceVersion: '9' } }),
      {
        kind: 'deleted',
        previous: '5',
        object: beingDeleted,
      },
    );
  j.reviews(
    // What the forger posted: a DELETE review whose old object is the uid and resourceVersion alone.
    review({
      operation: 'DELETE',
      oldResourceVersion: '5',
      digest: undefined,
      oldDigest: objectDigest({ metadata: { uid: 'u1' } }),
      user: { username: 'alice' },
    }),
    // mallory's update that removed the last finalizer.
    review({ oldResourceVersion: '5', digest: objectDigest(stored(5)), user: { username: 'mallory' } }),
  );
  deleted();
  assert.deepEqual([j.out[0]?.by?.user?.username, j.out[0]?.by?.match], ['mallory', 'exact']);
  // A forger who copied the whole object passes the check, and disagrees with mallory: nobody named.
  const again = joinWith();
  again.reviews(
    review({
      operation: 'DELETE',
      oldResourceVersion: '5',
      digest: undefined,
      oldDigest: objectDigest(beingDeleted),
      user: { username: 'alice' },
    }),
    review({ oldResourceVersion: '5', user: { username: 'mallory' } }),
  );
  again.send(
    sampleEvent({ id: 'u1:9', type: 'DELETED', changes: undefined, object: { resourceVersion: '9' } }),
    {
      kind: 'deleted',
      previous: '5',
      object: beingDeleted,
    },
  );
  assert.deepEqual(again.out[0]?.by, { match: 'ambiguous' });
  // A DELETE kubediff could not digest the old object of (another version; a peer's older record): it
  // names only when nothing disagrees.
  const alone = joinWith();
  alone.reviews(
    review({ operation: 'DELETE', oldResourceVersion: '5', digest: undefined, user: { username: 'carol' } }),
  );
  alone.send(
    sampleEvent({ id: 'u1:9', type: 'DELETED', changes: undefined, object: { resourceVersion: '9' } }),
    {
      kind: 'deleted',
      previous: '5',
      object: beingDeleted,
    },
  );
  assert.deepEqual([alone.out[0]?.by?.user?.username, alone.out[0]?.by?.match], ['carol', 'exact']);
  for (const each of [j, again, alone]) each.join.close();
});

test('a stored object that cannot be digested (nested too deep): its reviews cannot be checked, nothing throws', () => {
  const j = joinWith();
  let deep: JsonObject = {};
  for (let n = 0; n < 200_000; n++) deep = { a: deep };
  const object: JsonObject = { metadata: { name: 'web', uid: 'u1' }, spec: deep };
  j.reviews(review({ digest: 'another' }));
  j.send(sampleEvent(), { object });
  assert.deepEqual([j.out[0]?.by?.user?.username, j.out[0]?.by?.match], ['bob', 'exact']);
  j.join.close();
});

test('both sources: an exact audit record wins; other candidates that disagree name nobody; agreeing ones by rank', () => {
  const j = joinWith({ audit: true });
  const auditRecord = (overrides: Partial<AuditRecord>): AuditRecord => ({
    auditID: `a-${Math.random()}`,
    verb: 'patch',
    group: 'apps',
    resource: 'deployments',
    namespace: 'shop',
    name: 'web',
    user: { username: 'audited' },
    time: T0,
    ...overrides,
  });
  const update = (n: number) => {
    j.send(sampleEvent({ id: `u1:${n}`, object: { resourceVersion: String(n) } }), {
      previous: String(n - 1),
      object: stored(n),
    });
    return j.out.at(-1)?.by;
  };
  const checked = (n: number, username: string) =>
    review({ oldResourceVersion: String(n - 1), digest: objectDigest(stored(n)), user: { username } });
  const unchecked = (n: number, username: string) =>
    review({
      oldResourceVersion: String(n - 1),
      subresource: 'status',
      digest: undefined,
      user: { username },
    });
  // An exact audit record (the API server's own record of this resourceVersion) wins over a review.
  j.audits(auditRecord({ uid: 'u1', resourceVersion: '5' }));
  j.reviews(checked(5, 'bob'));
  assert.deepEqual([update(5)?.user?.username, j.out[0]?.by?.match], ['audited', 'exact']);
  // A checked review and a nearest audit record that agree: the review, exact.
  j.audits(auditRecord({ user: { username: 'bob' } }));
  j.reviews(checked(6, 'bob'));
  assert.deepEqual([update(6)?.user?.username, j.out[1]?.by?.match], ['bob', 'exact']);
  // A checked review and a nearest audit record that disagree: nobody.
  j.audits(auditRecord({}));
  j.reviews(checked(7, 'bob'));
  assert.deepEqual(update(7), { match: 'ambiguous' });
  // A review that cannot be checked ranks below a nearest record: when they agree, the audit record's.
  j.audits(auditRecord({ user: { username: 'bob' }, userAgent: 'kubectl' }));
  j.reviews(unchecked(8, 'bob'));
  assert.deepEqual([update(8)?.userAgent, j.out[3]?.by?.match], ['kubectl', 'nearest']);
  // …and when they disagree, nobody.
  j.audits(auditRecord({}));
  j.reviews(unchecked(9, 'bob'));
  assert.deepEqual(update(9), { match: 'ambiguous' });
  // The audit record of an impersonated write compares as the user the write acted as.
  j.audits(auditRecord({ user: { username: 'alice' }, impersonatedUser: { username: 'bob' } }));
  j.reviews(checked(10, 'bob'));
  assert.equal(update(10)?.user?.username, 'bob');
  assert.equal(j.stats().joinedAmbiguous, 2);
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
