// New events while the page is open (src/ui/web/live.ts): merged into the timeline in view once each,
// a live window following them, rows counted, marks added up to the server's limit.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { EventSummary, Timeline } from '../../../src/state/timeline-reader.ts';
import { LIMITS } from '../../../src/ui/query.ts';
import { MAX_MARKS, mergeLiveEvents } from '../../../src/ui/web/live.ts';
import type { View } from '../../../src/ui/web/view.ts';

const T10 = Date.parse('2026-03-04T10:00:00.000Z');
const T11 = Date.parse('2026-03-04T11:00:00.000Z');

function event(seq: number, time: string, overrides: Partial<EventSummary> = {}): EventSummary {
  return {
    seq,
    id: `u${seq}:1`,
    time: `2026-03-04T${time}Z`,
    type: 'ADDED',
    resource: 'configmaps',
    kind: 'ConfigMap',
    namespace: 'shop',
    name: `cm-${seq}`,
    uid: `u${seq}`,
    changes: 0,
    ...overrides,
  };
}

function view(overrides: Partial<View> = {}): View {
  return {
    from: T10,
    to: T11,
    live: false,
    rows: 'namespace',
    filters: { cluster: '', namespace: '', kind: '', name: '', manager: '', user: '', path: '' },
    types: ['ADDED', 'UPDATED', 'DELETED'],
    ...overrides,
  };
}

function timeline(overrides: Partial<Timeline> = {}): Timeline {
  return {
    latestSeq: 10,
    from: '2026-03-04T10:00:00.000Z',
    to: '2026-03-04T11:00:00.000Z',
    total: 1,
    rows: [{ key: 'shop', label: 'shop', count: 1 }],
    marks: [event(10, '10:10:00')],
    ...overrides,
  };
}

describe('live events merged into the timeline', () => {
  it('each once: what is at or below the newest seq seen is skipped, in and across batches', () => {
    const data = timeline();
    const merged = mergeLiveEvents(data, view(), 10, [
      event(9, '10:20:00'),
      event(10, '10:20:00'),
      event(11, '10:20:00'),
      event(11, '10:20:00'),
      event(12, '10:21:00'),
    ]);
    assert.deepEqual(
      merged.shown.map((shown) => shown.seq),
      [11, 12],
    );
    assert.equal(merged.seen, 12);
    assert.equal(merged.refetch, false);
    assert.equal(data.total, 3);
    assert.deepEqual(data.rows, [{ key: 'shop', label: 'shop', count: 3 }]);
    assert.deepEqual(
      data.marks?.map((mark) => mark.seq),
      [10, 11, 12],
    );
    assert.deepEqual(mergeLiveEvents(data, view(), merged.seen, [event(12, '10:21:00')]).shown, []);
  });

  it('a fixed window: events outside it are seen but not shown, and change nothing', () => {
    const data = timeline();
    const fixed = view();
    const merged = mergeLiveEvents(data, fixed, 10, [event(11, '09:59:59'), event(12, '11:00:00')]);
    assert.deepEqual(merged, { seen: 12, shown: [], refetch: false });
    assert.equal(fixed.to, T11);
    assert.deepEqual(data, timeline());
  });

  it('a live window follows the newest event to a minute past it, and asks for the timeline again', () => {
    const live = view({ live: true });
    const merged = mergeLiveEvents(timeline(), live, 10, [event(11, '11:00:00'), event(12, '11:30:00')]);
    assert.equal(live.to, Date.parse('2026-03-04T11:31:00.000Z'));
    assert.equal(live.from, T10, 'the start stays: the server is asked again for the wider window');
    assert.deepEqual(
      merged.shown.map((shown) => shown.seq),
      [11, 12],
    );
    assert.equal(merged.refetch, true);
  });

  it('rows by kind: a new row labelled with the kind and resource, after the others', () => {
    const data = timeline({ rows: [{ key: 'configmaps', label: 'ConfigMap (configmaps)', count: 1 }] });
    mergeLiveEvents(data, view({ rows: 'kind' }), 10, [
      event(11, '10:20:00', { resource: 'deployments', kind: 'Deployment' }),
      event(12, '10:20:00'),
    ]);
    assert.deepEqual(data.rows, [
      { key: 'configmaps', label: 'ConfigMap (configmaps)', count: 2 },
      { key: 'deployments', label: 'Deployment (deployments)', count: 1 },
    ]);
  });

  it('marks up to the limit; beyond it, or when the timeline shows density, asks again', () => {
    assert.equal(MAX_MARKS, LIMITS.marks, "the server's limit of single marks");
    const marks = Array.from({ length: MAX_MARKS - 1 }, (_, index) => event(index + 1, '10:10:00'));
    const full = timeline({ marks, total: marks.length });
    const merged = mergeLiveEvents(full, view(), MAX_MARKS, [
      event(MAX_MARKS + 1, '10:20:00'),
      event(MAX_MARKS + 2, '10:20:00'),
    ]);
    assert.equal(full.marks?.length, MAX_MARKS);
    assert.equal(full.total, MAX_MARKS + 1);
    assert.equal(merged.refetch, true);

    const density = timeline({ marks: undefined, density: { bucketMs: 18_000, cells: [] } });
    const counted = mergeLiveEvents(density, view(), 10, [event(11, '10:20:00')]);
    assert.deepEqual(
      counted.shown.map((shown) => shown.seq),
      [11],
    );
    assert.equal(density.total, 2);
    assert.equal(counted.refetch, true);
  });
});
