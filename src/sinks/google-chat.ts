// Google Chat, through a space's incoming webhook (Apps & integrations → Webhooks): the summary as the
// message text and a card (cardsV2) with a header and one text paragraph per section. Google Chat takes
// messages of at most 32,000 bytes and, per space, about one message a second; over that it answers 429
// (RESOURCE_EXHAUSTED), usually without a retry hint, so the backoff paces the retries.
//
// Text from the cluster is made inert (chat-text.ts). Card text is a small HTML subset (<b>, <i>,
// <font color>, <br>, <a href>: https://developers.google.com/workspace/chat/format-messages#card-formatting):
// &, < and > are written as entities, so no tag or link can form. The message's `text` uses Chat's own
// markup (https://developers.google.com/workspace/chat/format-messages: *bold*, _italic_, ~strike~,
// `monospace`, <url|label> links, <users/…> and <users/all> mentions), which documents no escape: there
// < and > become look-alikes (‹ ›), and text holding a formatting character, an '@' or a URL is shown in
// monospace. The card header's title and subtitle are plain text.
import type { EventType } from '../events/event.ts';
import type { ChatPlatform } from './chat.ts';
import {
  type ChatMessage,
  contextText,
  EVENT_EMOJI,
  fitLine,
  fitSections,
  type Line,
  titleText,
  truncateText,
} from './chat-message.ts';
import { codeText, inertLine, visible } from './chat-text.ts';

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
