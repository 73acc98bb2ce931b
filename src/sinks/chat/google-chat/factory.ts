// The Google Chat sink type as src/sinks/registry.ts lists it (src/sinks/component.ts): a chat platform that
// posts through a webhook URL (../core/chat-component.ts), whose renderer (google-chat.ts) is imported only
// when such a sink is created.
import { chatWebhookComponent } from '../core/chat-component.ts';
import { GOOGLE_CHAT_WEBHOOK_ENV, type GoogleChatEntry, googleChatFlag, googleChatSchema } from './config.ts';

export const googleChatComponent = chatWebhookComponent<GoogleChatEntry>({
  type: 'google-chat',
  schema: googleChatSchema,
  flag: googleChatFlag,
  variable: GOOGLE_CHAT_WEBHOOK_ENV,
  async platform() {
    const { googleChatPlatform, GOOGLE_CHAT_MIN_INTERVAL_MS } = await import('./google-chat.ts');
    return { create: googleChatPlatform, minIntervalMs: GOOGLE_CHAT_MIN_INTERVAL_MS };
  },
  docs: 'docs/sinks.md#teams-discord-mattermost-and-google-chat',
});
