// Text for a human's terminal. What kubediff prints comes largely from elsewhere: object names and
// values, annotation text, config keys, a receiver's error body. A terminal acts on some characters
// (C0 and C1 controls: U+009B alone starts an escape sequence on some terminals) and others change
// what the reader sees without being seen themselves (bidi overrides such as U+202E reverse the text
// after them; zero-width and other default-ignorable characters, non-ASCII spaces, unassigned and
// private-use code points). Every human-readable output (pretty events, `kubediff history`, text log
// lines and --explain, the `resources` table, error messages) passes through printable(), which
// writes each of them as a visible escape: `\u202e`, `\n`, `\u{e0041}`. JSON outputs carry values as
// they are: they are data for programs, and JSON escapes control characters itself.

/** Everything that is not safely printable as itself. */
const UNSAFE =
  /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\p{Co}\p{Cn}\p{Default_Ignorable_Code_Point}\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]/gu;
/** Printable ASCII only: nothing to escape (the common case, checked first). */
const PLAIN_ASCII = /^[\x20-\x7e]*$/;
const SHORT_ESCAPES: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

export interface PrintableOptions {
  /** Keep line breaks (a message of several lines); otherwise `\n` too is escaped, so one record stays one line. */
  newlines?: boolean;
}

/** `text` with every character a terminal would act on or hide written as a visible escape. */
export function printable(text: string, options: PrintableOptions = {}): string {
  if (PLAIN_ASCII.test(text)) return text;
  return text.replace(UNSAFE, (character) => {
    if (character === '\n' && options.newlines) return character;
    const short = SHORT_ESCAPES[character];
    if (short) return short;
    const code = character.codePointAt(0) ?? 0;
    return code > 0xffff ? `\\u{${code.toString(16)}}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}
