// What both stores' TimelineReaders build their answers with (src/state/timeline-assembly.ts), and the
// facet cache they share (src/state/facet-cache.ts): from rows as the SQL returns them to what the UI
// receives, without a database.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FacetCache, type FacetSource } from '../../../src/state/facet-cache.ts';
import {
  assembleTimeline,
  bucketLength,
  cellCounts,
  eventPage,
  keptBySize,
  markCounts,
  objectKeyOf,
  objectRecords,
  pathFragment,
  summaryOf,
  timelineOf,
  timelineRows,
} from '../../../src/state/timeline-assembly.ts';
import type { EventSummary, Facets, TimelineOptions } from '../../../src/state/timeline-reader.ts';

const options: TimelineOptions = {
  from: '2026-01-01T00:00:00.000Z',
  to: '2026-01-01T01:00:00.000Z',
  rows: 'kind',
  buckets: 60,
  maxMarks: 100,
  maxRows: 2,
};

function summary(seq: number, extra: Partial<EventSummary> = {}): EventSummary {
  return {
    seq,
    id: `u:${seq}`,
    time: options.from,
    type: 'UPDATED',
    resource: 'configmaps',
    kind: 'ConfigMap',
    name: `cm-${seq}`,
    uid: 'u',
    changes: 1,
    ...extra,
  };
}

test('a change path in any of its spellings is the JSON Pointer fragment looked for', () => {
  assert.equal(pathFragment(' spec.replicas '), 'spec/replicas');
  assert.equal(pathFragment('containers[0].image'), 'containers/0/image');
  assert.equal(pathFragment('/spec/replicas'), '/spec/replicas');
});

test('a summary from either store: PostgreSQL seqs as text, absent columns left out, SQLite offline as 1', () => {
  const row = {
    seq: '42',
    id: 'u:42',
    time: options.from,
    type: 'ADDED' as const,
    resource: 'widgets.example.com',
    namespace: null,
    name: 'w',
    cluster: null,
    kind: null,
    uid: null,
    changes: null,
    offline: 1,
    manager: 'kubectl',
    user: null,
    change0: null,
    change1: null,
    ownerKind: null,
    ownerName: null,
  };
  assert.deepEqual(summaryOf(row), {
    seq: 42,
    id: 'u:42',
    time: options.from,
    type: 'ADDED',
    resource: 'widgets.example.com',
    kind: 'widgets.example.com',
    name: 'w',
    uid: '',
    changes: 0,
    offline: true,
    manager: 'kubectl',
  });
});

test('a summary carries its first changes, each value as JSON cut to 200 characters, and its story', () => {
  const long = 'x'.repeat(50_000);
  const stored = { op: 'replace', path: '/metadata/annotations/big', from: long, to: 'short' };
  const row = {
    seq: 7,
    id: 'u:7',
    time: options.from,
    type: 'UPDATED' as const,
    resource: 'deployments.apps',
    namespace: 'shop',
    name: 'web',
    cluster: null,
    kind: 'Deployment',
    uid: 'u',
    changes: 3,
    offline: null,
    manager: 'kubectl-edit',
    user: 'alice',
    // SQLite answers a change as JSON text, PostgreSQL parsed.
    change0: JSON.stringify(stored),
    change1: { op: 'add' as const, path: '/spec/paused', to: true },
    ownerKind: 'Deployment',
    ownerName: 'web',
  };
  const summary = summaryOf(row);
  assert.deepEqual(summary.first, [
    { path: '/metadata/annotations/big', from: `"${'x'.repeat(198)}…`, to: '"short"' },
    { path: '/spec/paused', to: 'true' },
  ]);
  assert.equal(summary.first?.[0]?.from?.length, 200);
  assert.deepEqual(summary.owner, { kind: 'Deployment', name: 'web' });
});

test('rows busiest first, at most maxRows, labelled with their kind; marks or only the shown rows’ cells', () => {
  const marks = [
    summary(1),
    summary(2),
    summary(3, { resource: 'pods', kind: 'Pod', namespace: 'a' }),
    summary(4, { resource: 'secrets', kind: 'Secret' }),
  ];
  const facets = {
    resources: [
      { resource: 'configmaps', kind: 'ConfigMap' },
      { resource: 'pods', kind: 'Pod' },
    ],
  } as Facets;
  const rows = timelineRows(markCounts(marks, 'kind'), options, facets);
  assert.deepEqual(rows, [
    { key: 'configmaps', label: 'ConfigMap (configmaps)', count: 2 },
    { key: 'pods', label: 'Pod (pods)', count: 1 },
  ]);
  assert.deepEqual(
    [...markCounts(marks, 'namespace')],
    [
      ['-', 3],
      ['a', 1],
    ],
  );
  const withMarks = assembleTimeline({ latestSeq: 4, total: 4, rows }, options, { marks });
  assert.equal(withMarks.marks?.length, 4);
  assert.equal(withMarks.density, undefined);

  const cells = [
    { row: 'configmaps', bucket: 0, added: 1, updated: 2, deleted: 0 },
    { row: 'secrets', bucket: 3, added: 0, updated: 0, deleted: 9 },
  ];
  assert.deepEqual(
    [...cellCounts(cells)],
    [
      ['configmaps', 3],
      ['secrets', 9],
    ],
  );
  const bucketMs = bucketLength(options);
  assert.equal(bucketMs, 60_000);
  const dense = assembleTimeline({ latestSeq: 4, total: 12, rows: rows.slice(0, 1) }, options, {
    bucketMs,
    cells,
  });
  assert.deepEqual(dense.density, { bucketMs, cells: [cells[0]] });
});

