// A webhook's `layout:` (docs/sinks.md, "Layouts", which says why JSONata): the request body built from
// the event by a JSONata expression, whose result is a JSON value and which cannot reach the process, the
// file system or the network. Compiled and checked here (the config checks), evaluated in a worker thread
// of its own (layout-thread.ts) that is stopped past its time, and bounded in depth and sequence length.
// One that fails or runs over fails that request (dead-lettered), never the sink. Loaded only with a layout.
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
