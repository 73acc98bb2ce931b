// The page's view (src/ui/web/view.ts): the address that holds it, read and written back, and the
// queries the page sends the API for it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  eventsQuery,
  filterParams,
  HOUR,
  panned,
  readView,
  timelineQuery,
  type View,
  viewSearch,
  windowLabel,
  zoomed,
} from '../../../src/ui/web/view.ts';

const NOW = Date.parse('2026-03-04T12:00:00.000Z');
const T10 = Date.parse('2026-03-04T10:00:00.000Z');
const T11 = Date.parse('2026-03-04T11:00:00.000Z');
const NO_FILTERS = { cluster: '', namespace: '', kind: '', name: '', manager: '', user: '', path: '' };
const ALL_TYPES = ['ADDED', 'UPDATED', 'DELETED'];

function view(overrides: Partial<View> = {}): View {
  return {
    from: T10,
    to: T11,
    live: false,
    rows: 'namespace',
    filters: { ...NO_FILTERS },
    types: [...ALL_TYPES],
    ...overrides,
  };
}

describe('reading the address', () => {
  it('an empty address: the last hour, live, ending a minute past now, every event', () => {
    assert.deepEqual(readView('', 0, NOW), {
      from: NOW + 60_000 - HOUR,
      to: NOW + 60_000,
      live: true,
      rows: 'namespace',
      filters: NO_FILTERS,
      types: ALL_TYPES,
    });
  });

  it('a live window ends a minute past the newest event when that is later than now', () => {
    const newest = NOW + 5_000;
    const read = readView('', newest, NOW);
    assert.equal(read.to, newest + 60_000);
    assert.equal(read.from, newest + 60_000 - HOUR);
  });

  it('a whole address: window, filters, types, rows and the object open at one event', () => {
    const search =
      '?namespace=shop&kind=deployments&manager=kubectl&type=UPDATED,DELETED' +
      '&from=2026-03-04T10:00:00.000Z&to=2026-03-04T11:00:00.000Z&rows=kind' +
      '&object.kind=deployments&object.namespace=shop&object.name=web&object.cluster=east&object.seq=42';
    assert.deepEqual(readView(search, 0, NOW), {
      from: T10,
      to: T11,
      live: false,
      rows: 'kind',
      filters: { ...NO_FILTERS, namespace: 'shop', kind: 'deployments', manager: 'kubectl' },
      types: ['UPDATED', 'DELETED'],
      object: { kind: 'deployments', namespace: 'shop', name: 'web', cluster: 'east', seq: 42 },
    });
  });

  it('what it does not know is left at the default', () => {
    const read = readView(
      '?type=CHANGED,ADDED&rows=cluster&from=yesterday&object.kind=pods&object.seq=-3',
      0,
      NOW,
    );
    assert.deepEqual(read.types, ['ADDED']);
    assert.equal(read.rows, 'namespace');
    assert.equal(read.from, NOW + 60_000 - HOUR, 'an unreadable from: the last hour');
    assert.equal(read.object, undefined, 'an object needs a kind and a name');
    const noSeq = readView('?object.kind=pods&object.name=p&object.seq=x', 0, NOW);
    assert.deepEqual(noSeq.object, { kind: 'pods', name: 'p' });
  });
});

describe('writing the address', () => {
  it('the default view is an empty address', () => {
    assert.equal(viewSearch(view({ from: NOW - HOUR, to: NOW, live: true })), '');
  });

  it('a fixed window, filters, some types, rows and the object, in a stable order', () => {
    const written = viewSearch(
      view({
        rows: 'kind',
        filters: { ...NO_FILTERS, cluster: 'east', path: '/spec/replicas' },
        types: ['UPDATED'],
        object: { kind: 'deployments', namespace: 'shop', name: 'web', cluster: 'east', seq: 42 },
      }),
    );
    assert.equal(
      written,
      'cluster=east&path=%2Fspec%2Freplicas&type=UPDATED' +
        '&from=2026-03-04T10%3A00%3A00.000Z&to=2026-03-04T11%3A00%3A00.000Z&rows=kind' +
        '&object.kind=deployments&object.namespace=shop&object.name=web&object.cluster=east&object.seq=42',
    );
  });

  it('a live window longer or shorter than an hour keeps its start only', () => {
    assert.equal(
      viewSearch(view({ from: NOW - 2 * HOUR, to: NOW, live: true })),
      'from=2026-03-04T10%3A00%3A00.000Z',
    );
  });

  it('reads back as the same view', () => {
    const end = NOW + 60_000;
    const views: View[] = [
      view(),
      view({ from: end - HOUR, to: end, live: true }),
      view({ from: end - 3 * HOUR, to: end, live: true, rows: 'kind' }),
      view({
        filters: { ...NO_FILTERS, namespace: 'a b&c', user: 'alice@example.com', name: 'web-1' },
        types: ['ADDED', 'DELETED'],
        object: { kind: 'configmaps', name: 'cm', seq: 7 },
      }),
      view({ object: { kind: 'namespaces', name: 'shop', cluster: 'west' } }),
    ];
    for (const written of views) assert.deepEqual(readView(`?${viewSearch(written)}`, 0, NOW), written);
  });
});

describe('the API queries', () => {
  const filtered = view({ filters: { ...NO_FILTERS, namespace: 'shop', user: 'bob' }, types: ['UPDATED'] });

  it('filters: only those set, and the types only when not all of them', () => {
    assert.equal(filterParams(filtered).toString(), 'namespace=shop&user=bob&type=UPDATED');
    assert.equal(filterParams(view()).toString(), '');
  });

  it('events: the filters, the window, a page of 100, older than a cursor when given', () => {
    const span = 'from=2026-03-04T10%3A00%3A00.000Z&to=2026-03-04T11%3A00%3A00.000Z';
    assert.equal(eventsQuery(filtered).toString(), `namespace=shop&user=bob&type=UPDATED&${span}&limit=100`);
    assert.equal(eventsQuery(view(), 1234).toString(), `${span}&limit=100&before=1234`);
  });

  it('timeline: the rows, and one bucket per 4 pixels, from 50 to 1,000', () => {
    const query = timelineQuery(view({ rows: 'kind' }), 1601);
    assert.equal(
      query.toString(),
      'from=2026-03-04T10%3A00%3A00.000Z&to=2026-03-04T11%3A00%3A00.000Z&rows=kind&buckets=400',
    );
    assert.equal(timelineQuery(view(), 100).get('buckets'), '50');
    assert.equal(timelineQuery(view(), 10_000).get('buckets'), '1000');
  });
});

describe('moving the window', () => {
  it('zooms around the middle', () => {
    assert.deepEqual(zoomed({ from: 1_000, to: 3_000 }, 0.5), { from: 1_500, to: 2_500 });
    assert.deepEqual(zoomed({ from: 1_000, to: 3_000 }, 2), { from: 0, to: 4_000 });
  });

  it('pans by a fraction of its length', () => {
    assert.deepEqual(panned({ from: 1_000, to: 3_000 }, -0.5), { from: 0, to: 2_000 });
    assert.deepEqual(panned({ from: 1_000, to: 3_000 }, 0.25), { from: 1_500, to: 3_500 });
  });

  it('names it in UTC, to the second', () => {
    assert.equal(windowLabel(view()), '2026-03-04 10:00:00 → 2026-03-04 11:00:00 UTC');
    assert.equal(
      windowLabel({ from: T10 + 1_500, to: T11, live: true }),
      '2026-03-04 10:00:01 → 2026-03-04 11:00:00 UTC (live)',
    );
  });
});
