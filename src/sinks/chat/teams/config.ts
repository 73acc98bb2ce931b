// What a Microsoft Teams sink is configured by (docs/sinks.md, "Teams, Discord, Mattermost and Google Chat"):
// its `sinks:` entry (a webhook URL, a credential, and its pace) and --teams-webhook, whose URL may come from
// $KUBEDIFF_TEAMS_WEBHOOK instead. The entry, checks and spec are those of every chat platform that posts
// through a webhook (../core/chat-component.ts).
import type { FromSchema } from 'json-schema-to-ts';
import type { FlagSpec } from '../../../util/flag-spec.ts';
import { type ChatWebhookSpec, chatWebhookSchema } from '../core/chat-component.ts';

export type TeamsSinkSpec = ChatWebhookSpec<'teams'>;

export const teamsSchema = chatWebhookSchema('teams');

export type TeamsEntry = FromSchema<typeof teamsSchema>;

/** The variable that may give the webhook URL instead of the flag (documented in docs/sinks.md). */
export const TEAMS_WEBHOOK_ENV = 'KUBEDIFF_TEAMS_WEBHOOK';

export const teamsFlag: FlagSpec = {
  flags: '--teams-webhook <url>',
  description: `post to Microsoft Teams through a Workflows webhook (or $${TEAMS_WEBHOOK_ENV})`,
  more: true,
};
