// Discord, through a channel webhook (Server Settings → Integrations → Webhooks): one embed per
// message, within Discord's documented limits: content 2,000 characters, an embed's title 256,
// description 4,096, footer 2,048, 6,000 characters in all its texts. Discord answers 429 with
// Retry-After and `retry_after` (seconds) in the body. Mentions are switched off so a name in a
// change can never ping anyone (`allowed_mentions` with an empty `parse`:
// https://discord.com/developers/docs/resources/message#allowed-mentions-object); the content and the
// description are markdown made inert (chat-markdown.ts); the title and the footer are plain text.

import type { PostOutcome } from '../../core/http.ts';
import type { ChatPlatform } from '../core/chat.ts';
import { markdownLine, markdownText } from '../core/chat-markdown.ts';
import { type ChatMessage, contextText, fitLine, titleText, truncateText } from '../core/chat-message.ts';

export const DISCORD_LIMITS = {
  content: 2000,
  title: 256,
  description: 4096,
  footer: 2048,
  embedTotal: 6000,
};
/** Discord allows about 5 requests per 2 s per webhook, and 30 messages a minute per channel. */
export const DISCORD_MIN_INTERVAL_MS = 2000;

const COLORS = { event: 0x3b82f6, digest: 0xf59e0b };

export function discordPlatform(url: string): ChatPlatform {
  return {
    url: new URL(url),
    pace: 'Discord takes messages (about one every two seconds)',
    render(message: ChatMessage) {
      const title = truncateText(titleText(message), DISCORD_LIMITS.title);
      const footer = truncateText(contextText(message), DISCORD_LIMITS.footer);
      const description = markdownText(
        message,
        Math.min(DISCORD_LIMITS.description, DISCORD_LIMITS.embedTotal - title.length - footer.length),
      );
      return {
        // Markdown (chat-markdown.ts), within the limit even if every character needed its escape.
        content: markdownLine(fitLine(message.summary, DISCORD_LIMITS.content / 2 - 50)),
        embeds: [
          {
            title,
            ...(description ? { description } : {}),
            color: message.inFull ? COLORS.event : COLORS.digest,
            footer: { text: footer || 'kubediff' },
          },
        ],
        allowed_mentions: { parse: [] },
      };
    },
    classify: (outcome) => withBodyRetryAfter(outcome),
  };
}

/** Discord's 429 body: {"retry_after": 1.5, …}, used when no Retry-After header came. */
function withBodyRetryAfter(outcome: PostOutcome): PostOutcome {
  if (outcome.ok || outcome.status !== 429 || outcome.retryAfterMs !== undefined) return outcome;
  try {
    const seconds = (JSON.parse(outcome.body ?? '') as { retry_after?: unknown }).retry_after;
    if (typeof seconds === 'number' && seconds >= 0)
      return { ...outcome, retryAfterMs: Math.min(Math.ceil(seconds * 1000), 10 * 60_000) };
  } catch {
    // No JSON: the backoff decides.
  }
  return outcome;
}
