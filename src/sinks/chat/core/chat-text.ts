// Text from the cluster in a chat message (names, managers, users, paths, values: written by people
// kubediff does not trust). Every span passes two steps before it reaches a payload (docs/security.md,
// "Text from the cluster, where people read it", which says per platform what it acts on and cites its
// documentation): visible() shows control, bidi and invisible characters as escapes (as the terminal
// does, util/terminal-text.ts); then the platform's own escape, or inline code (`asCode`) for what a
// platform acts on even escaped, or has no escape for.
import { printable } from '../../../util/terminal-text.ts';
import type { Line, Span } from './chat-message.ts';

/** `text` with every control, bidi and invisible character written as a visible escape. */
export function visible(text: string): string {
  return printable(text);
}

/**
 * Each span of `line` made visible; a span a platform would act on (`actsOn`: its mentions, links or
 * unescapable markup) becomes inline code, the same text in monospace. Icons stay icons.
 */
export function inertLine(line: Line, actsOn: RegExp): Line {
  return line.map((span, index): Span => {
    if (span.style === 'icon') return span;
    const text = visible(span.text);
    // `:6w` before a span that starts with `:` is the shortcode `:6w:` only together.
    const shortcode = /:[\w+-]*[a-z][\w+-]*$/i.test(text) && (line[index + 1]?.text ?? '').startsWith(':');
    return actsOn.test(text) || shortcode ? { text, style: 'code' } : { ...span, text };
  });
}

/** Inline code cannot hold a backtick (it would end it early): a look-alike stands in for it. */
export function codeText(text: string): string {
  return text.replaceAll('`', 'ˋ');
}

/**
 * `text` between a markup's `marker`s (`*bold*`, `_italic_`), its leading and trailing spaces kept outside:
 * markdown and mrkdwn do not format a run that starts or ends with a space.
 */
export function wrapped(text: string, marker: string): string {
  const match = /^(\s*)([\s\S]*?)(\s*)$/.exec(text)!;
  const [, lead, core, trail] = match;
  return core ? `${lead}${marker}${core}${marker}${trail}` : text;
}
