// A webhook's layout, evaluated in a worker thread of its own (layout-worker.ts, through
// src/util/worker-thread.ts), so that the thread that watches, serves /healthz and feeds every other sink
// never runs an expression (JSONata reads its clock only between its steps). The worker is terminated
// when an evaluation runs over LAYOUT_LIMITS.timeout of its thread's CPU time (wall time before Node
// 24.6) or its heap (LAYOUT_LIMITS.heapMb); the next evaluation gets a new one. An input over
// LAYOUT_LIMITS.input is not evaluated. One thread per sink with a layout, started on its first request,
// keeping the process alive only while it evaluates; this module is imported only when a layout is set.
import { formatDuration } from '../../../util/duration.ts';
import { formatSize } from '../../../util/size.ts';
import { type WorkerFailure, WorkerThread } from '../../../util/worker-thread.ts';
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

/**
 * How long, in time limits, an evaluation may wait for a core before the clock stops it whatever its
 * thread's CPU time says (10 s with the 500 ms limit): a bound on waiting, not a second limit.
 */
const STARVED_LIMIT = 20;

function layoutError(failure: WorkerFailure<LayoutFailure>): LayoutError {
  switch (failure.kind) {
    case 'refused':
    case 'failed':
      return new LayoutError(failure.error.message, failure.error.code);
    case 'crashed':
      return failure.code === 'ERR_WORKER_OUT_OF_MEMORY'
        ? new LayoutError(
            `the layout ran out of its thread's memory (its heap limit, ${LAYOUT_LIMITS.heapMb} MiB) and was stopped`,
            'memory',
          )
        : new LayoutError(`the layout's thread failed: ${failure.message}`, 'worker');
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
    const timeLimitMs = options.timeoutMs ?? LAYOUT_LIMITS.timeout;
    // No bound on waiting evaluations: a sink sends one request at a time.
    this.thread = new WorkerThread({
      url: WORKER_URL,
      start: text,
      error: layoutError,
      timeLimitMs,
      cpuTime: { starvedAfterMs: STARVED_LIMIT * timeLimitMs },
      resourceLimits: { maxOldGenerationSizeMb: LAYOUT_LIMITS.heapMb },
      keepAlive: 'busy',
    });
  }

  async render(json: string): Promise<string> {
    // The thread parses what it is given: bounded before it gets there (a batch with a large batchBytes).
    const bytes = Buffer.byteLength(json);
    if (bytes > LAYOUT_LIMITS.input) {
      throw new LayoutError(
        `the layout was not evaluated: its input is ${formatSize(bytes)} of JSON, over its limit of ${formatSize(LAYOUT_LIMITS.input)}`,
        'input',
      );
    }
    return this.thread.request(json);
  }

  close(): Promise<void> {
    return this.thread.close();
  }
}
