// Google Chat, through a space's incoming webhook (Apps & integrations → Webhooks): the summary as the
// message text and a card (cardsV2) with a header and one text paragraph per section. Google Chat takes
// messages of at most 32,000 bytes and, per space, about one message a second; over that it answers 429
// (RESOURCE_EXHAUSTED), usually without a retry hint, so the backoff paces the retries. Card text is a
// small HTML subset: <b>, <i>, <font color> and <br>; everything else is escaped.
import type { EventType } from '../events/event.ts';
import type { ChatPlatform } from './chat.ts';
import {
  type ChatFormatOptions,
  type ChatMessage,
  DEFAULT_CHAT_FORMAT,
  EVENT_EMOJI,
  fitLines,
  type Line,
  plainText,
  titleText,
  truncateText,
} from './chat-message.ts';

export const GOOGLE_CHAT_LIMITS = { messageBytes: 32_000, text: 4096, widgets: 100 };
export const GOOGLE_CHAT_MIN_INTERVAL_MS = 1000;

export function googleChatPlatform(
  url: string,
  format: ChatFormatOptions = DEFAULT_CHAT_FORMAT,
): ChatPlatform {
  return {
    url: new URL(url),
    format,
    pace: 'Google Chat takes messages (about one a second)',
    render(message: ChatMessage) {
      let budget = GOOGLE_CHAT_LIMITS.messageBytes - 3_000;
      const sections: Record<string, unknown>[] = [];
      for (const section of message.sections) {
        if (sections.length >= GOOGLE_CHAT_LIMITS.widgets - 1 || budget < 200) break;
        const text = fitLines(
          section.lines.map(htmlLine),
          Math.min(budget / 1.3, GOOGLE_CHAT_LIMITS.text),
        ).join('<br>');
        budget -= Buffer.byteLength(text) * 1.3;
        sections.push({ widgets: [{ textParagraph: { text } }] });
      }
      if (message.note)
        sections.push({ widgets: [{ textParagraph: { text: `<i>${escapeHtml(message.note)}</i>` } }] });
      return {
        inFull: message.inFull,
        body: {
          text: truncateText(message.summary, 1000),
          cardsV2: [
            {
              cardId: 'kubediff',
              card: {
                header: {
                  title: truncateText(titleText(message), 200),
                  subtitle: truncateText(message.context.map(plainText).join(' · '), 200),
                },
                sections,
              },
            },
          ],
        },
      };
    },
  };
}

function escapeHtml(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

function htmlLine(line: Line): string {
  return line
    .map((span) => {
      if (span.style === 'icon') return EVENT_EMOJI[span.text as EventType];
      const text = escapeHtml(span.text);
      if (span.style === 'bold') return `<b>${text}</b>`;
      if (span.style === 'italic') return `<i>${text}</i>`;
      if (span.style === 'code') return `<font color="#1f6feb">${text}</font>`;
      return text;
    })
    .join('');
}
