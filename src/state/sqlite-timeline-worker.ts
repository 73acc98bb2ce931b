// The worker thread of the SQLite TimelineReader (sqlite-timeline-thread.ts): opens the state file
// read-only and answers the UI's queries one at a time, so that a slow one (a filter that reads every
// event of a large history) never holds the thread that serves pages and watches the cluster.
//
// Messages in: { id, method, args } (a TimelineReader method). Out: { id, result } or { id, error }.
// At start: { ready: true } or { ready: false, error }.

import { isMainThread, type MessagePort, parentPort, workerData } from 'node:worker_threads';
import { errorMessage, UsageError } from '../util/errors.ts';
import { yieldToMainThread } from '../util/thread-priority.ts';
import { SqliteDatabase } from './sqlite-database.ts';
import { SqliteTimelineReader } from './sqlite-timeline-reader.ts';
import type { TimelineReader } from './timeline-reader.ts';

export interface WorkerRequest {
  id: number;
  method: QueryMethod;
  args: unknown[];
}

export type QueryMethod = 'facets' | 'events' | 'timeline' | 'objectRecords' | 'after' | 'latestSeq';

export interface WorkerError {
  message: string;
  usage: boolean;
}

export type WorkerReply = { id: number; result: unknown } | { id: number; error: WorkerError };

export interface WorkerStart {
  path: string;
}

function describe(error: unknown): WorkerError {
  return { message: errorMessage(error), usage: error instanceof UsageError };
}

function serve(port: MessagePort, start: WorkerStart): void {
  // The UI's queries come after the watch's own work (src/util/thread-priority.ts).
  yieldToMainThread();
  let reader: TimelineReader;
  try {
    reader = new SqliteTimelineReader(SqliteDatabase.open(start.path, { readOnly: true }));
  } catch (error) {
    port.postMessage({ ready: false, error: describe(error) });
    return;
  }
  port.postMessage({ ready: true });
  port.on('message', async (request: WorkerRequest) => {
    try {
      const method = reader[request.method] as (...args: unknown[]) => Promise<unknown>;
      const result = await method.apply(reader, request.args);
      port.postMessage({ id: request.id, result } satisfies WorkerReply);
    } catch (error) {
      port.postMessage({ id: request.id, error: describe(error) } satisfies WorkerReply);
    }
  });
  port.on('close', () => {
    void reader.close();
  });
}

// Only in a worker thread: imported elsewhere, it only defines.
if (parentPort && !isMainThread) serve(parentPort, workerData as WorkerStart);
