// A webhook's `layout:` (docs/sinks.md, "Layouts", which says why JSONata): the request body built from
// the event by a JSONata expression, whose result is a JSON value and which cannot reach the process, the
// file system or the network. Compiled and checked here (the config checks), evaluated in a worker thread
// of its own (layout-thread.ts) that is stopped past its time, and bounded in depth, sequence length and
// the size of what it builds (layout-bounds.ts). One that fails or runs over fails that request
// (dead-lettered), never the sink. Loaded only when a layout is configured.
import { createRequire } from 'node:module';
import type jsonataModule from 'jsonata';
import { groupedCount } from '../../../util/count-text.ts';
import {
  boundLayout,
  checkJsonLength,
  type LayoutBudget,
  LayoutLimitError,
  type OriginalFunctions,
} from './layout-bounds.ts';

type Jsonata = typeof jsonataModule;
export type LayoutExpression = ReturnType<Jsonata>;

/**
 * Per evaluation: milliseconds, nesting depth of calls, items of a sequence, characters of one text,
 * characters of an expression given to $eval, the result's JSON (the request body) and the request's
 * data given to the layout, in bytes. The time is enforced by the layout's thread (layout-thread.ts),
 * which stops the worker thread at the limit whatever the expression is doing: JSONata's own clock is
 * read only between its steps, so a regular expression or a native function that runs for long would
 * escape it. A layout takes well under a millisecond (bench/); half a second is a runaway. The sizes are
 * enforced in the worker thread (layout-bounds.ts) and, for the input, before it is sent there: a text of
 * 4 Mi characters holds the largest object the API server stores (1.5 MiB in etcd, 3 MiB per request)
 * written out whole, and costs at most 8 MiB; `made` bounds what all the calls of one evaluation return. `heapMb` is the worker thread's V8 heap (resourceLimits),
 * which applies only when the process has no --max-old-space-size (that flag overrides it): a backstop
 * behind the bounds above, which keep a thread well under it.
 */
export const LAYOUT_LIMITS = {
  timeout: 500,
  stack: 200,
  sequence: 100_000,
  text: 4 * 1024 * 1024,
  evalText: 256 * 1024,
  made: 64 * 1024 * 1024,
  body: 8 * 1024 * 1024,
  input: 8 * 1024 * 1024,
  heapMb: 256,
} as const;

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
  /**
   * JSONata's error code (D3030…), a bound's ('text', 'sequence', 'body', 'input', 'eval', 'memory'), or
   * 'timeout' / 'worker': for saying each kind of failure once.
   */
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
 * A layout compiled for evaluation, with the bounds of what it may build installed (layout-bounds.ts);
 * throws a LayoutError when it does not compile.
 */
export async function prepareLayout(text: string): Promise<PreparedLayout> {
  const expression = compileLayout(text);
  const budget = boundLayout(expression, LAYOUT_LIMITS, await originalFunctions());
  return { expression, budget };
}

/** A layout ready to render: its expression, and the count of what one evaluation made. */
export interface PreparedLayout {
  expression: LayoutExpression;
  budget: LayoutBudget;
}

let originals: Promise<OriginalFunctions> | undefined;

/** JSONata's own functions of the names the bounds replace, read once (as a layout would: `$pad`). */
function originalFunctions(): Promise<OriginalFunctions> {
  originals ??= (async () => {
    const names = ['pad', 'length', 'substring', 'join', 'string', 'clone', 'split', 'replace', 'eval'];
    const found = (await load()(`[${names.map((name) => `$${name}`).join(', ')}]`).evaluate({})) as never[];
    const byName = new Map(names.map((name, index) => [name, found[index]]));
    return (name: string) => {
      const own = byName.get(name);
      if (!own) throw new Error(`no JSONata function $${name}`);
      return own;
    };
  })();
  return originals;
}

/**
 * The body `layout` (from prepareLayout) makes of `input` (a parsed copy of an event, a batch of them, a
 * digest or a story), as JSON text. Throws a LayoutError saying why when the expression fails, runs over
 * one of its bounds, or yields nothing. Runs to its end without turning the event loop: only the layout's
 * worker thread calls it (layout-worker.ts).
 */
export async function renderLayout(layout: PreparedLayout, input: unknown): Promise<string> {
  let result: unknown;
  try {
    layout.budget.start();
    result = await layout.expression.evaluate(input);
  } catch (error) {
    if (error instanceof LayoutLimitError) throw new LayoutError(error.message, error.code);
    throw new LayoutError(`the layout failed: ${describeJsonataError(error)}`, codeOf(error));
  }
  if (result === undefined) throw new LayoutError('the layout yields nothing for this event');
  try {
    // Measured before it is written: the text may not be made at all.
    checkJsonLength(result, LAYOUT_LIMITS.body, false, 'body');
  } catch (error) {
    if (error instanceof LayoutLimitError) throw new LayoutError(error.message, error.code);
    throw error;
  }
  // Functions in the result are written as $string writes them: "" (a lambda holds its whole scope).
  const body = JSON.stringify(result, (_key, value: unknown) => (isFunction(value) ? '' : value));
  if (Buffer.byteLength(body) > LAYOUT_LIMITS.body) {
    throw new LayoutError(
      `the layout's result is ${groupedCount(Buffer.byteLength(body))} bytes of JSON, over its limit of ${LAYOUT_LIMITS.body / 2 ** 20} MiB`,
      'body',
    );
  }
  return body;
}

function isFunction(value: unknown): boolean {
  if (typeof value === 'function') return true;
  return (
    value !== null &&
    typeof value === 'object' &&
    ('_jsonata_function' in value || '_jsonata_lambda' in value)
  );
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
