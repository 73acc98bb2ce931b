// The SQLite TimelineReader as the UI uses it: the queries run in a worker thread
// (sqlite-timeline-worker.ts) with its own read-only connection to the state file, so that a slow query
// delays neither the other pages' answers beyond its own turn nor, with `watch --ui`, the watch: the
// thread that receives and delivers events never runs a UI query. SQLite answers synchronously, so
// a thread is the one way to keep it off the event loop.
//
// Bounded: at most QUERY_QUEUE_LIMIT queries wait or run; beyond, a query is refused at once with
// ReaderBusy (503, counted, logged once). A worker that dies fails its waiting queries and is started
// again by the next one.
import { Worker } from 'node:worker_threads';
import { KubediffError, UsageError } from '../util/errors.ts';
import { QUERY_QUEUE_LIMIT, QueryGate } from './query-gate.ts';
import type { QueryMethod, WorkerError, WorkerReply, WorkerStart } from './sqlite-timeline-worker.ts';
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

function errorOf(error: WorkerError): KubediffError {
  return error.usage ? new UsageError(error.message) : new KubediffError(error.message);
}

interface Pending {
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
}

export class SqliteTimelineThread implements TimelineReader {
  private readonly start: WorkerStart;
  private readonly gate = new QueryGate(QUERY_QUEUE_LIMIT);
  private readonly pending = new Map<number, Pending>();
  private worker: Promise<Worker> | undefined;
  private nextId = 1;
  private closed = false;

  private constructor(start: WorkerStart) {
    this.start = start;
  }

  /** Opens the file in the worker; a UsageError when it cannot (not a state file, a newer schema…). */
  static async open(path: string): Promise<SqliteTimelineThread> {
    const reader = new SqliteTimelineThread({ path });
    await reader.started();
    return reader;
  }

  private started(): Promise<Worker> {
    this.worker ??= new Promise<Worker>((resolve, reject) => {
      const worker = new Worker(WORKER_URL, { workerData: this.start });
      worker.once('message', (message: { ready: boolean; error?: WorkerError }) => {
        if (!message.ready) {
          reject(errorOf(message.error ?? { message: 'the history reader did not start.', usage: false }));
          void worker.terminate();
          return;
        }
        worker.on('message', (reply: WorkerReply) => this.answer(reply));
        resolve(worker);
      });
      worker.on('error', (error) => {
        reject(error);
        this.failAll(new KubediffError(`the history reader failed: ${error.message}`));
      });
      worker.on('exit', () => {
        this.worker = undefined;
        this.failAll(new KubediffError('the history reader stopped.'));
      });
    });
    // A failed start is not kept: the next query tries again.
    this.worker.catch(() => {
      this.worker = undefined;
    });
    return this.worker;
  }

  private answer(reply: WorkerReply): void {
    const pending = this.pending.get(reply.id);
    if (!pending) return;
    this.pending.delete(reply.id);
    if ('error' in reply) pending.reject(errorOf(reply.error));
    else pending.resolve(reply.result);
  }

  private failAll(error: Error): void {
    for (const pending of this.pending.values()) pending.reject(error);
    this.pending.clear();
  }

  private call<T>(method: QueryMethod, ...args: unknown[]): Promise<T> {
    if (this.closed) return Promise.reject(new KubediffError('the history reader is closed.'));
    return this.gate.run(async () => {
      const worker = await this.started();
      const id = this.nextId++;
      return new Promise<T>((resolve, reject) => {
        this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
        worker.postMessage({ id, method, args });
      });
    });
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

  async close(): Promise<void> {
    this.closed = true;
    const worker = await this.worker?.catch(() => undefined);
    this.worker = undefined;
    await worker?.terminate();
    this.failAll(new KubediffError('the history reader is closed.'));
  }
}
