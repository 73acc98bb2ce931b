// A webhook's `layout:` (docs/sinks.md, "Layouts"): the request body built from the event by a JSONata
// expression, so that any JSON API is a sink (PagerDuty Events v2, Telegram's sendMessage, an incident
// tool…). JSONata was chosen over a text template (Handlebars, Mustache: they build strings, so every value
// would need JSON escaping by hand, and Handlebars compiles templates to JavaScript) and other JSON query
// languages (JMESPath cannot build a new object from computed parts as freely): its result is a JSON value,
// it has no access to the process, the file system, the network or JavaScript (object prototypes are
// out of its reach), it is maintained (2.x in 2026), MIT, without dependencies, 0.9 MB installed, and
// loaded only when a layout is configured. What a configured expression can still do is loop: each
// evaluation is bounded in time, depth and sequence length (LAYOUT_LIMITS), and one that fails or runs
// over fails that request (dead-lettered), never the sink.
import { createRequire } from 'node:module';
import type jsonataModule from 'jsonata';

type Jsonata = typeof jsonataModule;
export type LayoutExpression = ReturnType<Jsonata>;

/**
 * Per evaluation: milliseconds, nesting depth of calls, items of a sequence. The time is JSONata's own
 * clock, from the start of the evaluation; the sink evaluates one body at a time, and an evaluation runs
 * to its end without yielding to I/O, so it measures the expression's own work. A layout takes well under
 * a millisecond (bench/); half a second is a runaway.
 */
export const LAYOUT_LIMITS = { timeout: 500, stack: 200, sequence: 100_000 } as const;

let jsonata: Jsonata | undefined;

/** jsonata, loaded on first use (synchronously: the config checks compile layouts). */
function load(): Jsonata {
  jsonata ??= createRequire(import.meta.url)('jsonata') as Jsonata;
  return jsonata;
}

/** Compiles a layout; throws a LayoutError (with the position) when it is not a JSONata expression. */
export function compileLayout(text: string): LayoutExpression {
  try {
    return load()(text, { ...LAYOUT_LIMITS });
  } catch (error) {
    throw new LayoutError(describeJsonataError(error), codeOf(error));
  }
}

export class LayoutError extends Error {
  /** JSONata's error code (D1012: the time limit), for saying each kind of failure once. */
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
 * as JSON text. Throws a LayoutError saying why when the expression fails, runs over its limits, or
 * yields nothing.
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

/** 'D1012 Evaluation timeout after 100 milliseconds… (at character 7)'. */
function describeJsonataError(error: unknown): string {
  const { code, message, position } = (error ?? {}) as { code?: string; message?: string; position?: number };
  const text = message ?? String(error);
  return `${code ? `${code} ` : ''}${text}${typeof position === 'number' ? ` (at character ${position})` : ''}`;
}
