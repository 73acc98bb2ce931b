// What one evaluation of a webhook's layout may build, enforced inside the layout's thread (docs/sinks.md,
// "Layouts", says why the worker's heap limit cannot be relied on). Every step's value is checked as
// JSONata's evaluator hands it on (`__evaluate_exit`): a text longer than `text` characters or an array
// over `sequence` items ends the evaluation. The functions that can build more before a step ends ($pad,
// $join, $string, $clone and the transform operator, $replace, $split, $eval; `&` of a non-string) are
// replaced by ones that check first; $length and $substring count code points without building arrays.
// The result's JSON is measured before it is made (`body`), the input's by the caller. Each bound throws a
// LayoutLimitError naming itself; the sink dead-letters the event with that reason.
import type jsonataModule from 'jsonata';
import { groupedCount } from '../../../util/count-text.ts';

type Expression = ReturnType<typeof jsonataModule>;
type JsonataFunction = {
  implementation: (this: unknown, ...args: unknown[]) => unknown;
  signature?: { definition?: string };
};

export interface LayoutBounds {
  /** Characters of one text (string) a step may make. */
  text: number;
  /** Items of one array a step may make (JSONata's `sequence` option bounds its sequences alike). */
  sequence: number;
  /** Characters of an expression $eval may parse (its syntax tree costs about 90 bytes per character). */
  evalText: number;
  /**
   * Characters of text and items of arrays that function calls may return in one evaluation, all told:
   * what bounds a loop of calls that each stay under `text` (a reference returned counts again).
   */
  made: number;
}

/** One layout's running count of what its calls made; started again for each evaluation. */
export interface LayoutBudget {
  start(): void;
}

/** A bound a layout ran into; `code` says which ('text', 'sequence', 'body'…), the message how far. */
export class LayoutLimitError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

const count = (n: number) => groupedCount(Math.round(n));
const sizeText = (n: number) =>
  n >= 2 ** 20 && n % 2 ** 20 === 0 ? `${n / 2 ** 20} Mi` : n % 1024 === 0 ? `${n / 1024} Ki` : count(n);

export function textLimitError(length: number, limit: number): LayoutLimitError {
  return new LayoutLimitError(
    'text',
    `the layout made a text of ${count(length)} characters or more, over its limit of ${sizeText(limit)} characters`,
  );
}

function sequenceLimitError(length: number, limit: number): LayoutLimitError {
  return new LayoutLimitError(
    'sequence',
    `the layout made an array of ${count(length)} items or more, over its limit of ${count(limit)} items`,
  );
}

/**
 * Installs the bounds on a compiled layout: the step hook and the bounded functions. `original` gives
 * JSONata's own function of a name ($pad…), read once from the library. Call start() on the budget
 * returned before each evaluation.
 */
export function boundLayout(
  expression: Expression,
  bounds: LayoutBounds,
  original: OriginalFunctions,
): LayoutBudget {
  const concatOperands = new WeakSet<object>();
  markConcatOperands(expression.ast(), concatOperands);
  let made = 0;
  const checkStep = (expr: { type?: string }, _input: unknown, _environment: unknown, result: unknown) => {
    let size = 0;
    if (typeof result === 'string') {
      if (result.length > bounds.text) throw textLimitError(result.length, bounds.text);
      size = result.length;
    } else if (Array.isArray(result)) {
      if (result.length > bounds.sequence) throw sequenceLimitError(result.length, bounds.sequence);
      if (concatOperands.has(expr)) checkJsonLength(result, bounds.text, false);
      size = result.length;
    } else if (result !== null && typeof result === 'object' && concatOperands.has(expr)) {
      checkJsonLength(result, bounds.text, false);
    }
    // A call (`$f(…)`, `… ~> $f`) is where text and arrays are made; other steps pass values on.
    if (size > 0 && (expr.type === 'function' || expr.type === 'apply')) {
      made += size;
      if (made > bounds.made) {
        throw new LayoutLimitError(
          'made',
          `the layout's function calls made ${count(made)} characters and array items or more in one evaluation, over its limit of ${sizeText(bounds.made)}`,
        );
      }
    }
  };
  // JSONata looks the hook up by this symbol at every step (jsonata.js, evaluate()).
  expression.assign(Symbol.for('jsonata.__evaluate_exit') as unknown as string, checkStep);
  for (const [name, bounded] of Object.entries(boundedFunctions(bounds, original))) {
    const own = original(name);
    expression.registerFunction(name, bounded, own.signature?.definition);
  }
  return {
    start: () => {
      made = 0;
    },
  };
}

