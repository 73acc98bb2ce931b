// Markdown for the chat platforms that read it (Discord, Mattermost), text from the cluster made inert
// (chat-text.ts; docs/security.md's table): CommonMark backslash escapes before every character either
// would read as formatting, a link or an entity; text holding an '@' or a URL as inline code, since both
// link bare URLs and Mattermost mentions anyone an '@' names outside code, escaped or not. Discord's
// payload also switches mentions off (allowed_mentions, discord.ts).
import type { EventType } from '../../../events/event.ts';
import { type ChatMessage, EVENT_EMOJI, fitLines, type Line } from './chat-message.ts';
import { codeText, inertLine, wrapped } from './chat-text.ts';

/** What the markdown platforms act on even escaped: a mention, a URL. */
const MARKDOWN_ACTS_ON = /@|:\/\/|\bwww\./i;

/** Backslash-escapes what markdown would read as formatting, a link or an entity. */
export function escapeMarkdown(text: string): string {
  return text.replace(/[\\`*_~|>#[\]()<&!-]/g, (c) => `\\${c}`);
}

/** A line in markdown: **bold**, _italic_, `code`, emoji; text from the cluster inert (see the header). */
export function markdownLine(line: Line): string {
  return inertLine(line, MARKDOWN_ACTS_ON)
    .map((span) => {
      if (span.style === 'icon') return EVENT_EMOJI[span.text as EventType];
      if (span.style === 'code') return `\`${codeText(span.text)}\``;
      if (span.style === 'bold') return wrapped(escapeMarkdown(span.text), '**');
      if (span.style === 'italic') return wrapped(escapeMarkdown(span.text), '_');
      return escapeMarkdown(span.text);
    })
    .join('');
}

/**
 * A message's sections in markdown, a blank line between two, then its note in italics: within `budget`
 * characters in all (what does not fit is counted, chat-message.ts fitLines).
 */
export function markdownText(message: ChatMessage, budget: number): string {
  const note = message.note ? `\n${markdownLine([{ text: message.note, style: 'italic' }])}` : '';
  const lines = message.sections.flatMap((section, index) => [
    ...(index > 0 ? [''] : []),
    ...section.lines.map(markdownLine),
  ]);
  return `${fitLines(lines, budget - note.length).join('\n')}${note}`.trim();
}
