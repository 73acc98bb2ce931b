import type { ResourceType } from '../kube/types.ts';
import { FacetCache, type FacetSource } from './facet-cache.ts';
import type { PostgresHistory } from './postgres-history.ts';
import { QUERY_QUEUE_LIMIT, QueryGate } from './query-gate.ts';
import {
  eventPage,
  keptBySize,
  objectKeyOf,
  objectRecords,
  pathFragment,
  type SummaryRow,
  searchTexts,
  summaryOf,
  timelineOf,
} from './timeline-assembly.ts';
import {
  CLUSTER_SCOPED,
  type DensityCell,
  type EventPage,
  type EventSummary,
  type EventsPageQuery,
  type Facets,
  type HistoryFilter,
  type ObjectRecords,
  type ObjectRecordsQuery,
  type ObjectRef,
  type Timeline,
  type TimelineOptions,
  type TimelineReader,
} from './timeline-reader.ts';

const SUMMARY_COLUMNS = `seq, id, event->>'time' AS time, type, resource, namespace, name, cluster,
  event->'object'->>'kind' AS kind, event->'object'->>'uid' AS uid,
  json_array_length(coalesce(event->'changes', '[]'::json)) AS changes,
  (event->>'offline') = 'true' AS offline, event->'by'->'managers'->0->>'manager' AS manager,
  event->'by'->'user'->>'username' AS "user", event->'changes'->0 AS change0, event->'changes'->1 AS change1,
  event->'owner'->>'kind' AS "ownerKind", event->'owner'->>'name' AS "ownerName",
  (SELECT json_build_object('verdict', o.event->>'verdict', 'summary', o.event->'evidence'->>'summary')
     FROM kubediff_events AS o WHERE o.cluster = kubediff_events.cluster
       AND o.id = 'outcome:' || kubediff_events.id AND o.type = 'OUTCOME') AS outcome`;

/**
 * A cheap test that rules out most rows before the stored JSON is parsed: `json` keeps the text it was
 * given, so `event::text` costs nothing, and a value the event holds appears in it as written, unless
 * JSON escapes one of its characters (a quote, a backslash, a control character): then no shortcut.
 */