export type OriginalFunctions = (name: string) => JsonataFunction;

/** The AST nodes whose value `&` turns into text (JSONata stringifies a non-string operand itself). */
function markConcatOperands(node: unknown, marked: WeakSet<object>): void {
  const stack: unknown[] = [node];
  const seen = new Set<unknown>();
  while (stack.length > 0) {
    const current = stack.pop();
    if (current === null || typeof current !== 'object' || seen.has(current)) continue;
    seen.add(current);
    const ast = current as { type?: unknown; value?: unknown; lhs?: object; rhs?: object };
    if (ast.type === 'binary' && ast.value === '&') {
      if (ast.lhs) marked.add(ast.lhs);
      if (ast.rhs) marked.add(ast.rhs);
    }
    for (const child of Object.values(current))
      if (child !== null && typeof child === 'object') stack.push(child);
  }
}

function boundedFunctions(
  bounds: LayoutBounds,
  original: OriginalFunctions,
): Record<string, (this: unknown, ...args: unknown[]) => unknown> {
  const call = (name: string, self: unknown, args: unknown[]) =>
    original(name).implementation.apply(self, args);
  const stringify = original('string').implementation;
  return {
    pad(str, width, char) {
      return pad(str as string | undefined, width as number, char as string | undefined, bounds.text);
    },
    length(str) {
      return str === undefined ? undefined : codePointLength(str as string);
    },
    substring(str, start, length) {
      return substring(str as string | undefined, start as number, length as number | undefined);
    },
    join(strs, separator) {
      if (Array.isArray(strs)) {
        const sep = typeof separator === 'string' ? separator.length : 0;
        let total = Math.max(0, strs.length - 1) * sep;
        for (const item of strs) {
          total += typeof item === 'string' ? item.length : 0;
          if (total > bounds.text) throw textLimitError(total, bounds.text);
        }
      }
      return call('join', this, [strs, separator]);
    },
    string(arg, prettify) {
      if (arg !== null && typeof arg === 'object' && !isJsonataFunction(arg))
        checkJsonLength(arg, bounds.text, prettify === true);
      return stringify.apply(this, [arg, prettify]);
    },
    clone(arg) {
      // A clone is its JSON text parsed back: the same bound as $string's.
      if (arg !== null && typeof arg === 'object') checkJsonLength(arg, bounds.text, false);
      return call('clone', this, [arg]);
    },
    split(str, separator, limit) {
      // A limit one past the bound: more items than that are a bound hit, not a shorter answer.
      const capped = typeof limit === 'number' && limit <= bounds.sequence ? limit : bounds.sequence + 1;
      // A negative limit is JSONata's error to give (D3020).
      const run = call('split', this, [
        str,
        separator,
        typeof limit === 'number' && limit < 0 ? limit : capped,
      ]);
      return Promise.resolve(run).then((parts) => {
        if (Array.isArray(parts) && parts.length > bounds.sequence)
          throw sequenceLimitError(parts.length, bounds.sequence);
        return parts;
      });
    },
    async replace(str, pattern, replacement, limit) {
      if (typeof str === 'string' && typeof replacement === 'string') {
        await checkReplacement(str, pattern, replacement, limit as number | undefined, bounds);
      }
      return call('replace', this, [str, pattern, replacement, limit]);
    },
    eval(expr, focus) {
      if (typeof expr === 'string' && expr.length > bounds.evalText) {
        throw new LayoutLimitError(
          'eval',
          `the layout gave $eval an expression of ${count(expr.length)} characters, over its limit of ${sizeText(bounds.evalText)} characters`,
        );
      }
      return call('eval', this, [expr, focus]);
    },
  };
}

function isJsonataFunction(value: object): boolean {
  return '_jsonata_function' in value || '_jsonata_lambda' in value;
}

