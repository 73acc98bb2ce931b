// What a Mattermost sink is configured by (docs/sinks.md, "Teams, Discord, Mattermost and Google Chat"): its
// `sinks:` entry (a webhook URL, a credential, and its pace) and --mattermost-webhook, whose URL may come
// from $KUBEDIFF_MATTERMOST_WEBHOOK instead. The entry, checks and spec are those of every chat platform that
// posts through a webhook (../core/chat-component.ts).
import type { FromSchema } from 'json-schema-to-ts';
import type { FlagSpec } from '../../../util/flag-spec.ts';
import { type ChatWebhookSpec, chatWebhookSchema } from '../core/chat-component.ts';

export type MattermostSinkSpec = ChatWebhookSpec<'mattermost'>;

export const mattermostSchema = chatWebhookSchema('mattermost');

export type MattermostEntry = FromSchema<typeof mattermostSchema>;

/** The variable that may give the webhook URL instead of the flag (documented in docs/sinks.md). */
export const MATTERMOST_WEBHOOK_ENV = 'KUBEDIFF_MATTERMOST_WEBHOOK';

export const mattermostFlag: FlagSpec = {
  flags: '--mattermost-webhook <url>',
  description: `post to Mattermost through an incoming webhook (or $${MATTERMOST_WEBHOOK_ENV})`,
  more: true,
};
