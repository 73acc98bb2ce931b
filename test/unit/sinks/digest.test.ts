import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ChangeEvent, EventType } from '../../../src/events/event.ts';
import { Digest } from '../../../src/sinks/core/digest.ts';
import { EventQueue } from '../../../src/sinks/core/event-queue.ts';

let sequence = 0;
function event(
  type: EventType,
  resource: string,
  namespace: string | undefined,
  name = `obj-${++sequence}`,
): ChangeEvent {
  const [plural = resource, group] = resource.split(/\.(.*)/);
  const kinds: Record<string, string> = {
    pods: 'Pod',
    deployments: 'Deployment',
    configmaps: 'ConfigMap',
    namespaces: 'Namespace',
  };
  return {
    id: `${name}:${++sequence}`,
    type,
    time: new Date(Date.UTC(2026, 10, 22, 10, 0, sequence % 60)).toISOString(),
    cluster: 'prod-eu',
    object: {
      apiVersion: group ? `${group}/v1` : 'v1',
      kind: kinds[plural] ?? 'Thing',
      resource: plural,
      ...(namespace ? { namespace } : {}),
      name,
      uid: name,
      resourceVersion: String(sequence),
    },
    ...(type === 'UPDATED' ? { changes: [{ op: 'replace' as const, path: '/spec/x', from: 1, to: 2 }] } : {}),
  };
}

describe('digest', () => {
  it('counts by type and resource and summarizes like a person would', () => {
    const digest = new Digest({ retain: 3 });
    for (let i = 0; i < 30; i++) digest.add(event('ADDED', 'pods', 'shop'));
    for (let i = 0; i < 5; i++) digest.add(event('UPDATED', 'deployments.apps', 'shop'));
    digest.add(event('DELETED', 'configmaps', 'shop'));
    digest.add(event('DELETED', 'configmaps', 'shop'));
    assert.equal(digest.count, 37);
    assert.equal(
      digest.summary(),
      '37 changes in shop: 30 pods added, 5 deployments updated, 2 configmaps deleted',
    );
    assert.deepEqual(digest.byType(), { ADDED: 30, UPDATED: 5, DELETED: 2 });
    assert.equal(digest.events.length, 3, 'keeps only the most recent in full');
    assert.equal(digest.complete, false);
    assert.equal(digest.cluster, 'prod-eu');
  });

  it('uses the kind for one of a kind, and names where the changes happened', () => {
    const one = new Digest({ retain: 10 });
    one.add(event('UPDATED', 'deployments.apps', 'shop'));
    assert.equal(one.summary(), '1 change in shop: 1 deployment updated');

    const two = new Digest({ retain: 10 });
    two.add(event('ADDED', 'pods', 'shop'));
    two.add(event('ADDED', 'pods', 'web'));
    assert.equal(two.where(), 'in shop and web');

    const many = new Digest({ retain: 10 });
    for (const ns of ['a', 'b', 'c']) many.add(event('ADDED', 'pods', ns));
    many.add(event('ADDED', 'namespaces', undefined));
    assert.equal(many.where(), 'in 3 namespaces and cluster-wide');

    const cluster = new Digest({ retain: 10 });
    cluster.add(event('ADDED', 'namespaces', undefined));
    assert.equal(cluster.summary(), '1 change to cluster-scoped objects: 1 namespace added');
  });

  it('hands evicted events to onEvict, oldest first, and keeps counting them', () => {
    const evicted: string[] = [];
    const digest = new Digest({ retain: 2, onEvict: (e) => evicted.push(e.id) });
    const events = [1, 2, 3, 4].map(() => event('ADDED', 'pods', 'shop'));
    for (const e of events) digest.add(e);
    assert.deepEqual(evicted, [events[0]?.id, events[1]?.id]);
    assert.deepEqual(
      digest.events.map((e) => e.id),
      [events[2]?.id, events[3]?.id],
    );
    const payload = digest.toPayload();
    assert.equal(payload.kind, 'digest');
    assert.equal(payload.count, 4);
    assert.equal(payload.omitted, 2);
    assert.match(payload.id, /^digest:[0-9a-f-]{36}$/);
  });

  it('keeps at most retainBytes of events in full, but always the newest one', () => {
    const digest = new Digest({ retain: 100, retainBytes: 3_000 });
    const large = (): ChangeEvent => ({
      ...event('UPDATED', 'configmaps', 'shop'),
      changes: [{ op: 'add', path: '/data/x', to: 'z'.repeat(1_200) }],
    });
    for (let i = 0; i < 5; i++) digest.add(large());
    assert.equal(digest.count, 5);
    assert.equal(digest.events.length, 2);
    const tiny = new Digest({ retain: 100, retainBytes: 10 });
    tiny.add(large());
    assert.equal(tiny.events.length, 1);
  });

  it('merges another digest: counts add up, time span widens, retained events follow', () => {
    const a = new Digest({ retain: 10 });
    const b = new Digest({ retain: 10 });
    a.add(event('ADDED', 'pods', 'shop'));
    b.add(event('ADDED', 'pods', 'shop'));
    b.add(event('DELETED', 'pods', 'web'));
    a.merge(b);
    assert.equal(a.count, 3);
    assert.equal(a.events.length, 3);
    assert.equal(a.complete, true);
    assert.deepEqual(a.namespaces(), [
      ['shop', 2],
      ['web', 1],
    ]);
    assert.equal(a.summary(), '3 changes in shop and web: 2 pods added, 1 pod deleted');
  });
});

