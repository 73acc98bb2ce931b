// What a layout may build (src/sinks/http/webhook/layout-bounds.ts), evaluated in-process: the bounded functions give
// what JSONata's own give, and each bound stops an evaluation with a reason naming it. The process's
// memory under such layouts, end to end: test/integration/layout-bounds.test.ts.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { describe, it } from 'node:test';
import { LayoutError, prepareLayout, renderLayout } from '../../../../../src/sinks/http/webhook/layout.ts';
import {
  codePointLength,
  codePointSlice,
  jsonLengthUpTo,
} from '../../../../../src/sinks/http/webhook/layout-bounds.ts';
import { sampleEvent } from '../../../../helpers/events.ts';

const jsonata = createRequire(import.meta.url)('jsonata') as typeof import('jsonata');
const LAYOUTS = path.join(import.meta.dirname, '../../../../fixtures/layouts');

/** What the bounded layout renders, or its error's code and message. */
async function rendered(
  text: string,
  input: unknown = {},
): Promise<string | { code: string; message: string }> {
  try {
    return await renderLayout(await prepareLayout(text), input);
  } catch (error) {
    assert.ok(error instanceof LayoutError, String(error));
    return { code: error.code, message: error.message };
  }
}

/** What JSONata alone renders (the same as the layout would, without the bounds). */
async function plain(text: string, input: unknown = {}): Promise<string> {
  return JSON.stringify(await jsonata(text).evaluate(input));
}

