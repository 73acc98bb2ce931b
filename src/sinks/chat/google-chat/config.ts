// What a Google Chat sink is configured by (docs/sinks.md, "Teams, Discord, Mattermost and Google Chat"): its
// `sinks:` entry (a webhook URL, a credential, and its pace) and --google-chat-webhook, whose URL may come
// from $KUBEDIFF_GOOGLE_CHAT_WEBHOOK instead. The entry, checks and spec are those of every chat platform
// that posts through a webhook (../core/chat-component.ts).
import type { FromSchema } from 'json-schema-to-ts';
import type { FlagSpec } from '../../../util/flag-spec.ts';
import { type ChatWebhookSpec, chatWebhookSchema } from '../core/chat-component.ts';

export type GoogleChatSinkSpec = ChatWebhookSpec<'google-chat'>;

export const googleChatSchema = chatWebhookSchema('google-chat');

export type GoogleChatEntry = FromSchema<typeof googleChatSchema>;

/** The variable that may give the webhook URL instead of the flag (documented in docs/sinks.md). */
export const GOOGLE_CHAT_WEBHOOK_ENV = 'KUBEDIFF_GOOGLE_CHAT_WEBHOOK';

export const googleChatFlag: FlagSpec = {
  flags: '--google-chat-webhook <url>',
  description: `post to a Google Chat space through its webhook (or $${GOOGLE_CHAT_WEBHOOK_ENV})`,
  more: true,
};
