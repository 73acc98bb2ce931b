// The history as `kubediff ui` reads it: filtered, paged, counted per time bucket, one object's story.
// One small interface (TimelineReader) with one implementation per store; this one reads the SQLite state
// file through StateDatabase, read-only (in a worker thread: sqlite-timeline-worker.ts), and
// postgres-timeline-reader.ts reads a shared PostgreSQL history with the same filters, so the UI above
// them does not know which store it reads. The interface is asynchronous for both: PostgreSQL answers
// over the network, and the SQLite queries run off the thread that serves pages (and watches).
//
// Filters use the history's columns (time, type, resource, namespace, name) where they exist and the
// stored event's JSON for the rest (cluster, who, change paths): no column or index of its own, so the
// schema stays the state file's.
import type { EventType } from '../events/event.ts';
import type { SqlParameter, StateDatabase } from './database.ts';

/** A namespace filter value for cluster-scoped objects (no namespace name can be "-"). */
export const CLUSTER_SCOPED = '-';

export interface HistoryFilter {
  /** ISO times: from inclusive, to exclusive. */
  from?: string | undefined;
  to?: string | undefined;
  clusters?: readonly string[] | undefined;
  /** Namespace names, CLUSTER_SCOPED for cluster-scoped objects. */
  namespaces?: readonly string[] | undefined;
  /** Qualified resource names: deployments.apps, configmaps. */
  resources?: readonly string[] | undefined;
  types?: readonly EventType[] | undefined;
  /** Part of the object's name. */
  name?: string | undefined;
  /** A field manager named in `by.managers`. */
  manager?: string | undefined;
  /** A user (`by.user` or `by.impersonatedUser`). */
  user?: string | undefined;
  /** Part of a change's path: `/spec/replicas`, `spec.replicas` or `containers[0].image`. */
  path?: string | undefined;
}

/** One mark on the timeline: what the page needs to draw it and name it. */
export interface EventSummary {
  seq: number;
  id: string;
  time: string;
  type: EventType;
  cluster?: string;
  resource: string;
  kind: string;
  namespace?: string;
  name: string;
  uid: string;
  changes: number;
  offline?: true;
  manager?: string;
  user?: string;
}

export interface EventPage {
  events: EventSummary[];
  /** Pass as `before` for the next (older) page; absent on the last page. */
  next?: number;
}

export type RowKey = 'namespace' | 'kind';

/** Counts of one row in one time bucket, per event type. */
export interface DensityCell {
  row: string;
  bucket: number;
  added: number;
  updated: number;
  deleted: number;
}

export interface Timeline {
  /** The newest event's seq when the query began: live updates follow from there. */
  latestSeq: number;
  from: string;
  to: string;
  total: number;
  /** Rows with their counts in the window, busiest first. */
  rows: { key: string; label: string; count: number }[];
  /** Every event, when there are at most `maxMarks`. */
  marks?: EventSummary[];
  /** Otherwise, counts per row and bucket of `bucketMs`. */
  density?: { bucketMs: number; cells: DensityCell[] };
}

export interface ObjectRef {
  /**
   * The cluster whose object is meant, where one history holds several (PostgreSQL): its events and its
   * last recorded state. Without it, the events of every cluster and the state of the newest one's.
   */
  cluster?: string | undefined;
  resource: string;
  namespace?: string | undefined;
  name: string;
}

/**
 * One object's history as stored, not parsed (the UI rebuilds its versions off the thread that watches:
 * src/ui/object-view.ts): the newest `limit` events, and at most `maxBytes` of them.
 */
export interface ObjectRecords {
  /** Oldest first: each event's seq and its stored JSON. */
  events: { seq: number; json: string }[];
  /** Older events exist beyond `limit` or beyond `maxBytes`. */
  truncated: boolean;
  /** Beyond `maxBytes` (not only beyond `limit`): some events were left out for their size. */
  bytesBound: boolean;
  /** The object as last recorded (normalized, Secrets redacted; JSON), while it exists, within maxBytes. */
  current?: string;
  /** The object exists but its last recorded state is larger than `maxBytes` (left out). */
  currentTooLarge?: true;
}

