// The worker thread of a webhook's layout (layout-thread.ts): compiles the layout once (a layout that
// does not compile is a refusal), then makes the body of each request from its JSON. An evaluation
// runs to its end without yielding; here it holds only this thread, which the sink stops at the limit.
import { serveRequests } from '../util/worker-thread.ts';
import { compileLayout, LayoutError, renderLayout } from './layout.ts';

/** The request's data as JSON: the event, a batch's array, a digest or a story. */
export type LayoutJob = string;

export interface LayoutFailure {
  message: string;
  code: string;
}

function failureOf(error: unknown): LayoutFailure {
  if (error instanceof LayoutError) return { message: error.message, code: error.code };
  return { message: `the layout failed: ${String((error as Error)?.message ?? error)}`, code: 'error' };
}

serveRequests<string, LayoutJob, string, LayoutFailure>((text) => {
  const layout = compileLayout(text);
  return { handle: (json) => renderLayout(layout, JSON.parse(json)) };
}, failureOf);
