// The Microsoft Teams sink type as src/sinks/registry.ts lists it (src/sinks/component.ts): a chat platform
// that posts through a webhook URL (../core/chat-component.ts), whose renderer (teams.ts) is imported only
// when such a sink is created.
import { chatWebhookComponent } from '../core/chat-component.ts';
import { TEAMS_WEBHOOK_ENV, type TeamsEntry, teamsFlag, teamsSchema } from './config.ts';

export const teamsComponent = chatWebhookComponent<TeamsEntry>({
  type: 'teams',
  schema: teamsSchema,
  flag: teamsFlag,
  variable: TEAMS_WEBHOOK_ENV,
  async platform() {
    const { teamsPlatform, TEAMS_MIN_INTERVAL_MS } = await import('./teams.ts');
    return { create: teamsPlatform, minIntervalMs: TEAMS_MIN_INTERVAL_MS };
  },
  docs: 'docs/sinks.md#teams-discord-mattermost-and-google-chat',
});