/** What objectRecords() reads: the newest `limit` events, `maxBytes` of JSON at most (the object too). */
export interface ObjectRecordsQuery {
  limit: number;
  maxBytes: number;
}

export interface Facets {
  first?: string;
  last?: string;
  /** About how many events the history holds (the span of their seqs). */
  count: number;
  latestSeq: number;
  namespaces: string[];
  resources: { resource: string; kind: string }[];
  clusters: string[];
}

export interface EventsPageQuery {
  limit: number;
  before?: number | undefined;
}

/** What the UI reads. Every method is bounded by its arguments. */
export interface TimelineReader {
  facets(): Promise<Facets>;
  /** Newest first, `limit` at most, older than `before` (a seq). */
  events(filter: HistoryFilter, page: EventsPageQuery): Promise<EventPage>;
  timeline(filter: HistoryFilter, options: TimelineOptions): Promise<Timeline>;
  objectRecords(ref: ObjectRef, query: ObjectRecordsQuery): Promise<ObjectRecords>;
  /** Events after `seq`, oldest first, at most `limit` (live updates). */
  after(seq: number, filter: HistoryFilter, limit: number): Promise<EventSummary[]>;
  latestSeq(): Promise<number>;
  close(): Promise<void>;
}

export interface TimelineOptions {
  from: string;
  to: string;
  rows: RowKey;
  buckets: number;
  maxMarks: number;
  maxRows: number;
}

/** `spec.replicas`, `containers[0].image`, `/spec/replicas` → the part of a JSON Pointer to look for. */
export function pathFragment(text: string): string {
  const trimmed = text.trim();
  if (trimmed.startsWith('/')) return trimmed;
  return trimmed.replace(/\[(\d+)\]/g, '.$1').replaceAll('.', '/');
}

const SUMMARY_COLUMNS = `seq, id, time, type, resource, namespace, name,
  json_extract(event, '$.cluster') AS cluster, json_extract(event, '$.object.kind') AS kind,
  json_extract(event, '$.object.uid') AS uid, json_array_length(event, '$.changes') AS changes,
  json_extract(event, '$.offline') AS offline, json_extract(event, '$.by.managers[0].manager') AS manager,
  json_extract(event, '$.by.user.username') AS user`;

export interface SummaryRow {
  seq: number | string;
  id: string;
  time: string;
  type: EventType;
  resource: string;
  namespace: string | null;
  name: string;
  cluster: string | null;
  kind: string | null;
  uid: string | null;
  changes: number | null;
  offline: number | boolean | null;
  manager: string | null;
  user: string | null;
}

/** A summary from a row of either store (PostgreSQL answers seq as text: a bigint). */
export function summaryOf(row: SummaryRow): EventSummary {
  const summary: EventSummary = {
    seq: Number(row.seq),
    id: row.id,
    time: row.time,
    type: row.type,
    resource: row.resource,
    kind: row.kind ?? row.resource,
    name: row.name,
    uid: row.uid ?? '',
    changes: row.changes ?? 0,
  };
  if (row.cluster !== null) summary.cluster = row.cluster;
  if (row.namespace !== null) summary.namespace = row.namespace;
  if (row.offline) summary.offline = true;
  if (row.manager !== null) summary.manager = row.manager;
  if (row.user !== null) summary.user = row.user;
  return summary;
}

function placeholders(count: number): string {
  return Array.from({ length: count }, () => '?').join(', ');
}

/**
 * The WHERE clause of a filter and its parameters (one place, for every query). `timeIndex: false`
 * keeps SQLite off the time index (`+time`): a page newest first then walks the events by seq and stops
 * at its limit, instead of sorting every event of a wide window.
 */
