// The worker thread of a webhook's layout (layout-thread.ts): compiles the layout once, then makes the
// body of each request from its JSON. An evaluation runs to its end without yielding, and may run long
// (a loop, a regular expression that backtracks without end): here it holds only this thread, which the
// sink stops at the time limit.
//
// Messages in: LayoutJob. Out: { ready: true } once compiled (or { ready: false, error }), then per job
// { id, body } or { id, error }. Before it posts a job's answer, the worker marks the job done in the
// shared `finished` cell, so that the sink can tell an answer still on its way from a runaway.
import { isMainThread, type MessagePort, parentPort, workerData } from 'node:worker_threads';
import { compileLayout, LayoutError, type LayoutExpression, renderLayout } from './layout.ts';

export interface LayoutStart {
  /** The layout's JSONata text (the config checks have compiled it once). */
  text: string;
  /** One Int32: the id of the last job whose answer is posted. */
  finished: SharedArrayBuffer;
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

function failureOf(error: unknown): LayoutFailure {
  if (error instanceof LayoutError) return { message: error.message, code: error.code };
  return { message: `the layout failed: ${String((error as Error)?.message ?? error)}`, code: 'error' };
}

function serve(port: MessagePort, start: LayoutStart): void {
  const finished = new Int32Array(start.finished);
  let layout: LayoutExpression;
  try {
    layout = compileLayout(start.text);
  } catch (error) {
    port.postMessage({ ready: false, error: failureOf(error) } satisfies LayoutReady);
    return;
  }
  port.postMessage({ ready: true } satisfies LayoutReady);
  port.on('message', async (job: LayoutJob) => {
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
if (parentPort && !isMainThread) serve(parentPort, workerData as LayoutStart);
