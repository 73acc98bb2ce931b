// The worker thread of the SQLite TimelineReader (sqlite-timeline-thread.ts): opens the state file
// read-only (a file it cannot open is a refusal, described) and answers the UI's queries one at a time,
// at a lower priority than the thread that watches.
import { errorMessage, UsageError } from '../util/errors.ts';
import { yieldToMainThread } from '../util/thread-priority.ts';
import { serveRequests } from '../util/worker-thread.ts';
import { SqliteDatabase } from './sqlite-database.ts';
import { SqliteTimelineReader } from './sqlite-timeline-reader.ts';
import type { TimelineReader } from './timeline-reader.ts';

export type QueryMethod = 'facets' | 'events' | 'timeline' | 'objectRecords' | 'after' | 'latestSeq';

export interface QueryJob {
  method: QueryMethod;
  args: unknown[];
}

export interface QueryFailure {
  message: string;
  usage: boolean;
}

void serveRequests<string, QueryJob, unknown, QueryFailure>(
  (path) => {
    yieldToMainThread();
    const reader: TimelineReader = new SqliteTimelineReader(SqliteDatabase.open(path, { readOnly: true }));
    return {
      handle: ({ method, args }) =>
        (reader[method] as (...args: unknown[]) => Promise<unknown>).apply(reader, args),
      close: () => void reader.close(),
    };
  },
  (error) => ({ message: errorMessage(error), usage: error instanceof UsageError }),
);