function filterClause(
  filter: HistoryFilter,
  options: { timeIndex?: boolean } = {},
): { sql: string; params: SqlParameter[] } {
  const clauses: string[] = [];
  const params: SqlParameter[] = [];
  const time = options.timeIndex === false ? '+time' : 'time';
  if (filter.from !== undefined) {
    clauses.push(`${time} >= ?`);
    params.push(filter.from);
  }
  if (filter.to !== undefined) {
    clauses.push(`${time} < ?`);
    params.push(filter.to);
  }
  if (filter.namespaces?.length) {
    const named = filter.namespaces.filter((namespace) => namespace !== CLUSTER_SCOPED);
    const parts = named.length > 0 ? [`namespace IN (${placeholders(named.length)})`] : [];
    if (named.length < filter.namespaces.length) parts.push('namespace IS NULL');
    clauses.push(`(${parts.join(' OR ')})`);
    params.push(...named);
  }
  if (filter.resources?.length) {
    clauses.push(`resource IN (${placeholders(filter.resources.length)})`);
    params.push(...filter.resources);
  }
  if (filter.types?.length) {
    clauses.push(`type IN (${placeholders(filter.types.length)})`);
    params.push(...filter.types);
  }
  if (filter.clusters?.length) {
    clauses.push(`json_extract(event, '$.cluster') IN (${placeholders(filter.clusters.length)})`);
    params.push(...filter.clusters);
  }
  if (filter.name) {
    clauses.push('instr(name, ?) > 0');
    params.push(filter.name);
  }
  if (filter.manager) {
    clauses.push(
      `(EXISTS (SELECT 1 FROM json_each(event, '$.by.managers') WHERE json_extract(value, '$.manager') = ?)
        OR EXISTS (SELECT 1 FROM json_each(event, '$.changes') WHERE json_extract(value, '$.manager') = ?))`,
    );
    params.push(filter.manager, filter.manager);
  }
  if (filter.user) {
    clauses.push(
      `(json_extract(event, '$.by.user.username') = ? OR json_extract(event, '$.by.impersonatedUser.username') = ?)`,
    );
    params.push(filter.user, filter.user);
  }
  if (filter.path) {
    clauses.push(
      `EXISTS (SELECT 1 FROM json_each(event, '$.changes') WHERE instr(json_extract(value, '$.path'), ?) > 0)`,
    );
    params.push(pathFragment(filter.path));
  }
  return { sql: clauses.length > 0 ? clauses.join(' AND ') : '1', params };
}

const FACET_REFRESH_MS = 10 * 60_000;
const FACET_INCREMENT_MAX = 100_000;
/** Clusters are named only in each event's JSON (SQLite): the newest this many events are looked at. */
export const CLUSTER_SAMPLE = 10_000;

/** What a store tells the facet cache. `after`: only the events after that seq (undefined: all). */
export interface FacetSource {
  latestSeq(): Promise<number>;
  distinct(after: number | undefined): Promise<{
    namespaces: (string | null)[];
    resources: string[];
    clusters: string[];
  }>;
  /** The oldest and newest time, and the oldest seq. */
  span(): Promise<{ first: string | null; last: string | null; low: number | null }>;
  /** Each recorded resource's kind, from the stored discovery. */
  kinds(): Promise<Map<string, string>>;
  /** The kind of a resource no longer discovered, from one of its events. */
  kindFromHistory(resource: string): Promise<string>;
}

/**
 * The facets of a history, computed once (distinct values cost a scan of an index: seconds on a million
 * events), then kept current from the events added since, which are few; recomputed in full every
 * FACET_REFRESH_MS (so values whose events retention removed disappear) or when many events were added
 * at once. One cache for every store.
 */
export class FacetCache {
  private readonly now: () => number;
  private cached: { at: number; seq: number; facets: Facets } | undefined;

  constructor(now: () => number = Date.now) {
    this.now = now;
  }

