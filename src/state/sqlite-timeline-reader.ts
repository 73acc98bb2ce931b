import { FacetCache, type FacetSource } from './facet-cache.ts';
import type { SqliteDatabase, SqlParameter } from './sqlite-database.ts';
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

/** Clusters are named only in each event's JSON (SQLite): the newest this many events are looked at. */
export const CLUSTER_SAMPLE = 10_000;

const SUMMARY_COLUMNS = `seq, id, time, type, resource, namespace, name,
  json_extract(event, '$.cluster') AS cluster, json_extract(event, '$.object.kind') AS kind,
  json_extract(event, '$.object.uid') AS uid, json_array_length(event, '$.changes') AS changes,
  json_extract(event, '$.offline') AS offline, json_extract(event, '$.by.managers[0].manager') AS manager,
  json_extract(event, '$.by.user.username') AS user, json_extract(event, '$.changes[0]') AS change0,
  json_extract(event, '$.changes[1]') AS change1, json_extract(event, '$.owner.kind') AS "ownerKind",
  json_extract(event, '$.owner.name') AS "ownerName",
  (SELECT json_object('verdict', json_extract(o.event, '$.verdict'), 'summary', json_extract(o.event, '$.evidence.summary'))
     FROM events AS o WHERE o.resource = events.resource AND o.namespace IS events.namespace
       AND o.name = events.name AND o.type = 'OUTCOME' AND o.id = 'outcome:' || events.id) AS outcome`;

function placeholders(count: number): string {
  return Array.from({ length: count }, () => '?').join(', ');
}

/** An object's versions and the timeline's marks are its changes, not the OUTCOMEs recorded beside them. */
const CHANGES_ONLY = "type <> 'OUTCOME'";

/**
 * The WHERE clause of a filter and its parameters (one place, for every query). `timeIndex: false`
 * keeps SQLite off the time index (`+time`): a page newest first then walks the events by seq and stops
 * at its limit, instead of sorting every event of a wide window.
 */
function filterClause(
  filter: HistoryFilter,
  options: { timeIndex?: boolean } = {},
): { sql: string; params: SqlParameter[] } {
  // The timeline shows changes: OUTCOMEs (docs/outcomes.md) are not marks on it (yet).
  const clauses: string[] = [CHANGES_ONLY];
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
  if (filter.search) {
    const texts = searchTexts(filter.search);
    clauses.push(`(${texts.map(() => 'instr(coalesce(search, event), ?) > 0').join(' OR ')})`);
    params.push(...texts);
  }
  return { sql: clauses.length > 0 ? clauses.join(' AND ') : '1', params };
}

export class SqliteTimelineReader implements TimelineReader, FacetSource {
  private readonly db: SqliteDatabase;
  private readonly facetCache: FacetCache;

  constructor(db: SqliteDatabase, options: { now?: () => number } = {}) {
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
    return timelineOf(options, {
      latestSeq,
      total,
      facets: options.rows === 'kind' ? await this.facets() : undefined,
      marks: async () =>
        this.db
          .select<SummaryRow>(
            `SELECT ${SUMMARY_COLUMNS} FROM events WHERE ${where.sql} ORDER BY seq`,
            ...where.params,
          )
          .map(summaryOf),
      cells: async (bucketMs) => {
        const rowColumn =
          options.rows === 'namespace' ? `coalesce(namespace, '${CLUSTER_SCOPED}')` : 'resource';
        // Most of the history in the window: reading the table in order beats an index lookup per row.
        const scan = total > (await this.facets()).count / 4 ? 'events NOT INDEXED' : 'events';
        return this.db.select<DensityCell>(
          `SELECT ${rowColumn} AS row,
             CAST((julianday(time) - julianday(?)) * 86400000 / ? AS INTEGER) AS bucket,
             sum(type = 'ADDED') AS added, sum(type = 'UPDATED') AS updated, sum(type = 'DELETED') AS deleted
           FROM ${scan} WHERE ${where.sql} GROUP BY row, bucket`,
          options.from,
          bucketMs,
          ...where.params,
        );
      },
    });
  }

  async objectRecords(ref: ObjectRef, query: ObjectRecordsQuery): Promise<ObjectRecords> {
    // The sizes first (octet_length reads no value), then only the events that fit.
    const where = `resource = ? AND namespace IS ? AND name = ? AND ${CHANGES_ONLY}`;
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
    // Its size, and its text only when that is within the bound: one lookup.
    const [last] = this.db.select<{ json: string | null }>(
      'SELECT CASE WHEN octet_length(object) <= ? THEN object END AS json FROM objects WHERE resource = ? AND key = ?',
      query.maxBytes,
      ...key,
    );
    return objectRecords(events, kept, last?.json ?? undefined, last !== undefined && last.json === null);
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