function textPrefilter(value: string, param: (value: unknown) => string): string[] {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the characters JSON escapes
  return /["\\\u0000-\u001f]/.test(value) ? [] : [`strpos(event::text, ${param(value)}) > 0`];
}

/** An object's versions and the timeline's marks are its changes, not the OUTCOMEs recorded beside them. */
const CHANGES_ONLY = "type <> 'OUTCOME'";

/** The WHERE clause of a filter, its parameters numbered from `$1` after `first` others. */
function filterClause(filter: HistoryFilter, first = 0): { sql: string; params: unknown[] } {
  // The timeline shows changes: OUTCOMEs (docs/outcomes.md) are not marks on it (yet).
  const clauses: string[] = [CHANGES_ONLY];
  const params: unknown[] = [];
  const param = (value: unknown) => {
    params.push(value);
    return `$${first + params.length}`;
  };
  if (filter.from !== undefined) clauses.push(`time >= ${param(filter.from)}::timestamptz`);
  if (filter.to !== undefined) clauses.push(`time < ${param(filter.to)}::timestamptz`);
  if (filter.namespaces?.length) {
    const named = filter.namespaces.filter((namespace) => namespace !== CLUSTER_SCOPED);
    const parts = named.length > 0 ? [`namespace = ANY (${param(named)}::text[])`] : [];
    if (named.length < filter.namespaces.length) parts.push('namespace IS NULL');
    clauses.push(`(${parts.join(' OR ')})`);
  }
  if (filter.resources?.length) clauses.push(`resource = ANY (${param(filter.resources)}::text[])`);
  if (filter.types?.length) clauses.push(`type = ANY (${param(filter.types)}::text[])`);
  if (filter.clusters?.length) clauses.push(`cluster = ANY (${param(filter.clusters)}::text[])`);
  if (filter.name) clauses.push(`strpos(name, ${param(filter.name)}) > 0`);
  if (filter.manager) {
    clauses.push(...textPrefilter(filter.manager, param));
    const n = param(filter.manager);
    clauses.push(
      `(EXISTS (SELECT 1 FROM json_array_elements(coalesce(event->'by'->'managers', '[]'::json)) m WHERE m->>'manager' = ${n})
        OR EXISTS (SELECT 1 FROM json_array_elements(coalesce(event->'changes', '[]'::json)) c WHERE c->>'manager' = ${n}))`,
    );
  }
  if (filter.user) {
    clauses.push(...textPrefilter(filter.user, param));
    const n = param(filter.user);
    clauses.push(
      `(event->'by'->'user'->>'username' = ${n} OR event->'by'->'impersonatedUser'->>'username' = ${n})`,
    );
  }
  if (filter.path) {
    clauses.push(...textPrefilter(pathFragment(filter.path), param));
    clauses.push(
      `EXISTS (SELECT 1 FROM json_array_elements(coalesce(event->'changes', '[]'::json)) c
        WHERE strpos(c->>'path', ${param(pathFragment(filter.path))}) > 0)`,
    );
  }
  if (filter.search) {
    const texts = searchTexts(filter.search).map(
      (text) => `strpos(coalesce(search, event::text), ${param(text)}) > 0`,
    );
    clauses.push(`(${texts.join(' OR ')})`);
  }
  return { sql: clauses.length > 0 ? clauses.join(' AND ') : 'true', params };
}

export class PostgresTimelineReader implements TimelineReader, FacetSource {
  private readonly history: PostgresHistory;
  private readonly gate = new QueryGate(QUERY_QUEUE_LIMIT);
  private readonly facetCache: FacetCache;

  /** `history`: opened by PostgresHistory.open (schema checked); closed with this reader. */
  constructor(history: PostgresHistory, options: { now?: () => number } = {}) {
    this.history = history;
    this.facetCache = new FacetCache(options.now);
  }

  private select<Row extends object>(sql: string, params: readonly unknown[] = []): Promise<Row[]> {
    return this.gate.run(() => this.history.select<Row>(sql, params));
  }

  close(): Promise<void> {
    return this.history.close();
  }

  async latestSeq(): Promise<number> {
    const rows = await this.select<{ seq: string | null }>('SELECT max(seq) AS seq FROM kubediff_events');
    return Number(rows[0]?.seq ?? 0);
  }

  facets(): Promise<Facets> {
    return this.facetCache.facets(this);
  }

  async distinct(after: number | undefined) {
    const newer = after !== undefined ? ` WHERE seq > ${Math.floor(after)}` : '';
    const [namespaces, resources, clusters] = [
      await this.select<{ namespace: string | null }>(
        `SELECT DISTINCT namespace FROM kubediff_events${newer}`,
      ),
      await this.select<{ resource: string }>(`SELECT DISTINCT resource FROM kubediff_events${newer}`),
      await this.select<{ cluster: string }>(`SELECT DISTINCT cluster FROM kubediff_events${newer}`),
    ];
    return {
      namespaces: namespaces.map((row) => row.namespace),
      resources: resources.map((row) => row.resource),
      clusters: clusters.map((row) => row.cluster),
    };
  }

  async span() {
    const [row] = await this.select<{ first: string | null; last: string | null; low: string | null }>(
      `SELECT (SELECT event->>'time' FROM kubediff_events ORDER BY time LIMIT 1) AS first,
              (SELECT event->>'time' FROM kubediff_events ORDER BY time DESC LIMIT 1) AS last,
              (SELECT min(seq) FROM kubediff_events) AS low`,
    );
    return { first: row?.first ?? null, last: row?.last ?? null, low: row?.low ? Number(row.low) : null };
  }

  async kinds(): Promise<Map<string, string>> {
    const rows = await this.select<{ resource: string; type: ResourceType }>(
      'SELECT DISTINCT ON (resource) resource, type FROM kubediff_resources ORDER BY resource',
    );
    return new Map(rows.map((row) => [row.resource, row.type.kind]));
  }

  async kindFromHistory(resource: string): Promise<string> {
    const rows = await this.select<{ kind: string | null }>(
      `SELECT event->'object'->>'kind' AS kind FROM kubediff_events WHERE resource = $1 LIMIT 1`,
      [resource],
    );
    return rows[0]?.kind ?? resource;
  }

  async events(filter: HistoryFilter, page: EventsPageQuery): Promise<EventPage> {
    const where = filterClause(filter);
    const params = [...where.params];
    let sql = `SELECT ${SUMMARY_COLUMNS} FROM kubediff_events WHERE ${where.sql}`;
    if (page.before !== undefined) {
      params.push(page.before);
      sql += ` AND seq < $${params.length}::bigint`;
    }
    params.push(page.limit + 1);
    sql += ` ORDER BY seq DESC LIMIT $${params.length}`;
    const rows = await this.select<SummaryRow>(sql, params);
    return eventPage(rows.map(summaryOf), page.limit);
  }

  async timeline(filter: HistoryFilter, options: TimelineOptions): Promise<Timeline> {
    const latestSeq = await this.latestSeq();
    const where = filterClause({ ...filter, from: options.from, to: options.to });
    const [counted] = await this.select<{ total: number }>(
      `SELECT count(*)::float8 AS total FROM kubediff_events WHERE ${where.sql}`,
      where.params,
    );
    return timelineOf(options, {
      latestSeq,
      total: counted?.total ?? 0,
      facets: options.rows === 'kind' ? await this.facets() : undefined,
      marks: async () =>
        (
          await this.select<SummaryRow>(
            `SELECT ${SUMMARY_COLUMNS} FROM kubediff_events WHERE ${where.sql} ORDER BY seq`,
            where.params,
          )
        ).map(summaryOf),
      cells: (bucketMs) => {
        const rowColumn =
          options.rows === 'namespace' ? `coalesce(namespace, '${CLUSTER_SCOPED}')` : 'resource';
        const window = filterClause({ ...filter, from: options.from, to: options.to }, 2);
        return this.select<DensityCell>(
          `SELECT ${rowColumn} AS row,
             floor(extract(epoch FROM (time - $1::timestamptz)) * 1000 / $2)::int AS bucket,
             (count(*) FILTER (WHERE type = 'ADDED'))::int AS added,
             (count(*) FILTER (WHERE type = 'UPDATED'))::int AS updated,
             (count(*) FILTER (WHERE type = 'DELETED'))::int AS deleted
           FROM kubediff_events WHERE ${window.sql} GROUP BY 1, 2`,
          [options.from, bucketMs, ...window.params],
        );
      },
    });
  }

  async objectRecords(ref: ObjectRef, query: ObjectRecordsQuery): Promise<ObjectRecords> {
    // Namespace as equality or IS NULL, so that the (resource, namespace, name, seq) index serves it.
    const params: unknown[] = [ref.resource, ref.name];
    let where = `resource = $1 AND name = $2 AND ${CHANGES_ONLY}`;
    if (ref.namespace === undefined) where += ' AND namespace IS NULL';
    else {
      params.push(ref.namespace);
      where += ` AND namespace = $${params.length}`;
    }
    if (ref.cluster !== undefined) {
      params.push(ref.cluster);
      where += ` AND cluster = $${params.length}`;
    }
    // The sizes first, then only the events that fit; as text (`json` keeps it as written), so that
    // nothing parses them on this thread.
    const sizes = await this.select<{ seq: string; bytes: number; cluster: string }>(
      `SELECT seq, octet_length(event::text) AS bytes, cluster FROM kubediff_events WHERE ${where}
       ORDER BY seq DESC LIMIT $${params.length + 1}`,
      [...params, query.limit + 1],
    );
    const kept = keptBySize(sizes, query);
    const events =
      kept.count === 0
        ? []
        : await this.select<{ seq: string; json: string }>(
            `SELECT seq, event::text AS json FROM kubediff_events WHERE ${where} AND seq >= $${params.length + 1}
             ORDER BY seq DESC LIMIT $${params.length + 2}`,
            [...params, kept.oldestSeq, kept.count],
          );
    // The last recorded state is per cluster: the one asked for, or the newest event's.
    const cluster = ref.cluster ?? sizes[0]?.cluster;
    if (cluster === undefined) return objectRecords(events, kept, undefined, false);
    const key = [cluster, ref.resource, objectKeyOf(ref)];
    const objectWhere = 'cluster = $1 AND resource = $2 AND key = $3';
    // Its text only when its size is within the bound: one lookup.
    const [last] = await this.select<{ json: string | null }>(
      `SELECT CASE WHEN octet_length(object) <= $4 THEN object END AS json FROM kubediff_objects WHERE ${objectWhere}`,
      [...key, query.maxBytes],
    );
    return objectRecords(events, kept, last?.json ?? undefined, last !== undefined && last.json === null);
  }

  async after(seq: number, filter: HistoryFilter, limit: number): Promise<EventSummary[]> {
    const where = filterClause(filter, 1);
    const rows = await this.select<SummaryRow>(
      `SELECT ${SUMMARY_COLUMNS} FROM kubediff_events WHERE seq > $1::bigint AND ${where.sql}
       ORDER BY seq LIMIT ${Math.floor(limit)}`,
      [seq, ...where.params],
    );
    return rows.map(summaryOf);
  }
}