test('a timeline asks its store for single marks up to maxMarks events, for density cells beyond', async () => {
  const asked: string[] = [];
  const queries = (total: number) => ({
    latestSeq: 9,
    total,
    facets: undefined,
    marks: async () => {
      asked.push('marks');
      return [summary(1), summary(2, { resource: 'pods' })];
    },
    cells: async (bucketMs: number) => {
      asked.push(`cells of ${bucketMs} ms`);
      return [
        { row: 'pods', bucket: 0, added: 5, updated: 0, deleted: 0 },
        { row: 'secrets', bucket: 1, added: 1, updated: 0, deleted: 0 },
        { row: 'configmaps', bucket: 1, added: 0, updated: 2, deleted: 0 },
      ];
    },
  });
  const few = await timelineOf(options, queries(options.maxMarks));
  assert.deepEqual(asked, ['marks']);
  assert.equal(few.marks?.length, 2);
  assert.equal(few.total, options.maxMarks);
  assert.deepEqual(
    few.rows.map((row) => [row.key, row.count]),
    [
      ['configmaps', 1],
      ['pods', 1],
    ],
  );
  const many = await timelineOf(options, queries(options.maxMarks + 1));
  assert.deepEqual(asked, ['marks', 'cells of 60000 ms']);
  assert.equal(many.marks, undefined);
  // maxRows (2): the busiest rows, and only their cells.
  assert.deepEqual(
    many.rows.map((row) => [row.key, row.count]),
    [
      ['pods', 5],
      ['configmaps', 2],
    ],
  );
  assert.deepEqual(
    many.density?.cells.map((cell) => cell.row),
    ['pods', 'configmaps'],
  );
});

test('pages and one object: the extra row says an older page exists; oldest first, truncated', () => {
  const newestFirst = [summary(9), summary(8), summary(7)];
  assert.deepEqual(eventPage(newestFirst, 2), { events: newestFirst.slice(0, 2), next: 8 });
  assert.deepEqual(eventPage(newestFirst, 3), { events: newestFirst });
  assert.equal(objectKeyOf({ resource: 'nodes', name: 'n1' }), 'n1');
  assert.equal(objectKeyOf({ resource: 'pods', namespace: 'ns', name: 'p' }), 'ns/p');
  // One object: the newest `limit` events that fit in maxBytes, oldest first, as stored text.
  const sizes = [
    { seq: 3, bytes: 40 },
    { seq: 2, bytes: 40 },
    { seq: 1, bytes: 40 },
  ];
  assert.deepEqual(keptBySize(sizes, { limit: 2, maxBytes: 1_000 }), {
    count: 2,
    oldestSeq: 2,
    truncated: true,
    bytesBound: false,
  });
  assert.deepEqual(keptBySize(sizes, { limit: 3, maxBytes: 100 }), {
    count: 2,
    oldestSeq: 2,
    truncated: true,
    bytesBound: true,
  });
  assert.deepEqual(keptBySize(sizes, { limit: 3, maxBytes: 1_000 }), {
    count: 3,
    oldestSeq: 1,
    truncated: false,
    bytesBound: false,
  });
  const kept = { truncated: true, bytesBound: false };
  const records = objectRecords(
    [
      { seq: '3', json: '{"id":"u:3"}' },
      { seq: 2, json: '{"id":"u:2"}' },
    ],
    kept,
    '{"kind":"ConfigMap"}',
    false,
  );
  assert.deepEqual(records, {
    events: [
      { seq: 2, json: '{"id":"u:2"}' },
      { seq: 3, json: '{"id":"u:3"}' },
    ],
    truncated: true,
    bytesBound: false,
    current: '{"kind":"ConfigMap"}',
  });
  assert.deepEqual(objectRecords([], kept, undefined, true), {
    events: [],
    truncated: true,
    bytesBound: false,
    currentTooLarge: true,
  });
});

test('facets are read in full once, then kept current from the events added since, in full again after 10 minutes', async () => {
  let now = 0;
  let latest = 10;
  const asked: (number | undefined)[] = [];
  const source: FacetSource = {
    latestSeq: async () => latest,
    distinct: async (after) => {
      asked.push(after);
      return after === undefined
        ? { namespaces: ['a', null], resources: ['configmaps'], clusters: ['eu'] }
        : { namespaces: ['b'], resources: ['gone.example.com'], clusters: [] };
    },
    span: async () => ({ first: '2026-01-01T00:00:00.000Z', last: '2026-01-02T00:00:00.000Z', low: 1 }),
    kinds: async () => new Map([['configmaps', 'ConfigMap']]),
    kindFromHistory: async (resource) => (resource === 'gone.example.com' ? 'Gone' : resource),
  };
  const cache = new FacetCache(() => now);
  const first = await cache.facets(source);
  assert.deepEqual(first, {
    count: 10,
    latestSeq: 10,
    namespaces: ['-', 'a'],
    resources: [{ resource: 'configmaps', kind: 'ConfigMap' }],
    clusters: ['eu'],
    first: '2026-01-01T00:00:00.000Z',
    last: '2026-01-02T00:00:00.000Z',
  });
  assert.equal(await cache.facets(source), first, 'nothing new: the cached facets');
  latest = 12;
  const grown = await cache.facets(source);
  assert.deepEqual(grown.namespaces, ['-', 'a', 'b']);
  assert.deepEqual(grown.resources, [
    { resource: 'configmaps', kind: 'ConfigMap' },
    { resource: 'gone.example.com', kind: 'Gone' },
  ]);
  now += 10 * 60_000;
  latest = 13;
  await cache.facets(source);
  assert.deepEqual(asked, [undefined, 10, undefined]);
});