/**
 * What $replace with a text replacement would make, measured before it is made: JSONata builds the result
 * one piece per match (and one per `$n` in the replacement), so both the matches and the result's length
 * are bounded. A pattern is a text or a regular expression, which JSONata hands a function as a function
 * that answers with a promise of the first match (match, next()).
 */
async function checkReplacement(
  str: string,
  pattern: unknown,
  replacement: string,
  limit: number | undefined,
  bounds: LayoutBounds,
): Promise<void> {
  const most = limit === undefined || limit < 0 ? Number.POSITIVE_INFINITY : limit;
  const dollars = replacement.split('$').length - 1;
  let matches = 0;
  let length = str.length;
  if (typeof pattern === 'string') {
    if (pattern === '') return;
    for (
      let at = str.indexOf(pattern);
      at >= 0 && matches < most;
      at = str.indexOf(pattern, at + pattern.length)
    ) {
      matches++;
      length += replacement.length - pattern.length;
      if (matches > bounds.sequence) throw sequenceLimitError(matches, bounds.sequence);
      if (length > bounds.text) throw textLimitError(length, bounds.text);
    }
    return;
  }
  if (typeof pattern !== 'function') return;
  type Match = { match: string; next: () => Match | Promise<Match> } | undefined;
  for (let found = (await pattern(str)) as Match; found && matches < most; found = await found.next()) {
    matches++;
    // A `$n` stands for a group, which is at most the whole match.
    length += replacement.length + dollars * found.match.length - found.match.length;
    if (matches > bounds.sequence) throw sequenceLimitError(matches, bounds.sequence);
    if (length > bounds.text) throw textLimitError(length, bounds.text);
  }
}

/** JSONata's $pad, without the array of characters it builds to count them. */
function pad(
  str: string | undefined,
  width: number,
  char: string | undefined,
  limit: number,
): string | undefined {
  if (str === undefined) return undefined;
  const fill = char === undefined || char.length === 0 ? ' ' : char;
  const padLength = Math.abs(Math.trunc(width)) - codePointLength(str);
  if (!(padLength > 0)) return str;
  if (str.length + padLength > limit) throw textLimitError(str.length + padLength, limit);
  const fillPoints = codePointLength(fill);
  const repeated = fill.repeat(Math.ceil(padLength / fillPoints));
  // Without surrogates a code point is a UTF-16 unit: no need to scan the padding for them.
  const padding =
    fillPoints === fill.length ? repeated.slice(0, padLength) : codePointSlice(repeated, 0, padLength);
  return width > 0 ? str + padding : padding + str;
}

/** JSONata's $substring (positions in code points), without its array of characters. */
function substring(str: string | undefined, start: number, length: number | undefined): string | undefined {
  if (str === undefined) return undefined;
  const total = codePointLength(str);
  let from = start;
  if (total + from < 0) from = 0;
  if (length !== undefined) {
    if (length <= 0) return '';
    const end = from >= 0 ? from + length : total + from + length;
    return codePointSlice(str, from, end);
  }
  return codePointSlice(str, from, undefined);
}

const SURROGATE = /[\ud800-\udfff]/;

