// Mattermost, through an incoming webhook (Integrations → Incoming Webhooks): the summary as the post's
// text and the rest as one Slack-style attachment, in Mattermost's markdown. A post holds at most 16,383
// characters (the server's default); rate limits, when the server has them on, answer 429 with
// X-Ratelimit-Reset (seconds until it resets), which the delivery core honours.
import type { ChatPlatform } from './chat.ts';
import { escapeMarkdown, markdownText } from './chat-markdown.ts';
import { type ChatMessage, contextText, titleText, truncateText } from './chat-message.ts';

export const MATTERMOST_LIMITS = { postChars: 16_383, title: 256 };
export const MATTERMOST_MIN_INTERVAL_MS = 1000;

export function mattermostPlatform(url: string): ChatPlatform {
  return {
    url: new URL(url),
    pace: 'Mattermost takes messages (about one a second)',
    render(message: ChatMessage) {
      const text = truncateText(escapeMarkdown(message.summary), 1000);
      const title = truncateText(titleText(message), MATTERMOST_LIMITS.title);
      const footer = truncateText(contextText(message), 500);
      const budget = MATTERMOST_LIMITS.postChars - text.length - title.length - footer.length - 200;
      return {
        text,
        attachments: [
          {
            fallback: text,
            color: message.inFull ? '#3b82f6' : '#f59e0b',
            title,
            text: markdownText(message, budget),
            footer,
          },
        ],
      };
    },
  };
}
