// A webhook's layout, evaluated in a worker thread of its own (layout-worker.ts, through
// src/util/worker-thread.ts), so that the thread that watches, serves /healthz and feeds every other sink
// never runs an expression: JSONata reads its clock only between its steps, so a runaway expression (a
// loop, a regular expression that backtracks without end) would hold the whole process. Here it holds
// only the worker, which is terminated past LAYOUT_LIMITS.timeout; the next evaluation gets a new one.
// One thread per sink that has a layout, started on its first request, keeping the process alive only
// while it evaluates; this module is imported only when a layout is configured.
import { formatDuration } from '../util/duration.ts';
import { type WorkerFailure, WorkerThread } from '../util/worker-thread.ts';
import { LAYOUT_LIMITS, LayoutError } from './layout.ts';
import type { LayoutFailure, LayoutJob } from './layout-worker.ts';

// The worker is this module's sibling with its extension: .js in dist/ (what kubediff runs), .ts where
// the tests import the sources.
const WORKER_URL = new URL(
  `./layout-worker${import.meta.url.slice(import.meta.url.lastIndexOf('.'))}`,
  import.meta.url,
);

/** What makes a webhook's body from its data: a layout (or, in tests, anything that does the same). */
export interface LayoutRenderer {
  /** The body made of `json` (the request's data); rejects with a LayoutError when there is none. */
  render(json: string): Promise<string>;
  close(): Promise<void>;
}

function layoutError(failure: WorkerFailure<LayoutFailure>): LayoutError {
  switch (failure.kind) {
    case 'refused':
    case 'failed':
      return new LayoutError(failure.error.message, failure.error.code);
    case 'crashed':
      return new LayoutError(`the layout's thread failed: ${failure.message}`, 'worker');
    case 'stopped':
      return new LayoutError("the layout's thread stopped", 'worker');
    case 'timeout':
      return new LayoutError(
        `the layout ran over its time limit (${formatDuration(failure.limitMs)}) and was stopped`,
        'timeout',
      );
    case 'closed':
      return new LayoutError('the layout was not evaluated: the sink is stopping', 'closed');
  }
}

export class LayoutThread implements LayoutRenderer {
  private readonly thread: WorkerThread<string, LayoutJob, string, LayoutFailure>;

  constructor(text: string, options: { timeoutMs?: number } = {}) {
    // No bound on waiting evaluations: a sink sends one request at a time.
    this.thread = new WorkerThread({
      url: WORKER_URL,
      start: text,
      error: layoutError,
      timeLimitMs: options.timeoutMs ?? LAYOUT_LIMITS.timeout,
      keepAlive: 'busy',
    });
  }

  render(json: string): Promise<string> {
    return this.thread.request(json);
  }

  close(): Promise<void> {
    return this.thread.close();
  }
}