export function codePointLength(str: string): number {
  if (!SURROGATE.test(str)) return str.length;
  let n = 0;
  for (let i = 0; i < str.length; i++) {
    const unit = str.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < str.length) {
      const next = str.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}

/** Array.prototype.slice over the string's code points (what JSONata's functions do), by offsets. */
export function codePointSlice(str: string, start: number, end: number | undefined): string {
  if (!SURROGATE.test(str)) return str.slice(start, end);
  const total = codePointLength(str);
  const from = sliceIndex(start, total, 0);
  const to = end === undefined ? total : sliceIndex(end, total, total);
  if (to <= from) return '';
  let point = 0;
  let startOffset = str.length;
  let endOffset = str.length;
  for (let i = 0; i < str.length; i++) {
    if (point === from && startOffset === str.length) startOffset = i;
    if (point === to) {
      endOffset = i;
      break;
    }
    const unit = str.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < str.length) {
      const next = str.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    point++;
  }
  return str.slice(startOffset, endOffset);
}

/** ECMAScript's relative index of slice(): truncated, from the end when negative, clamped. */
function sliceIndex(value: number, length: number, fallback: number): number {
  const n = Math.trunc(Number(value));
  if (Number.isNaN(n)) return value === undefined ? fallback : 0;
  if (n < 0) return Math.max(length + n, 0);
  return Math.min(n, length);
}

/**
 * Throws a LayoutLimitError when `value`'s JSON text (as JSON.stringify, or JSONata's $string, would
 * write it) would be longer than `limit` characters. Walks the value (iteratively: an input may be
 * nested deep) and stops as soon as the count passes the limit, so its cost is bounded by the limit
 * too. Shared references count each time they are written, as they are in the text.
 */
export function checkJsonLength(value: unknown, limit: number, pretty: boolean, code = 'text'): void {
  const length = jsonLengthUpTo(value, limit, pretty);
  if (length > limit) {
    if (code === 'text') throw textLimitError(length, limit);
    throw new LayoutLimitError(
      code,
      `the layout's result is ${count(length)} characters of JSON or more, over its limit of ${sizeText(limit)}B`,
    );
  }
}

/** The length of `value`'s JSON text, or a number over `limit` once it is known to be. */
export function jsonLengthUpTo(value: unknown, limit: number, pretty: boolean): number {
  let total = 0;
  const values: unknown[] = [value];
  const depths: number[] = [0];
  while (values.length > 0) {
    const current = values.pop();
    const depth = depths.pop() as number;
    if (typeof current === 'string') {
      // Its length is the least it adds (escapes add more): enough to know a long text is over.
      const least = current.length + 2;
      total += total + least > limit ? least : stringLength(current);
    } else if (current === null || typeof current !== 'object' || isJsonataFunction(current)) {
      total += valueLength(current);
    } else if (Array.isArray(current)) {
      // Brackets, commas, and when pretty a line break and indentation per item and before the end.
      total += 2 + Math.max(0, current.length - 1) + (pretty ? indentation(current.length, depth) : 0);
      for (const item of current) {
        values.push(item);
        depths.push(depth + 1);
      }
    } else {
      const object = current as Record<string, unknown>;
      // A key whose value is undefined is left out.
      const keys = Object.keys(object).filter((key) => object[key] !== undefined);
      total += 2 + Math.max(0, keys.length - 1) + (pretty ? indentation(keys.length, depth) : 0);
      for (const key of keys) {
        const item = object[key];
        total += stringLength(key) + (pretty ? 2 : 1);
        values.push(item);
        depths.push(depth + 1);
      }
    }
    if (total > limit) return total;
  }
  return total;
}

function indentation(items: number, depth: number): number {
  return items === 0 ? 0 : items * (1 + 2 * (depth + 1)) + 1 + 2 * depth;
}

/** Characters of one value that holds no others (a function counts as `null`, the most it is written as). */
function valueLength(value: unknown): number {
  switch (typeof value) {
    case 'string':
      return stringLength(value);
    case 'number':
      // As JSON.stringify writes it, or $string (15 significant digits), whichever is longer.
      return Number.isInteger(value)
        ? String(value).length
        : Math.max(String(value).length, String(Number(value.toPrecision(15))).length);
    case 'boolean':
      return value ? 4 : 5;
    default:
      return 4;
  }
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: the characters JSON escapes
const NEEDS_ESCAPE = /[\u0000-\u001f"\\\ud800-\udfff]/;

/** A string's length in JSON, quotes and escapes included (\n, \", \u0001, a lone surrogate's \udc00). */
function stringLength(text: string): number {
  if (!NEEDS_ESCAPE.test(text)) return text.length + 2;
  let length = 2;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (
      unit === 0x22 ||
      unit === 0x5c ||
      unit === 0x08 ||
      unit === 0x0c ||
      unit === 0x0a ||
      unit === 0x0d ||
      unit === 0x09
    )
      length += 2;
    else if (unit < 0x20) length += 6;
    else if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        length += 2;
        i++;
      } else length += 6;
    } else if (unit >= 0xdc00 && unit <= 0xdfff) length += 6;
    else length += 1;
  }
  return length;
}
