// What both stores' TimelineReaders build their answers with, from the rows their SQL returns: event
// summaries, the timeline's rows, marks or density cells, pages, one object's history. The SQL differs
// per store (sqlite-timeline-reader.ts, postgres-timeline-reader.ts); what the UI receives does not.
import type { Change } from '../diff/types.ts';
import type { EventType, Verdict } from '../events/event.ts';
import {
  CLUSTER_SCOPED,
  type DensityCell,
  type EventPage,
  type EventSummary,
  type Facets,
  type ObjectRecords,
  type ObjectRecordsQuery,
  type ObjectRef,
  type RowKey,
  SUMMARY_CHANGES,
  SUMMARY_VALUE_CHARS,
  type SummaryChange,
  type Timeline,
  type TimelineOptions,
} from './timeline-reader.ts';

/** `spec.replicas`, `containers[0].image`, `/spec/replicas` → the part of a JSON Pointer to look for. */
export function pathFragment(text: string): string {
  const trimmed = text.trim();
  if (trimmed.startsWith('/')) return trimmed;
  return trimmed.replace(/\[(\d+)\]/g, '.$1').replaceAll('.', '/');
}

/**
 * The texts a search looks for in an event's search text (search-text.ts), or in the stored JSON of an
 * event recorded before it had one: as typed, as JSON writes it (a quote or a backslash escaped), and as
 * a JSON Pointer when it reads as a path (`spec.replicas`).
 */
export function searchTexts(text: string): string[] {
  const trimmed = text.trim();
  const texts = new Set([trimmed, JSON.stringify(trimmed).slice(1, -1)]);
  if (/^[\w.[\]/-]+$/.test(trimmed) && /[.[/]/.test(trimmed)) texts.add(pathFragment(trimmed));
  return [...texts];
}

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
  /** The first two changes: JSON text (SQLite) or parsed (PostgreSQL's json); null when absent. */
  change0: string | Change | null;
  change1: string | Change | null;
  ownerKind: string | null;
  ownerName: string | null;
  /** The OUTCOME that follows it, when recorded: JSON text (SQLite) or parsed (PostgreSQL's json). */
  outcome?: string | { verdict: string | null; summary: string | null } | null;
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
  const first = [row.change0, row.change1].filter((change) => change !== null).map(summaryChange);
  if (first.length > 0) summary.first = first.slice(0, SUMMARY_CHANGES);
  if (row.ownerKind !== null && row.ownerName !== null)
    summary.owner = { kind: row.ownerKind, name: row.ownerName };
  const outcome = typeof row.outcome === 'string' ? JSON.parse(row.outcome) : row.outcome;
  if (outcome?.verdict) {
    summary.outcome = { verdict: outcome.verdict as Verdict, summary: cutText(outcome.summary ?? '') };
  }
  return summary;
}

/** An outcome's summary as a row shows it, cut to SUMMARY_VALUE_CHARS. */
function cutText(text: string): string {
  return text.length > SUMMARY_VALUE_CHARS ? `${text.slice(0, SUMMARY_VALUE_CHARS - 1)}…` : text;
}

/** A stored change as a row shows it: each value as JSON, cut to SUMMARY_VALUE_CHARS. */
function summaryChange(stored: string | Change): SummaryChange {
  const change: Change = typeof stored === 'string' ? (JSON.parse(stored) as Change) : stored;
  const cut = (value: unknown) => {
    const text = JSON.stringify(value);
    return text.length > SUMMARY_VALUE_CHARS ? `${text.slice(0, SUMMARY_VALUE_CHARS - 1)}…` : text;
  };
  const shown: SummaryChange = { path: change.path };
  if (change.from !== undefined) shown.from = cut(change.from);
  if (change.to !== undefined) shown.to = cut(change.to);
  return shown;
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

/** What a store answers a timeline from: the count of events in the window, and its two ways to draw them. */
export interface TimelineQueries {
  latestSeq: number;
  total: number;
  /** The facets, when the rows are labelled by kind. */
  facets: Facets | undefined;
  /** The window's events, oldest first. */
  marks(): Promise<EventSummary[]>;
  /** The window's counts per row and bucket of `bucketMs`. */
  cells(bucketMs: number): Promise<DensityCell[]>;
}

/** A timeline of single marks when the window holds few events (up to maxMarks), else of density cells. */
export async function timelineOf(options: TimelineOptions, queries: TimelineQueries): Promise<Timeline> {
  const { latestSeq, total, facets } = queries;
  if (total <= options.maxMarks) {
    const marks = await queries.marks();
    const rows = timelineRows(markCounts(marks, options.rows), options, facets);
    return assembleTimeline({ latestSeq, total, rows }, options, { marks });
  }
  const bucketMs = bucketLength(options);
  const cells = await queries.cells(bucketMs);
  const rows = timelineRows(cellCounts(cells), options, facets);
  return assembleTimeline({ latestSeq, total, rows }, options, { bucketMs, cells });
}

/** The length of one density bucket: the window split into `buckets`. */
export function bucketLength(options: TimelineOptions): number {
  const start = Date.parse(options.from);
  return Math.max(1, Math.ceil(Math.max(1, Date.parse(options.to) - start) / options.buckets));
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
