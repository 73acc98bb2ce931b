// Text from the cluster on the page: control characters, bidi overrides and zero-width or other invisible
// characters are shown as visible escapes (`\u202e`), as in the terminal and in chat, so that a field
// manager, a user or a value cannot reverse or hide the text around it. The same rule as
// src/util/terminal-text.ts printable(), which the page cannot import (it is served from this folder
// alone); test/unit/ui/visible-text.test.ts holds the two to the same answer for every code point.

const UNSAFE =
  /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\p{Co}\p{Cn}\p{Default_Ignorable_Code_Point}\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]/gu;
const PLAIN_ASCII = /^[\x20-\x7e]*$/;
const SHORT_ESCAPES: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** `text` with every control, bidi and invisible character written as a visible escape. */
export function visible(text: string): string {
  if (PLAIN_ASCII.test(text)) return text;
  return text.replace(UNSAFE, (character) => {
    const short = SHORT_ESCAPES[character];
    if (short) return short;
    const code = character.codePointAt(0) ?? 0;
    return code > 0xffff ? `\\u{${code.toString(16)}}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}
