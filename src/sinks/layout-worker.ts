// The worker thread of a webhook's layout (layout-thread.ts): compiles the layout once, then makes the
// body of each request from its JSON. An evaluation runs to its end without yielding, and may run long
// (a loop, a regular expression that backtracks without end): here it holds only this thread, which the
// sink stops at the time limit.
//
// Messages in: LayoutJob. Out: { ready: true } once compiled (or { ready: false, error }), then per job
// { id, body } or { id, error }. Before it posts a job's answer, the worker marks the job done in the
// shared `finished` cell, so that the sink can tell an answer still on its way from a runaway; as it
// begins one, it writes the job's id and its thread's CPU time in `begun` and `cpuAtBegin`, so that the
// sink counts the time the evaluation has had a core, not the time it waited for one.
import { isMainThread, type MessagePort, parentPort, workerData } from 'node:worker_threads';
import { LayoutError, type PreparedLayout, prepareLayout, renderLayout } from './layout.ts';

export interface LayoutStart {
  /** The layout's JSONata text (the config checks have compiled it once). */
  text: string;
  /** One Int32: the id of the last job whose answer is posted. */
  finished: SharedArrayBuffer;
  /** One Int32: the id of the last job begun; one Float64: this thread's CPU time then, in µs. */
  begun: SharedArrayBuffer;
  cpuAtBegin: SharedArrayBuffer;
}

export interface LayoutJob {
  id: number;
  /** The request's data as JSON: the event, a batch's array, a digest or a story. */
  json: string;
}

export interface LayoutFailure {
  message: string;
  code: string;
}

export type LayoutReply = { id: number; body: string } | { id: number; error: LayoutFailure };

export type LayoutReady = { ready: true } | { ready: false; error: LayoutFailure };

/** Characters of a failure's message kept: it is logged and written with each dead letter ($error can say much). */
const MAX_MESSAGE_CHARS = 500;

function failureOf(error: unknown): LayoutFailure {
  const failure =
    error instanceof LayoutError
      ? { message: error.message, code: error.code }
      : { message: `the layout failed: ${String((error as Error)?.message ?? error)}`, code: 'error' };
  if (failure.message.length > MAX_MESSAGE_CHARS)
    failure.message = `${failure.message.slice(0, MAX_MESSAGE_CHARS)}…`;
  return failure;
}

async function serve(port: MessagePort, start: LayoutStart): Promise<void> {
  const finished = new Int32Array(start.finished);
  const begun = new Int32Array(start.begun);
  const cpuAtBegin = new Float64Array(start.cpuAtBegin);
  let layout: PreparedLayout;
  try {
    layout = await prepareLayout(start.text);
  } catch (error) {
    port.postMessage({ ready: false, error: failureOf(error) } satisfies LayoutReady);
    return;
  }
  port.postMessage({ ready: true } satisfies LayoutReady);
  port.on('message', async (job: LayoutJob) => {
    // For the sink's time limit, which counts this thread's CPU time (layout-thread.ts).
    const cpu = process.threadCpuUsage();
    cpuAtBegin[0] = cpu.user + cpu.system;
    Atomics.store(begun, 0, job.id);
    let reply: LayoutReply;
    try {
      reply = { id: job.id, body: await renderLayout(layout, JSON.parse(job.json)) };
    } catch (error) {
      reply = { id: job.id, error: failureOf(error) };
    }
    Atomics.store(finished, 0, job.id);
    port.postMessage(reply);
  });
}

// Only in a worker thread: imported elsewhere, it only defines.
if (parentPort && !isMainThread) void serve(parentPort, workerData as LayoutStart);
