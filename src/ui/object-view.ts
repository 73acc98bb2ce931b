// /api/v1/object's answers, built in a worker thread (object-view-worker.ts) so that a large object's
// history (thousands of keys, replaced many times) never holds the thread that receives, diffs and
// delivers events, nor /healthz: that thread only passes the stored text in and the answer's bytes out.
//
// Bounded (docs/ui.md, "Limits"): what one answer reads (OBJECT_LIMITS.maxBytes, applied by the reader,
// src/state/timeline-reader.ts), how long one answer may take (timeMs: beyond it the worker is stopped,
// and started again for the next), and how many wait (queue: beyond it a request is refused with
// ReaderBusy, 503). One answer is built at a time.
import { QueryGate } from '../state/query-gate.ts';
import type { ObjectRecords } from '../state/timeline-reader.ts';
import { formatDuration } from '../util/duration.ts';
import { KubediffError } from '../util/errors.ts';
import { type WorkerFailure, WorkerThread } from '../util/worker-thread.ts';
import type { ObjectViewJob } from './object-view-worker.ts';

export interface ObjectLimits {
  /** The JSON of one object's events read for one answer, and of its last state. */
  maxBytes: number;
  /** Building one answer. */
  timeMs: number;
  /** Answers waiting or being built. */
  queue: number;
}

/** Documented in docs/ui.md ("Limits"). */
export const OBJECT_LIMITS: ObjectLimits = {
  maxBytes: 16 * 1024 * 1024,
  timeMs: 10_000,
  queue: 4,
};

/** An answer that took longer than OBJECT_LIMITS.timeMs: not built (the UI answers 503). */
export class ObjectViewTooSlow extends KubediffError {}

// The worker is this module's sibling with its extension: .js in dist/, .ts where tests import sources.
const WORKER_URL = new URL(
  `./object-view-worker${import.meta.url.slice(import.meta.url.lastIndexOf('.'))}`,
  import.meta.url,
);

function viewError(failure: WorkerFailure<string>): KubediffError {
  switch (failure.kind) {
    case 'refused':
    case 'failed':
      return new KubediffError(`cannot build the answer: ${failure.error}`);
    case 'crashed':
      return new KubediffError(`the UI's worker failed: ${failure.message}`);
    case 'stopped':
      return new KubediffError("the UI's worker stopped.");
    case 'timeout':
      return new ObjectViewTooSlow(
        `building this object's answer took longer than ${formatDuration(failure.limitMs)}, the most one answer may take; ask for fewer of its events (limit).`,
      );
    case 'closed':
      return new KubediffError('the UI is closing.');
  }
}

export class ObjectViews {
  private readonly limits: ObjectLimits;
  private readonly thread: WorkerThread<undefined, ObjectViewJob, Uint8Array, string>;

  constructor(options: { limits?: Partial<ObjectLimits> | undefined } = {}) {
    this.limits = { ...OBJECT_LIMITS, ...options.limits };
    this.thread = new WorkerThread({
      url: WORKER_URL,
      start: undefined,
      error: viewError,
      timeLimitMs: this.limits.timeMs,
      limit: new QueryGate(this.limits.queue),
      keepAlive: 'never',
    });
  }

  /** What the reader may read for one answer (ObjectRecordsQuery.maxBytes). */
  get maxBytes(): number {
    return this.limits.maxBytes;
  }

  /**
   * The answer's bytes (JSON) from the records `read` returns; rejects with ReaderBusy when too many wait,
   * ObjectViewTooSlow past the time bound. The read runs inside the bound: a refused request reads nothing
   * (each read may bring two times maxBytes onto this thread).
   */
  render(read: () => Promise<ObjectRecords>, wanted: readonly number[]): Promise<Uint8Array> {
    return this.thread.request(async () => ({
      records: await read(),
      wanted: [...wanted],
      maxBytes: this.limits.maxBytes,
    }));
  }

  close(): Promise<void> {
    return this.thread.close();
  }
}
