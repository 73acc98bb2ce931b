// What a Discord sink is configured by (docs/sinks.md, "Teams, Discord, Mattermost and Google Chat"): its
// `sinks:` entry (a webhook URL, a credential, and its pace) and --discord-webhook, whose URL may come from
// $KUBEDIFF_DISCORD_WEBHOOK instead. The entry, checks and spec are those of every chat platform that posts
// through a webhook (../core/chat-component.ts).
import type { FromSchema } from 'json-schema-to-ts';
import type { FlagSpec } from '../../../util/flag-spec.ts';
import { type ChatWebhookSpec, chatWebhookSchema } from '../core/chat-component.ts';

export type DiscordSinkSpec = ChatWebhookSpec<'discord'>;

export const discordSchema = chatWebhookSchema('discord');

export type DiscordEntry = FromSchema<typeof discordSchema>;

/** The variable that may give the webhook URL instead of the flag (documented in docs/sinks.md). */
export const DISCORD_WEBHOOK_ENV = 'KUBEDIFF_DISCORD_WEBHOOK';

export const discordFlag: FlagSpec = {
  flags: '--discord-webhook <url>',
  description: `post to Discord through a channel webhook (or $${DISCORD_WEBHOOK_ENV})`,
  more: true,
};