describe('layout bounds', () => {
  it('$pad, $length and $substring give what JSONata’s own give, surrogate pairs, negative positions and long fills included', async () => {
    const strings = ['', 'héllo', 'a🔑b密码c', '🔑🔑🔑', 'x'.repeat(20), 'ab\ud800cd'];
    const cases: string[] = [];
    for (const s of strings) {
      const q = JSON.stringify(s);
      cases.push(`$length(${q})`);
      for (const start of [0, 1, 2, -1, -3, -50, 2.7, 50]) {
        cases.push(`$substring(${q}, ${start})`);
        for (const length of [0, 1, 3, -1, 2.5, 100]) cases.push(`$substring(${q}, ${start}, ${length})`);
      }
      for (const width of [0, 3, 8, -8, 7.9, -12]) {
        for (const char of ['', '-', 'ab', '🔑', 'x🔑y'])
          cases.push(`$pad(${q}, ${width}, ${JSON.stringify(char)})`);
        cases.push(`$pad(${q}, ${width})`);
      }
    }
    for (const expression of cases)
      assert.equal(await rendered(expression), await plain(expression), expression);
  });

  it('code points and their slices, as Array.prototype.slice over the characters', () => {
    for (const s of ['plain', 'a🔑b', '🔑', '\udc00x\ud800', '']) {
      const chars = [...s];
      assert.equal(codePointLength(s), chars.length, s);
      for (const [start, end] of [
        [0, undefined],
        [1, 2],
        [-2, undefined],
        [-9, 9],
        [2, 1],
        [1.5, 3.9],
      ] as const)
        assert.equal(codePointSlice(s, start, end), chars.slice(start, end).join(''), `${s} ${start} ${end}`);
    }
  });

  it("a value's JSON length is counted as JSON.stringify writes it, compact and pretty, escapes and all", () => {
    const values: unknown[] = [
      { a: 1, b: [true, false, null, 'x"y\\z\n\u0001'], c: { d: 1.5, e: -0.00012345678901234567 } },
      ['🔑', '\ud800', [], {}, [[]], { '': '' }],
      'plain',
      12345678901234567000,
      { nested: { deeper: { deepest: ['a', { b: 'c' }] } }, skipped: undefined },
    ];
    for (const value of values) {
      assert.equal(jsonLengthUpTo(value, Number.POSITIVE_INFINITY, false), JSON.stringify(value).length);
      assert.equal(
        jsonLengthUpTo(value, Number.POSITIVE_INFINITY, true),
        JSON.stringify(value, null, 2).length,
      );
    }
    // Past the limit it stops: a million references to one text are not counted one by one.
    const text = 'x'.repeat(1_000_000);
    assert.ok(jsonLengthUpTo(Array(1_000_000).fill(text), 5_000_000, false) > 5_000_000);
  });

  it('the layouts of docs/sinks.md render as JSONata alone renders them', async () => {
    const event = sampleEvent({
      type: 'UPDATED',
      changes: [
        { op: 'replace', path: '/spec/replicas', from: 2, to: 5 },
        { op: 'add', path: '/data/🔑', to: 'ü"\n' },
      ],
    });
    for (const file of ['pagerduty.jsonata', 'telegram.jsonata']) {
      const text = readFileSync(path.join(LAYOUTS, file), 'utf8').replaceAll(/\$\{[A-Z_]+\}/g, 'value');
      assert.equal(await rendered(text, event), await plain(text, event), file);
    }
  });

  it('each bound stops the evaluation with a reason naming it', async () => {
    const over = async (text: string, code: string, message: RegExp) => {
      const result = await rendered(text);
      assert.equal(typeof result, 'object', `${text} rendered ${String(result).slice(0, 100)}`);
      const failure = result as { code: string; message: string };
      assert.equal(failure.code, code, text);
      assert.match(failure.message, message, text);
    };
    const text = /^the layout made a text of [\d,]+ characters or more, over its limit of 4 Mi characters$/;
    await over('$pad("", 350000000, "x")', 'text', /350,000,000 characters or more/);
    await over('$pad("", -5000000, "🔑")', 'text', text);
    await over('$join([1..5].$pad("", 1000000, "x"))', 'text', text);
    await over('$join([1..3].$pad("", 1000000, "x"), $pad("", 600000, ","))', 'text', text);
    await over('($f := function($n, $s) { $n = 0 ? $s : $f($n - 1, $s & $s) }; $f(40, "x"))', 'text', text);
    await over('$fromMillis(0, "[Y,100000000]")', 'text', text);
    await over('$replace($pad("", 50000, "x"), "x", $pad("", 100, "y"))', 'text', text);
    await over('$replace($pad("", 20000, "x"), /(x)/, $pad("", 300, "$1"))', 'text', text);
    // A value turned into text: $string (pretty too), `&`, $clone and the transform operator.
    await over('($b := $pad("", 1000000, "x"); $string([1..5].($b)))', 'text', text);
    await over(
      '($b := $pad("", 600000, "x"); $string({ "a": [$b, $b, $b], "b": [$b, $b, $b, $b] }, true))',
      'text',
      text,
    );
    await over('($b := $pad("", 1000000, "x"); [1..5].($b) & "")', 'text', text);
    await over('($b := $pad("", 1000000, "x"); "" & { "a": [1..5].($b) })', 'text', text);
    await over('($b := $pad("", 1000000, "x"); $clone({ "a": [1..5].($b) }))', 'text', text);
    await over('($b := $pad("", 1000000, "x"); { "a": [1..5].($b) } ~> | $ | { "b": 1 } |)', 'text', text);
    const items = /^the layout made an array of [\d,]+ items or more, over its limit of 100,000 items$/;
    await over('$split($pad("", 200000, "x"), "")', 'sequence', items);
    await over('$split($pad("", 100005, "x"), /x/)', 'sequence', items);
    await over('$replace($pad("", 200000, "x"), "x", "y")', 'sequence', items);
    await over('$replace($pad("", 100005, "x"), /x/, "y")', 'sequence', items);
    await over(
      '($b := $pad("", 4000000, "x"); [1..100].$substring($b, $))',
      'made',
      /^the layout's function calls made [\d,]+ characters and array items or more in one evaluation, over its limit of 64 Mi$/,
    );
    await over(
      '$eval($pad("[]", 300000))',
      'eval',
      /^the layout gave \$eval an expression of 300,000 characters, over its limit of 256 Ki characters$/,
    );
    await over(
      '($b := $pad("", 1000000, "x"); { "copies": [1..9].($b) })',
      'body',
      /^the layout's result is [\d,]+ characters of JSON or more, over its limit of 8 MiB$/,
    );
  });

  it('what stays under the bounds is made as JSONata makes it', async () => {
    for (const expression of [
      '$split("a,b,,c", ",")',
      '$split("a,b,,c", ",", 2)',
      '$split("a1b22c", /\\d+/)',
      '$replace("a-b-c", "-", "+")',
      '$replace("a-b-c", "-", "+", 1)',
      '$replace("abc", /(b)/, "[$1$0$$]")',
      '$join(["a", "b"], ", ")',
      '$string({ "a": [1, 2.5, "x"] }, true)',
      '$clone({ "a": 1 })',
      '{ "a": 1 } ~> | $ | { "b": 2 } |',
      '$eval("[1, 2]")',
      '"n: " & { "a": 1 }',
    ]) {
      assert.equal(await rendered(expression), await plain(expression), expression);
    }
    // A function in the result is written as $string writes it (a lambda would hold its whole scope).
    assert.equal(await rendered('{ "f": $uppercase, "g": function($x) { $x } }'), '{"f":"","g":""}');
  });
});
