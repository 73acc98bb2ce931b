// src/util/terminal-text.ts: what a terminal would act on or hide is written as a visible escape, in every
// human-readable output (pretty events, text log lines, the resources table, error messages).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resourcesTable } from '../../../src/cli/resources.ts';
import { prettyRenderer } from '../../../src/sinks/core/pretty.ts';
import { stderrLogger } from '../../../src/util/log.ts';
import { printable } from '../../../src/util/terminal-text.ts';
import { sampleEvent } from '../../helpers/events.ts';

describe('printable', () => {
  it('leaves printable text alone, in any script', () => {
    for (const text of ['plain ascii ~!@#', 'é ü ß', '日本語', 'emoji 😀', 'back\\slash']) {
      assert.equal(printable(text), text);
    }
  });

  it('escapes C0 and C1 controls, DEL', () => {
    assert.equal(printable('a\u001b[2Jb'), 'a\\u001b[2Jb');
    assert.equal(printable('a\u009b31mb\u0085c\u007f'), 'a\\u009b31mb\\u0085c\\u007f');
    assert.equal(printable('bell\u0007\u0000'), 'bell\\u0007\\u0000');
    assert.equal(printable('one\ntwo\r\tthree'), 'one\\ntwo\\r\\tthree');
  });

  it('escapes every bidi control', () => {
    for (let code = 0x202a; code <= 0x202e; code++) {
      assert.equal(printable(`x${String.fromCodePoint(code)}y`), `x\\u${code.toString(16)}y`);
    }
    for (let code = 0x2066; code <= 0x2069; code++) {
      assert.equal(printable(`x${String.fromCodePoint(code)}y`), `x\\u${code.toString(16)}y`);
    }
    assert.equal(printable('\u200e\u200f\u061c'), '\\u200e\\u200f\\u061c');
  });

  it('escapes invisible characters: zero-width, default-ignorable, odd spaces, separators', () => {
    assert.equal(
      printable('a\u200bb\u200cc\u200dd\u2060e\ufeff'),
      'a\\u200bb\\u200cc\\u200dd\\u2060e\\ufeff',
    );
    assert.equal(printable('soft\u00adhyphen'), 'soft\\u00adhyphen');
    assert.equal(printable('filler\u3164'), 'filler\\u3164');
    assert.equal(
      printable('no\u00a0break\u2007figure\u3000ideographic'),
      'no\\u00a0break\\u2007figure\\u3000ideographic',
    );
    assert.equal(printable('line\u2028para\u2029'), 'line\\u2028para\\u2029');
  });

  it('escapes unassigned, private-use, tag characters and lone surrogates', () => {
    assert.equal(printable('u\u0378'), 'u\\u0378');
    assert.equal(printable('p\ue000'), 'p\\ue000');
    assert.equal(printable('t\u{e0041}'), 't\\u{e0041}');
    assert.equal(printable('s\ud800'), 's\\ud800');
  });

  it('keeps line breaks when asked (a message of several lines)', () => {
    assert.equal(printable('one\ntwo\u202e', { newlines: true }), 'one\ntwo\\u202e');
  });
});

describe('every human-readable output uses it', () => {
  const hostile = 'x\u009b\u202e\u200b';
  const escaped = 'x\\u009b\\u202e\\u200b';

  it('pretty events: name, cluster, path, values', () => {
    const text = prettyRenderer({ color: false })(
      sampleEvent({
        cluster: `prod${hostile}`,
        object: {
          apiVersion: 'example.com/v1',
          kind: 'Widget',
          resource: 'widgets',
          namespace: 'shop',
          name: `w${hostile}`,
        },
        changes: [
          { op: 'replace', path: `/spec/${hostile}`, from: hostile, to: `${hostile}\nsecond line` },
          { op: 'add', path: '/spec/list', to: [hostile] },
        ],
      }),
    );
    assert.ok(text.includes(`shop/w${escaped}`), text);
    assert.ok(text.includes(`[prod${escaped}]`), text);
    assert.ok(text.includes(`spec["${escaped}"]`), text);
    assert.ok(text.includes(`"${escaped}"`), text);
    assert.ok(text.includes(`["${escaped}"]`), text);
    assert.doesNotMatch(text, /[^\P{Cc}\n]|[\u202e\u200b]/u);
  });

  it('text log lines, one line each', () => {
    const lines: string[] = [];
    const log = stderrLogger({ debug: true, format: 'text', write: (line) => lines.push(line) });
    log.warn(`receiver said: ${hostile}\nkubediff: fake line`);
    assert.deepEqual(lines, [`kubediff: warning: receiver said: ${escaped}\\nkubediff: fake line\n`]);
  });

  it('the resources table', () => {
    const table = resourcesTable([
      {
        name: `gizmos.${hostile}`,
        group: hostile,
        version: 'v1',
        resource: 'gizmos',
        kind: `Gizmo${hostile}`,
        scope: 'Namespaced',
        watched: true,
      },
    ]);
    assert.ok(table.includes(`gizmos.${escaped}  ${escaped}/v1  Gizmo${escaped}`), table);
  });
});
