// Microsoft Teams, through a Workflows webhook ("Post to a channel when a webhook request is received";
// the Office 365 connectors are retired): a message with one Adaptive Card (schema 1.4, which every
// Teams client renders). Teams takes messages of at most about 28 KB and about 4 requests a second per
// webhook; a 429 comes with Retry-After. Adaptive Card markdown has bold and italics but no inline
// code, so values are shown as they are, set apart by the arrow and the path's colon.
import type { EventType } from '../events/event.ts';
import type { ChatPlatform } from './chat.ts';
import {
  type ChatMessage,
  contextText,
  EVENT_EMOJI,
  fitSections,
  type Line,
  titleText,
  truncateText,
} from './chat-message.ts';

export const TEAMS_LIMITS = { payloadBytes: 28 * 1024, bodyElements: 100 };
export const TEAMS_MIN_INTERVAL_MS = 1000;

export function teamsPlatform(url: string): ChatPlatform {
  return {
    url: new URL(url),
    pace: 'Teams takes messages (about one a second)',
    render(message: ChatMessage) {
      const body: Record<string, unknown>[] = [
        {
          type: 'TextBlock',
          text: truncateText(plainCardText(titleText(message)), 500),
          size: 'Medium',
          weight: 'Bolder',
          wrap: true,
        },
        {
          type: 'TextBlock',
          text: truncateText(plainCardText(contextText(message)), 500),
          isSubtle: true,
          spacing: 'None',
          size: 'Small',
          wrap: true,
        },
      ];
      // Room for the texts: the limit less the card's frame; elements are left for the title, the
      // context and the note.
      const texts = fitSections(message.sections, cardLine, '\n\n', {
        budgetBytes: TEAMS_LIMITS.payloadBytes - 2_500,
        maxSections: TEAMS_LIMITS.bodyElements - 4,
      });
      for (const text of texts) body.push({ type: 'TextBlock', text, wrap: true, separator: true });
      if (message.note)
        body.push({
          type: 'TextBlock',
          text: plainCardText(message.note),
          isSubtle: true,
          size: 'Small',
          wrap: true,
        });
      return {
        type: 'message',
        summary: truncateText(message.summary, 300),
        attachments: [
          {
            contentType: 'application/vnd.microsoft.card.adaptive',
            contentUrl: null,
            content: {
              $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
              type: 'AdaptiveCard',
              version: '1.4',
              msteams: { width: 'Full' },
              body,
            },
          },
        ],
      };
    },
  };
}

/** Adaptive Card markdown reads *, _, [, ], # and a leading - as formatting: escape them. */
function plainCardText(text: string): string {
  return text.replace(/[\\*_[\]#`>]/g, (c) => `\\${c}`);
}

function cardLine(line: Line): string {
  return line
    .map((span) => {
      if (span.style === 'icon') return EVENT_EMOJI[span.text as EventType];
      if (span.style === 'bold') return `**${plainCardText(span.text)}**`;
      if (span.style === 'italic') return `_${plainCardText(span.text)}_`;
      return plainCardText(span.text);
    })
    .join('');
}
