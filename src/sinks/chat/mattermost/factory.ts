// The Mattermost sink type as src/sinks/registry.ts lists it (src/sinks/component.ts): a chat platform that
// posts through a webhook URL (../core/chat-component.ts), whose renderer (mattermost.ts) is imported only
// when such a sink is created.
import { chatWebhookComponent } from '../core/chat-component.ts';
import { MATTERMOST_WEBHOOK_ENV, type MattermostEntry, mattermostFlag, mattermostSchema } from './config.ts';

export const mattermostComponent = chatWebhookComponent<MattermostEntry>({
  type: 'mattermost',
  schema: mattermostSchema,
  flag: mattermostFlag,
  variable: MATTERMOST_WEBHOOK_ENV,
  async platform() {
    const { mattermostPlatform, MATTERMOST_MIN_INTERVAL_MS } = await import('./mattermost.ts');
    return { create: mattermostPlatform, minIntervalMs: MATTERMOST_MIN_INTERVAL_MS };
  },
  docs: 'docs/sinks.md#teams-discord-mattermost-and-google-chat',
});
