// The page shows text from the cluster with the same escapes as the terminal and chat: its own copy of the
// rule (src/ui/web/visible-text.ts, served to the browser from its folder alone) gives the same answer as
// printable() (src/util/terminal-text.ts) for every code point, alone and between ordinary text.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { visible } from '../../../src/ui/web/visible-text.ts';
import { printable } from '../../../src/util/terminal-text.ts';

it('escapes exactly what printable() escapes, for every code point', () => {
  const differ: string[] = [];
  for (let start = 0; start <= 0x10ffff; start += 256) {
    let text = 'a';
    for (let code = start; code < Math.min(start + 256, 0x110000); code++)
      text += `${String.fromCodePoint(code)}a`;
    if (visible(text) === printable(text)) continue;
    for (let code = start; code < Math.min(start + 256, 0x110000); code++) {
      const one = String.fromCodePoint(code);
      if (visible(one) !== printable(one)) differ.push(`U+${code.toString(16)}`);
    }
  }
  assert.deepEqual(differ.slice(0, 20), []);
  assert.equal(visible('by \u202eevil\u200b'), 'by \\u202eevil\\u200b');
});
