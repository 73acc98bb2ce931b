// Google Chat through a space's incoming webhook: the summary as the text and a cardsV2 card (a header,
// one paragraph per section); at most 32,000 bytes, about one message a second (a 429 usually without a
// hint: the backoff paces retries). Text from the cluster is made inert (chat-text.ts) as docs/security.md's
// table says for Google Chat: card text with &, < and > as entities; the message text, whose markup has no
// documented escape, with < and > as look-alikes (‹ ›) and formatting characters, '@' or URLs in monospace.
import type { EventType } from '../../../events/event.ts';
import type { ChatPlatform } from '../core/chat.ts';
import {
  type ChatMessage,
  contextText,
  EVENT_EMOJI,
  fitLine,
  fitSections,
  type Line,
  titleText,
  truncateText,
} from '../core/chat-message.ts';
import { codeText, inertLine, visible } from '../core/chat-text.ts';

/** What Chat's text markup acts on that has no escape: formatting characters, a mention, a URL. */
const CHAT_TEXT_ACTS_ON = /[*_~`@]|:\/\/|\bwww\./i;

export const GOOGLE_CHAT_LIMITS = { messageBytes: 32_000, text: 4096, widgets: 100 };
export const GOOGLE_CHAT_MIN_INTERVAL_MS = 1000;

export function googleChatPlatform(url: string): ChatPlatform {
  return {
    url: new URL(url),
    pace: 'Google Chat takes messages (about one a second)',
    render(message: ChatMessage) {
      // Room for the texts: the limit less the card's frame; one widget is left for the note.
      const texts = fitSections(message.sections, htmlLine, '<br>', {
        budgetBytes: GOOGLE_CHAT_LIMITS.messageBytes - 3_000,
        maxSections: GOOGLE_CHAT_LIMITS.widgets - 1,
        maxChars: GOOGLE_CHAT_LIMITS.text,
      });
      if (message.note) texts.push(htmlLine([{ text: message.note, style: 'italic' }]));
      return {
        text: chatTextLine(fitLine(message.summary, 1000)),
        cardsV2: [
          {
            cardId: 'kubediff',
            card: {
              header: {
                title: truncateText(titleText(message), 200),
                subtitle: truncateText(contextText(message), 200),
              },
              sections: texts.map((text) => ({ widgets: [{ textParagraph: { text } }] })),
            },
          },
        ],
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
      const text = escapeHtml(visible(span.text));
      if (span.style === 'bold') return `<b>${text}</b>`;
      if (span.style === 'italic') return `<i>${text}</i>`;
      if (span.style === 'code') return `<font color="#1f6feb">${text}</font>`;
      return text;
    })
    .join('');
}

/** A line in Chat's text markup, made inert (see the header). */
function chatTextLine(line: Line): string {
  return inertLine(line, CHAT_TEXT_ACTS_ON)
    .map((span) => {
      if (span.style === 'icon') return EVENT_EMOJI[span.text as EventType];
      const text = span.text.replaceAll('<', '‹').replaceAll('>', '›');
      return span.style === 'code' ? `\`${codeText(text)}\`` : text;
    })
    .join('');
}