describe('event queue', () => {
  it('keeps events in order up to capacity, then folds the overflow into one digest at the tail', () => {
    const overflows: number[] = [];
    const queue = new EventQueue({ capacity: 4, digestRetain: 2, onOverflow: () => overflows.push(1) });
    const events = Array.from({ length: 10 }, () => event('ADDED', 'pods', 'shop'));
    const results = events.map((e) => queue.push(e));
    assert.deepEqual(results, ['queued', 'queued', 'queued', 'queued', ...Array(6).fill('folded')]);
    assert.equal(overflows.length, 1);
    assert.equal(queue.length, 5);
    assert.equal(queue.pendingEvents, 10);
    const taken = queue.takeEvents(10);
    assert.deepEqual(
      taken.map((e) => e.event.id),
      events.slice(0, 4).map((e) => e.id),
    );
    assert.equal(taken[0]?.json, JSON.stringify(events[0]), 'serialized once, for sending');
    const tail = queue.shift();
    assert.equal(tail?.kind, 'digest');
    assert.equal(tail?.kind === 'digest' && tail.digest.count, 6);
    assert.equal(queue.pendingEvents, 0);
  });

  it('keeps folding until the queue has drained to half, then queues individually again after the digest', () => {
    const queue = new EventQueue({ capacity: 4, digestRetain: 10 });
    for (let i = 0; i < 5; i++) queue.push(event('ADDED', 'pods', 'shop'));
    queue.shift(); // 3 left individually: still above half, so the next one is folded
    assert.equal(queue.push(event('ADDED', 'pods', 'shop')), 'folded');
    queue.shift(); // 2 left: at half
    assert.equal(queue.push(event('ADDED', 'pods', 'shop')), 'queued');
    const kinds: string[] = [];
    for (let entry = queue.shift(); entry; entry = queue.shift()) kinds.push(entry.kind);
    assert.deepEqual(kinds, ['event', 'event', 'digest', 'event']);
  });

  it('also folds when the waiting events exceed the byte budget; one huge event alone still fits', () => {
    const big = (): ChangeEvent => ({
      ...event('UPDATED', 'configmaps', 'shop'),
      changes: [{ op: 'replace', path: '/data/x', from: 'a'.repeat(4000), to: 'b'.repeat(4000) }],
    });
    const queue = new EventQueue({ capacity: 100, maxBytes: 20_000, digestRetain: 1 });
    assert.equal(queue.push(big()), 'queued');
    assert.equal(queue.push(big()), 'queued');
    assert.equal(queue.push(big()), 'folded');
    assert.ok(queue.individualBytes > 16_000 && queue.individualBytes <= 20_000);
    const huge = new EventQueue({ capacity: 100, maxBytes: 1_000, digestRetain: 1 });
    assert.equal(huge.push(big()), 'queued');
    assert.equal(huge.push(big()), 'folded');
  });

  it('takes at most max events and maxBytes of their JSON (UTF-8) for one request, always at least one', () => {
    const sized = (to: string): ChangeEvent => ({
      ...event('UPDATED', 'configmaps', 'shop'),
      changes: [{ op: 'replace', path: '/data/x', to }],
    });
    const queue = new EventQueue({ capacity: 100, digestRetain: 1 });
    // 'é' is one character and two bytes: the bound counts bytes.
    const events = [sized('é'.repeat(300)), sized('a'.repeat(300)), sized('a'.repeat(2000)), sized('a')];
    for (const e of events) queue.push(e);
    const bytes = (e: ChangeEvent) => Buffer.byteLength(JSON.stringify(e));
    const take = (max: number, maxBytes: number) => queue.takeEvents(max, maxBytes).map((e) => e.event.id);
    const [first, second] = events.map(bytes) as [number, number];
    // Counted in characters, the first two would fit in one byte less than their size.
    assert.deepEqual(take(10, first + second - 1), [events[0]?.id]);
    assert.deepEqual(take(10, second + 10), [events[1]?.id]);
    // One larger than the bound goes alone.
    assert.deepEqual(take(10, 100), [events[2]?.id]);
    assert.deepEqual(take(10, Number.POSITIVE_INFINITY), [events[3]?.id]);
  });

  it('drains everything for shutdown', () => {
    const queue = new EventQueue({ capacity: 2, digestRetain: 1 });
    for (let i = 0; i < 5; i++) queue.push(event('ADDED', 'pods', 'shop'));
    const rest = queue.drain();
    assert.equal(rest.length, 3);
    assert.equal(queue.pendingEvents, 0);
    assert.equal(queue.length, 0);
  });
});
