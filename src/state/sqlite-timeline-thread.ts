// The SQLite TimelineReader as the UI uses it: the queries run in a worker thread
// (sqlite-timeline-worker.ts) with its own read-only connection to the state file, so that a slow query
// delays neither the other pages' answers beyond its own turn nor, with `watch --ui`, the watch: the
// thread that receives and delivers events never runs a UI query. SQLite answers synchronously, so
// a thread is the one way to keep it off the event loop.
//
// Bounded: at most QUERY_QUEUE_LIMIT queries wait or run; beyond, a query is refused at once with
// ReaderBusy (503, counted, logged once). A worker that dies fails its waiting queries and is started
// again by the next one.
import { KubediffError, UsageError } from '../util/errors.ts';
import { type WorkerFailure, WorkerThread } from '../util/worker-thread.ts';
import { QUERY_QUEUE_LIMIT, QueryGate } from './query-gate.ts';
import type { QueryFailure, QueryJob, QueryMethod } from './sqlite-timeline-worker.ts';
import type {
  EventPage,
  EventSummary,
  EventsPageQuery,
  Facets,
  HistoryFilter,
  ObjectRecords,
  ObjectRecordsQuery,
  ObjectRef,
  Timeline,
  TimelineOptions,
  TimelineReader,
} from './timeline-reader.ts';

// The worker is this module's sibling with its extension: .js in dist/ (what kubediff runs), .ts where
// the tests import the sources.
const WORKER_URL = new URL(
  `./sqlite-timeline-worker${import.meta.url.slice(import.meta.url.lastIndexOf('.'))}`,
  import.meta.url,
);

function readerError(failure: WorkerFailure<QueryFailure>): KubediffError {
  switch (failure.kind) {
    case 'refused':
    case 'failed':
      return failure.error.usage
        ? new UsageError(failure.error.message)
        : new KubediffError(failure.error.message);
    case 'crashed':
      return new KubediffError(`the history reader failed: ${failure.message}`);
    case 'stopped':
    case 'timeout':
      return new KubediffError('the history reader stopped.');
    case 'closed':
      return new KubediffError('the history reader is closed.');
  }
}

export class SqliteTimelineThread implements TimelineReader {
  private readonly thread: WorkerThread<string, QueryJob, unknown, QueryFailure>;

  private constructor(path: string) {
    this.thread = new WorkerThread({
      url: WORKER_URL,
      start: path,
      error: readerError,
      limit: new QueryGate(QUERY_QUEUE_LIMIT),
      keepAlive: 'always',
    });
  }

  /** Opens the file in the worker; a UsageError when it cannot (not a state file, a newer schema…). */
  static async open(path: string): Promise<SqliteTimelineThread> {
    const reader = new SqliteTimelineThread(path);
    await reader.thread.ready();
    return reader;
  }

  private call<T>(method: QueryMethod, ...args: unknown[]): Promise<T> {
    return this.thread.request({ method, args }) as Promise<T>;
  }

  facets(): Promise<Facets> {
    return this.call('facets');
  }

  events(filter: HistoryFilter, page: EventsPageQuery): Promise<EventPage> {
    return this.call('events', filter, page);
  }

  timeline(filter: HistoryFilter, options: TimelineOptions): Promise<Timeline> {
    return this.call('timeline', filter, options);
  }

  objectRecords(ref: ObjectRef, query: ObjectRecordsQuery): Promise<ObjectRecords> {
    return this.call('objectRecords', ref, query);
  }

  after(seq: number, filter: HistoryFilter, limit: number): Promise<EventSummary[]> {
    return this.call('after', seq, filter, limit);
  }

  latestSeq(): Promise<number> {
    return this.call('latestSeq');
  }

  close(): Promise<void> {
    return this.thread.close();
  }
}
