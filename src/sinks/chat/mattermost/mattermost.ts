// Mattermost, through an incoming webhook (Integrations → Incoming Webhooks): the summary as the post's
// text and the rest as one Slack-style attachment, in Mattermost's markdown. A post holds at most 16,383
// characters (the server's default); rate limits, when the server has them on, answer 429 with
// X-Ratelimit-Reset (seconds until it resets), which the delivery core honours.
import type { ChatPlatform } from '../core/chat.ts';
import { markdownLine, markdownText } from '../core/chat-markdown.ts';
import {
  type ChatMessage,
  contextText,
  fitLine,
  plainText,
  titleText,
  truncateText,
} from '../core/chat-message.ts';

export const MATTERMOST_LIMITS = { postChars: 16_383, title: 256 };
export const MATTERMOST_MIN_INTERVAL_MS = 1000;

export function mattermostPlatform(url: string): ChatPlatform {
  return {
    url: new URL(url),
    pace: 'Mattermost takes messages (about one a second)',
    render(message: ChatMessage) {
      // The post's text and the attachment's text are markdown, read for mentions (chat-markdown.ts); the
      // title, footer and fallback are plain text, never read for mentions.
      const text = withoutSlackMarkup(markdownLine(fitLine(message.summary, 500)));
      const title = truncateText(withoutSlackMarkup(titleText(message)), MATTERMOST_LIMITS.title);
      const footer = truncateText(withoutSlackMarkup(contextText(message)), 500);
      const budget = MATTERMOST_LIMITS.postChars - text.length - title.length - footer.length - 200;
      return {
        text,
        attachments: [
          {
            fallback: truncateText(withoutSlackMarkup(plainText(message.summary)), 1000),
            color: message.inFull ? '#3b82f6' : '#f59e0b',
            title,
            text: withoutSlackMarkup(markdownText(message, budget)),
            footer,
          },
        ],
      };
    },
  };
}

/**
 * For Slack compatibility, Mattermost rewrites Slack's markup in a webhook's post, `<url|label>` into a
 * link and `<!channel>` into a mention, by pattern, inside code and after a backslash alike (its server's
 * ParseSlackLinksToMarkdown): every < and > (escaped or not: kubediff's markdown holds no other) becomes a
 * look-alike (‹ ›), so that nothing from the cluster is rewritten.
 */
function withoutSlackMarkup(text: string): string {
  return text.replace(/\\?</g, '‹').replace(/\\?>/g, '›');
}
