// Microsoft Teams through a Workflows webhook: one Adaptive Card (schema 1.4) per message, at most about
// 28 KB, about 4 requests a second (a 429 carries Retry-After). Card markdown has no inline code, so
// values are shown as they are, set apart by the arrow and the path's colon. Text from the cluster is
// made inert (chat-text.ts) as docs/security.md's table says for Teams: markdown and `{{DATE(…)}}`
// characters backslash-escaped; no mention entity is ever sent; the summary is plain text.
import type { EventType } from '../../../events/event.ts';
import type { ChatPlatform } from '../core/chat.ts';
import {
  type ChatMessage,
  contextText,
  EVENT_EMOJI,
  fitSections,
  type Line,
  plainText,
  titleText,
  truncateText,
} from '../core/chat-message.ts';
import { visible, wrapped } from '../core/chat-text.ts';

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
          text: plainCardText(visible(message.note)),
          isSubtle: true,
          size: 'Small',
          wrap: true,
        });
      return {
        type: 'message',
        summary: truncateText(plainText(message.summary), 300),
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

/**
 * Adaptive Card markdown reads *, _, [ and ] as formatting or a link (lists need a line of their own, and
 * text from the cluster never starts one), and {{…}} as a date function: escape them (and <, should a
 * client ever read a tag), and the ':' of a URL and the '.' after www, so that no client links it.
 */
function plainCardText(text: string): string {
  return text
    .replace(/[\\*_[\]#`><{}]/g, (c) => `\\${c}`)
    .replace(/:(?=\/\/)/g, '\\:')
    .replace(/\b(www)\./gi, '$1\\.');
}

function cardLine(line: Line): string {
  return line
    .map((span) => {
      if (span.style === 'icon') return EVENT_EMOJI[span.text as EventType];
      const text = plainCardText(visible(span.text));
      if (span.style === 'bold') return wrapped(text, '**');
      if (span.style === 'italic') return wrapped(text, '_');
      return text;
    })
    .join('');
}
