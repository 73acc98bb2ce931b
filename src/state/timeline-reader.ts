// The history as `kubediff ui` reads it: filtered, paged, counted per time bucket, one object's story.
// This module is the contract: the TimelineReader interface and the shapes it answers with, which the UI
// server sends as JSON and the web page (src/ui/web/) imports as they are. One implementation per store:
// sqlite-timeline-reader.ts reads the SQLite state file (in a worker thread: sqlite-timeline-thread.ts),
// postgres-timeline-reader.ts a shared PostgreSQL history, with the same filters and the same answers
// (both built by timeline-assembly.ts), so the UI above them does not know which store it reads. The
// interface is asynchronous for both: PostgreSQL answers over the network, and the SQLite queries run
// off the thread that serves pages (and watches).
import type { EventType, Verdict } from '../events/event.ts';

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
  /**
   * What people type in the search box: a part of the name, or of anything the event holds (an image
   * `shop:1.5`, a user, a manager, a value), or a path as the path filter takes it.
   */
  search?: string | undefined;
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
  /**
   * The first changes (at most SUMMARY_CHANGES), each value as JSON cut to SUMMARY_VALUE_CHARS: what an
   * events table row says changed, without reading the whole event.
   */
  first?: SummaryChange[];
  /** The story the event belongs to: its root controller (the event's `owner`). */
  owner?: { kind: string; name: string };
  /** The OUTCOME of the rollout it started, once recorded (docs/outcomes.md): its verdict and summary. */
  outcome?: { verdict: Verdict; summary: string };
}

/** A change as a row shows it: values as JSON text (absent: the field was not there). */
export interface SummaryChange {
  path: string;
  from?: string;
  to?: string;
}

/** How many changes a summary carries, and how long each of their values may be (longer ones end in …). */
export const SUMMARY_CHANGES = 2;
export const SUMMARY_VALUE_CHARS = 200;

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
