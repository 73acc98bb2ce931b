// Markdown for the chat platforms that read it (Discord, Mattermost): text
// escaped so that names and values never turn into formatting, code spans
// that cannot be closed early.
import type { EventType } from '../events/event.ts';
import { type ChatMessage, EVENT_EMOJI, fitLines, type Line } from './chat-message.ts';

/** Backslash-escapes what markdown would read as formatting. */
export function escapeMarkdown(text: string): string {
  return text.replace(/[\\`*_~|>#[\]()<-]/g, (c) => `\\${c}`);
}

export function markdownLine(line: Line): string {
  return line
    .map((span) => {
      if (span.style === 'icon') return EVENT_EMOJI[span.text as EventType];
      if (span.style === 'code') return `\`${span.text.replaceAll('`', 'ˋ')}\``;
      if (span.style === 'bold') return `**${escapeMarkdown(span.text)}**`;
      if (span.style === 'italic') return `_${escapeMarkdown(span.text)}_`;
      return escapeMarkdown(span.text);
    })
    .join('');
}

/**
 * A message's sections in markdown, a blank line between two, then its note in italics: within `budget`
 * characters in all (what does not fit is counted, chat-message.ts fitLines).
 */
export function markdownText(message: ChatMessage, budget: number): string {
  const note = message.note ? `\n_${escapeMarkdown(message.note)}_` : '';
  const lines = message.sections.flatMap((section, index) => [
    ...(index > 0 ? [''] : []),
    ...section.lines.map(markdownLine),
  ]);
  return `${fitLines(lines, budget - note.length).join('\n')}${note}`.trim();
}