  async facets(source: FacetSource): Promise<Facets> {
    const seq = await source.latestSeq();
    const cached = this.cached;
    const age = cached ? this.now() - cached.at : Number.POSITIVE_INFINITY;
    if (cached && cached.seq === seq && age < FACET_REFRESH_MS) return cached.facets;
    const incremental =
      cached !== undefined && age < FACET_REFRESH_MS && seq - cached.seq <= FACET_INCREMENT_MAX;
    const found = await source.distinct(incremental ? cached.seq : undefined);
    const namespaces = new Set(incremental ? cached.facets.namespaces : []);
    for (const namespace of found.namespaces) namespaces.add(namespace ?? CLUSTER_SCOPED);
    const resources = new Set(incremental ? cached.facets.resources.map((entry) => entry.resource) : []);
    for (const resource of found.resources) resources.add(resource);
    const clusters = new Set(incremental ? cached.facets.clusters : []);
    for (const cluster of found.clusters) clusters.add(cluster);
    const kinds = await source.kinds();
    const known = new Map(
      incremental ? cached.facets.resources.map((entry) => [entry.resource, entry.kind]) : [],
    );
    const span = await source.span();
    const resourceKinds: Facets['resources'] = [];
    for (const resource of [...resources].sort()) {
      const kind = kinds.get(resource) ?? known.get(resource) ?? (await source.kindFromHistory(resource));
      resourceKinds.push({ resource, kind });
    }
    const facets: Facets = {
      count: span.low ? seq - span.low + 1 : 0,
      latestSeq: seq,
      namespaces: [...namespaces].sort(),
      resources: resourceKinds,
      clusters: [...clusters].sort(),
    };
    if (span.first) facets.first = span.first;
    if (span.last) facets.last = span.last;
    this.cached = { at: incremental ? cached.at : this.now(), seq, facets };
    return facets;
  }
}

/** The timeline's rows from the counts per row, busiest first, labelled with their kind when by kind. */
export function timelineRows(
  counts: ReadonlyMap<string, number>,
  options: TimelineOptions,
  facets: Facets | undefined,
): Timeline['rows'] {
  const kinds = facets ? new Map(facets.resources.map((entry) => [entry.resource, entry.kind])) : undefined;
  return [...counts]
    .sort(([keyA, a], [keyB, b]) => b - a || (keyA < keyB ? -1 : 1))
    .slice(0, options.maxRows)
    .map(([key, count]) => ({ key, label: kinds ? `${kinds.get(key) ?? key} (${key})` : key, count }));
}

