// Text from the cluster in a chat message. Names, field managers (any writer picks one, up to 128
// characters), users, paths and values are written by people kubediff does not trust, and every chat
// platform acts on some text: a mention pings a channel, a link can say one thing and go elsewhere,
// markup changes what a reader sees. Every span of a message passes through two steps before it reaches
// a payload (docs/security.md, "Text from the cluster, where people read it"):
//
// 1. visible(): control characters, bidi overrides and zero-width or other invisible characters become
//    visible escapes (`\u202e`), as in the terminal (util/terminal-text.ts), so a name cannot reverse or
//    hide the text after it;
// 2. the platform's own escape, where it documents one (Slack: &, < and > as entities; markdown: a
//    backslash before punctuation; Google Chat cards: HTML entities), and for what a platform acts on
//    even when escaped, or has no escape for, inline code (`asCode`), which no platform formats, links or
//    mentions from. Each renderer says which is which, with the platform's documentation.
import { printable } from '../util/terminal-text.ts';
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
  return line.map((span): Span => {
    if (span.style === 'icon') return span;
    const text = visible(span.text);
    return actsOn.test(text) ? { text, style: 'code' } : { ...span, text };
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
