// Markdown for the chat platforms that read it (Discord, Mattermost): text
// escaped so that names and values never turn into formatting, code spans
// that cannot be closed early.
import type { EventType } from '../events/event.ts';
import { EVENT_EMOJI, type Line } from './chat-message.ts';

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