/** Counts per row of single marks. */
export function markCounts(marks: readonly EventSummary[], rows: RowKey): Map<string, number> {
  const counts = new Map<string, number>();
  for (const mark of marks) {
    const key = rows === 'namespace' ? (mark.namespace ?? CLUSTER_SCOPED) : mark.resource;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

/** Counts per row of density cells. */
export function cellCounts(cells: readonly DensityCell[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const cell of cells)
    counts.set(cell.row, (counts.get(cell.row) ?? 0) + cell.added + cell.updated + cell.deleted);
  return counts;
}

/** A timeline of marks or of density cells (only those of the rows shown). */
export function assembleTimeline(
  base: { latestSeq: number; total: number; rows: Timeline['rows'] },
  options: TimelineOptions,
  drawn: { marks: EventSummary[] } | { bucketMs: number; cells: DensityCell[] },
): Timeline {
  const timeline: Timeline = {
    latestSeq: base.latestSeq,
    from: options.from,
    to: options.to,
    total: base.total,
    rows: base.rows,
  };
  if ('marks' in drawn) {
    timeline.marks = drawn.marks;
  } else {
    const shown = new Set(base.rows.map((row) => row.key));
    timeline.density = { bucketMs: drawn.bucketMs, cells: drawn.cells.filter((cell) => shown.has(cell.row)) };
  }
  return timeline;
}

/** The length of one density bucket: the window split into `buckets`. */
export function bucketLength(options: TimelineOptions): number {
  const start = Date.parse(options.from);
  return Math.max(1, Math.ceil(Math.max(1, Date.parse(options.to) - start) / options.buckets));
}

export class SqliteTimelineReader implements TimelineReader, FacetSource {
  private readonly db: StateDatabase;
  private readonly facetCache: FacetCache;

  constructor(db: StateDatabase, options: { now?: () => number } = {}) {
    this.db = db;
    this.facetCache = new FacetCache(options.now);
  }

  async close(): Promise<void> {
    this.db.close();
  }

  async latestSeq(): Promise<number> {
    return this.db.select<{ seq: number | null }>('SELECT max(seq) AS seq FROM events')[0]?.seq ?? 0;
  }

  facets(): Promise<Facets> {
    return this.facetCache.facets(this);
  }

  /** FacetSource: the full pass reads the (resource, namespace, name) index; the increment, the newest rows. */
  async distinct(after: number | undefined) {
    const newer = after !== undefined ? ` WHERE seq > ${Math.floor(after)}` : '';
    return {
      namespaces: this.db
        .select<{ namespace: string | null }>(`SELECT DISTINCT namespace FROM events${newer}`)
        .map((row) => row.namespace),
      resources: this.db
        .select<{ resource: string }>(`SELECT DISTINCT resource FROM events${newer}`)
        .map((row) => row.resource),
      clusters: this.db
        .select<{ cluster: string | null }>(
          `SELECT DISTINCT json_extract(event, '$.cluster') AS cluster
           FROM (SELECT event FROM events${newer} ORDER BY seq DESC LIMIT ${CLUSTER_SAMPLE})`,
        )
        .flatMap((row) => (row.cluster === null ? [] : [row.cluster])),
    };
  }

  /** FacetSource: both ends from the time and seq indexes (one min or max per query, or SQLite reads every row). */
  async span() {
    const one = <T>(sql: string) => this.db.select<{ value: T | null }>(sql)[0]?.value ?? null;
    return {
      first: one<string>('SELECT min(time) AS value FROM events'),
      last: one<string>('SELECT max(time) AS value FROM events'),
      low: one<number>('SELECT min(seq) AS value FROM events'),
    };
  }

  async kinds(): Promise<Map<string, string>> {
    return new Map(this.db.resources().map((stored) => [stored.resource, stored.type.kind]));
  }

  async kindFromHistory(resource: string): Promise<string> {
    const row = this.db.select<{ kind: string | null }>(
      "SELECT json_extract(event, '$.object.kind') AS kind FROM events WHERE resource = ? LIMIT 1",
      resource,
    )[0];
    return row?.kind ?? resource;
  }

  async events(filter: HistoryFilter, page: EventsPageQuery): Promise<EventPage> {
    const where = filterClause(filter, { timeIndex: false });
    const params = [...where.params];
    let sql = `SELECT ${SUMMARY_COLUMNS} FROM events WHERE ${where.sql}`;
    if (page.before !== undefined) {
      sql += ' AND seq < ?';
      params.push(page.before);
    }
    sql += ' ORDER BY seq DESC LIMIT ?';
    params.push(page.limit + 1);
    const rows = this.db.select<SummaryRow>(sql, ...params);
    return eventPage(rows.map(summaryOf), page.limit);
  }

  async timeline(filter: HistoryFilter, options: TimelineOptions): Promise<Timeline> {
    const latestSeq = await this.latestSeq();
    const where = filterClause({ ...filter, from: options.from, to: options.to });
    // A count first (the time index answers it alone when only the window is given): single marks
    // when few, otherwise one pass that counts per row and bucket, the rows summed from it.
    const total =
      this.db.select<{ total: number }>(
        `SELECT count(*) AS total FROM events WHERE ${where.sql}`,
        ...where.params,
      )[0]?.total ?? 0;
    const facets = options.rows === 'kind' ? await this.facets() : undefined;
    if (total <= options.maxMarks) {
      const marks = this.db
        .select<SummaryRow>(
          `SELECT ${SUMMARY_COLUMNS} FROM events WHERE ${where.sql} ORDER BY seq`,
          ...where.params,
        )
        .map(summaryOf);
      const rows = timelineRows(markCounts(marks, options.rows), options, facets);
      return assembleTimeline({ latestSeq, total, rows }, options, { marks });
    }
    const bucketMs = bucketLength(options);
    const rowColumn = options.rows === 'namespace' ? `coalesce(namespace, '${CLUSTER_SCOPED}')` : 'resource';
    // Most of the history in the window: reading the table in order beats an index lookup per row.
    const scan = total > (await this.facets()).count / 4 ? 'events NOT INDEXED' : 'events';
    const cells = this.db.select<DensityCell>(
      `SELECT ${rowColumn} AS row,
         CAST((julianday(time) - julianday(?)) * 86400000 / ? AS INTEGER) AS bucket,
         sum(type = 'ADDED') AS added, sum(type = 'UPDATED') AS updated, sum(type = 'DELETED') AS deleted
       FROM ${scan} WHERE ${where.sql} GROUP BY row, bucket`,
      options.from,
      bucketMs,
      ...where.params,
    );
    const rows = timelineRows(cellCounts(cells), options, facets);
    return assembleTimeline({ latestSeq, total, rows }, options, { bucketMs, cells });
  }

  async objectRecords(ref: ObjectRef, query: ObjectRecordsQuery): Promise<ObjectRecords> {
    // The sizes first (octet_length reads no value), then only the events that fit.
    const where = 'resource = ? AND namespace IS ? AND name = ?';
    const at = [ref.resource, ref.namespace ?? null, ref.name];
    const sizes = this.db.select<{ seq: number; bytes: number }>(
      `SELECT seq, octet_length(event) AS bytes FROM events WHERE ${where} ORDER BY seq DESC LIMIT ?`,
      ...at,
      query.limit + 1,
    );
    const kept = keptBySize(sizes, query);
    const events =
      kept.count === 0
        ? []
        : this.db.select<{ seq: number; json: string }>(
            `SELECT seq, event AS json FROM events WHERE ${where} AND seq >= ? ORDER BY seq DESC LIMIT ?`,
            ...at,
            kept.oldestSeq,
            kept.count,
          );
    const key = [ref.resource, objectKeyOf(ref)];
    const size = this.db.select<{ bytes: number }>(
      'SELECT octet_length(object) AS bytes FROM objects WHERE resource = ? AND key = ?',
      ...key,
    )[0]?.bytes;
    const current =
      size === undefined || size > query.maxBytes
        ? undefined
        : this.db.select<{ json: string }>(
            'SELECT object AS json FROM objects WHERE resource = ? AND key = ?',
            ...key,
          )[0]?.json;
    return objectRecords(events, kept, current, size !== undefined && size > query.maxBytes);
  }

  async after(seq: number, filter: HistoryFilter, limit: number): Promise<EventSummary[]> {
    const where = filterClause(filter, { timeIndex: false });
    return this.db
      .select<SummaryRow>(
        `SELECT ${SUMMARY_COLUMNS} FROM events WHERE seq > ? AND ${where.sql} ORDER BY seq LIMIT ?`,
        seq,
        ...where.params,
        limit,
      )
      .map(summaryOf);
  }
}

/** A page from up to `limit + 1` summaries newest first: the extra one says that an older page exists. */
export function eventPage(summaries: EventSummary[], limit: number): EventPage {
  const events = summaries.slice(0, limit);
  const last = events.at(-1);
  return summaries.length > limit && last ? { events, next: last.seq } : { events };
}

/** The store's key of an object: namespace/name, or the name of a cluster-scoped one. */
export function objectKeyOf(ref: ObjectRef): string {
  return ref.namespace === undefined ? ref.name : `${ref.namespace}/${ref.name}`;
}

/**
 * How many of an object's events, newest first (`limit + 1` of their sizes), an answer keeps: at most
 * `limit`, and no more than fit in `maxBytes` together.
 */
export function keptBySize(
  newestFirst: readonly { seq: number | string; bytes: number | string }[],
  query: ObjectRecordsQuery,
): { count: number; oldestSeq: number; truncated: boolean; bytesBound: boolean } {
  let count = 0;
  let total = 0;
  let bytesBound = false;
  for (const row of newestFirst.slice(0, query.limit)) {
    total += Number(row.bytes);
    if (total > query.maxBytes) {
      bytesBound = true;
      break;
    }
    count++;
  }
  const oldest = newestFirst[count - 1];
  return {
    count,
    oldestSeq: oldest ? Number(oldest.seq) : 0,
    truncated: bytesBound || newestFirst.length > query.limit,
    bytesBound,
  };
}

/** ObjectRecords from the kept events newest first, and the object's last state. */
export function objectRecords(
  newestFirst: readonly { seq: number | string; json: string }[],
  kept: { truncated: boolean; bytesBound: boolean },
  current: string | undefined,
  currentTooLarge: boolean,
): ObjectRecords {
  const records: ObjectRecords = {
    events: newestFirst.map((row) => ({ seq: Number(row.seq), json: row.json })).reverse(),
    truncated: kept.truncated,
    bytesBound: kept.bytesBound,
  };
  if (current !== undefined) records.current = current;
  if (currentTooLarge) records.currentTooLarge = true;
  return records;
}
