// The Discord sink type as src/sinks/registry.ts lists it (src/sinks/component.ts): a chat platform that
// posts through a webhook URL (../core/chat-component.ts), whose renderer (discord.ts) is imported only when
// such a sink is created.
import { chatWebhookComponent } from '../core/chat-component.ts';
import { DISCORD_WEBHOOK_ENV, type DiscordEntry, discordFlag, discordSchema } from './config.ts';

export const discordComponent = chatWebhookComponent<DiscordEntry>({
  type: 'discord',
  schema: discordSchema,
  flag: discordFlag,
  variable: DISCORD_WEBHOOK_ENV,
  async platform() {
    const { discordPlatform, DISCORD_MIN_INTERVAL_MS } = await import('./discord.ts');
    return { create: discordPlatform, minIntervalMs: DISCORD_MIN_INTERVAL_MS };
  },
  docs: 'docs/sinks.md#teams-discord-mattermost-and-google-chat',
});
