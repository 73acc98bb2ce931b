// A webhook's `layout:` (docs/sinks.md, "Layouts"): the request body built from the event by a JSONata
// expression, so that any JSON API is a sink (PagerDuty Events v2, Telegram's sendMessage, an incident
// tool…). JSONata was chosen over a text template (Handlebars, Mustache: they build strings, so every value
// would need JSON escaping by hand, and Handlebars compiles templates to JavaScript) and other JSON query
// languages (JMESPath cannot build a new object from computed parts as freely): its result is a JSON value,
// it has no access to the process, the file system, the network or JavaScript (object prototypes are
// out of its reach), it is maintained (2.x in 2026), MIT, without dependencies, 0.9 MB installed, and
// loaded only when a layout is configured. What a configured expression can still do is run for long (a
// loop, a regular expression that backtracks without end): it is evaluated in a worker thread of its
// own (layout-thread.ts), stopped when it runs over its time, and bounded in depth and sequence length
// here; one that fails or runs over fails that request (dead-lettered), never the sink.
import { createRequire } from 'node:module';
import type jsonataModule from 'jsonata';

type Jsonata = typeof jsonataModule;
export type LayoutExpression = ReturnType<Jsonata>;

/**
 * Per evaluation: milliseconds, nesting depth of calls, items of a sequence. The time is enforced by the
 * layout's thread (layout-thread.ts), which stops the worker thread at the limit whatever the expression
 * is doing: JSONata's own clock is read only between its steps, so a regular expression or a native
 * function that runs for long would escape it. A layout takes well under a millisecond (bench/); half a
 * second is a runaway.
 */
export const LAYOUT_LIMITS = { timeout: 500, stack: 200, sequence: 100_000 } as const;

let jsonata: Jsonata | undefined;

/** jsonata, loaded on first use (synchronously: the config checks compile layouts). */
function load(): Jsonata {
  jsonata ??= createRequire(import.meta.url)('jsonata') as Jsonata;
  return jsonata;
}

/**
 * Compiles a layout; throws a LayoutError (with the position) when it is not a JSONata expression. Its
 * evaluations are bounded in depth and sequence length; their time is the caller's to bound.
 */
export function compileLayout(text: string): LayoutExpression {
  try {
    return load()(text, { stack: LAYOUT_LIMITS.stack, sequence: LAYOUT_LIMITS.sequence });
  } catch (error) {
    throw new LayoutError(describeJsonataError(error), codeOf(error));
  }
}

export class LayoutError extends Error {
  /** JSONata's error code (D3030…), or 'timeout' / 'worker': for saying each kind of failure once. */
  readonly code: string;
  constructor(message: string, code = '') {
    super(message);
    this.code = code;
  }
}

/** Why `text` is not a layout, or undefined when it compiles (the config checks). */
export function layoutProblem(text: string): string | undefined {
  try {
    compileLayout(text);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

/**
 * The body `layout` makes of `input` (a parsed copy of an event, a batch of them, a digest or a story),
 * as JSON text. Throws a LayoutError saying why when the expression fails, runs over its depth or
 * sequence limits, or yields nothing. Runs to its end without turning the event loop: only the layout's
 * worker thread calls it (layout-worker.ts).
 */
export async function renderLayout(layout: LayoutExpression, input: unknown): Promise<string> {
  let result: unknown;
  try {
    result = await layout.evaluate(input);
  } catch (error) {
    throw new LayoutError(`the layout failed: ${describeJsonataError(error)}`, codeOf(error));
  }
  if (result === undefined) throw new LayoutError('the layout yields nothing for this event');
  return JSON.stringify(result);
}

function codeOf(error: unknown): string {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : '';
}

/** 'D3030 Unable to cast value to a number… (at character 7)'. */
function describeJsonataError(error: unknown): string {
  const { code, message, position } = (error ?? {}) as { code?: string; message?: string; position?: number };
  const text = message ?? String(error);
  return `${code ? `${code} ` : ''}${text}${typeof position === 'number' ? ` (at character ${position})` : ''}`;
}
