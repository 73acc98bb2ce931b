// The worker thread of a webhook's layout (layout-thread.ts): prepares the layout once (a layout that
// does not compile is a refusal), then makes the body of each request from its JSON. An evaluation
// runs to its end without yielding; here it holds only this thread, which the sink stops at the limit.
// A failure's message is cut at MAX_MESSAGE_CHARS: it is logged and written with each dead letter.
import { serveRequests } from '../../../util/worker-thread.ts';
import { LayoutError, prepareLayout, renderLayout } from './layout.ts';

/** The request's data as JSON: the event, a batch's array, a digest or a story. */
export type LayoutJob = string;

export interface LayoutFailure {
  message: string;
  code: string;
}

/** Characters of a failure's message kept ($error can say much). */
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

void serveRequests<string, LayoutJob, string, LayoutFailure>(async (text) => {
  const layout = await prepareLayout(text);
  return { handle: (json) => renderLayout(layout, JSON.parse(json)) };
}, failureOf);
