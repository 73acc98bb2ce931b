// What a Slack sink is configured by (docs/sinks.md, "Slack"): its `sinks:` entry (an incoming webhook, or a
// bot's token and channel, and its pace), the rule that ties them together, and its flags: --slack-webhook
// (or $KUBEDIFF_SLACK_WEBHOOK) and --slack-channel with the bot token from $KUBEDIFF_SLACK_TOKEN (never a
// flag), the Web API's URL from $KUBEDIFF_SLACK_API_URL. Loads no HTTP client: the factory imports slack.ts.
import type { FromSchema } from 'json-schema-to-ts';
import { isJsonObject } from '../../../kube/types.ts';
import { type Credential, secretCredentials } from '../../../util/credentials.ts';
import type { Env } from '../../../util/environment.ts';
import { UsageError } from '../../../util/errors.ts';
import type { FlagSpec } from '../../../util/flag-spec.ts';
import type { Check, Checks } from '../../../util/key-checks.ts';
import { redactUrl } from '../../../util/url.ts';
import { checkedValue, type ValueFormat } from '../../../util/value-format.ts';
import type { CommonEntrySpec, EntryContext, HttpSinkSpec } from '../../component.ts';
import { commonKeys, deliveryKeys, durationOrZero } from '../../core/entry-schema.ts';
import { checkedMs, sinkEnvValue } from '../../core/entry-settings.ts';
import { checkHttpUrl } from '../../core/receiver-settings.ts';
import { webhookUrlFrom } from '../core/chat-component.ts';

export interface SlackSinkSpec extends HttpSinkSpec {
  type: 'slack';
  /** An incoming webhook URL… */
  webhookUrl?: string;
  /** …or a bot token (from the environment) and a channel. */
  token?: string;
  channel?: string;
  /** Slack's Web API base URL; default https://slack.com/api. */
  apiUrl?: string;
  minIntervalMs?: number;
  /** Its queue, in bytes of the events' JSON. */
  queueMaxBytes?: number;
}

export const slackSchema = {
  type: 'object',
  properties: {
    type: { const: 'slack' },
    ...commonKeys,
    ...deliveryKeys,
    webhookUrl: { type: 'string', format: 'http-url' },
    token: { type: 'string' },
    channel: { type: 'string', format: 'slack-channel' },
    apiUrl: { type: 'string', format: 'http-url' },
    minInterval: durationOrZero,
  },
  required: ['type'],
  additionalProperties: false,
} as const;

export type SlackEntry = FromSchema<typeof slackSchema>;

/** The environment variables of the Slack flags (documented in docs/sinks.md). */
export const SLACK_ENV = {
  webhook: 'KUBEDIFF_SLACK_WEBHOOK',
  token: 'KUBEDIFF_SLACK_TOKEN',
  apiUrl: 'KUBEDIFF_SLACK_API_URL',
} as const;

const slackWebhookFlag: FlagSpec = {
  flags: '--slack-webhook <url>',
  description: `post to Slack (or $${SLACK_ENV.webhook})`,
};

export const slackFlags: readonly FlagSpec[] = [
  slackWebhookFlag,
  {
    flags: '--slack-channel <channel>',
    description: `post to this Slack channel as a bot (token: $${SLACK_ENV.token})`,
    more: true,
  },
];

/** The values of slackFlags as commander hands them over. */
interface SlackFlagValues {
  slackWebhook?: string;
  slackChannel?: string;
}

/** A Slack channel as chat.postMessage takes it: an ID (C0123456789) or #name; never blank or with spaces. */
export function isSlackChannel(text: string): boolean {
  return text.trim() !== '' && !/\s/.test(text);
}

/**
 * An incoming webhook (--slack-webhook or its variable), and a bot posting to --slack-channel with the
 * token from the environment; either, both or neither.
 */
export function slackSpecsFromFlags(values: object, env: Env): SlackSinkSpec[] {
  const flags = values as SlackFlagValues;
  const specs: SlackSinkSpec[] = [];
  const webhookUrl = webhookUrlFrom(flags, slackWebhookFlag, SLACK_ENV.webhook, env);
  if (webhookUrl) specs.push({ type: 'slack', webhookUrl });
  const token = sinkEnvValue(env, SLACK_ENV.token);
  const channel = flags.slackChannel?.trim();
  const apiUrl = sinkEnvValue(env, SLACK_ENV.apiUrl);
  if (apiUrl) checkHttpUrl(apiUrl, `invalid ${SLACK_ENV.apiUrl}`);
  if (channel !== undefined) {
    checkedValue('--slack-channel', slackChannelFormat, channel);
    if (!token) {
      throw new UsageError(
        `--slack-channel needs a bot token: set ${SLACK_ENV.token} (an xoxb-… token with the chat:write scope).`,
      );
    }
    specs.push({ type: 'slack', token, channel, ...(apiUrl ? { apiUrl } : {}) });
  } else if (token) {
    throw new UsageError(
      `${SLACK_ENV.token} is set but --slack-channel is not: name the channel to post to, e.g. --slack-channel '#alerts'.`,
    );
  }
  return specs;
}

/** A channel ID or #name; the flag's message and the file's say the same. */
export const slackChannelFormat: ValueFormat = {
  name: 'slack-channel',
  problem: (value) => (isSlackChannel(value) ? undefined : 'use a channel ID such as C0123456789, or #name'),
  inFile: () => 'expected a channel ID such as C0123456789, or #name',
};

/** A Slack sink posts through an incoming webhook, or as a bot with a token and a channel. */
const slackTarget: Check = (sink, path, { at }) => {
  if (!isJsonObject(sink)) return;
  if (sink.webhookUrl !== undefined && (sink.token !== undefined || sink.channel !== undefined)) {
    at(path, 'a Slack sink posts either through webhookUrl or as a bot with token and channel, not both');
  } else if (sink.webhookUrl === undefined && (sink.token === undefined || sink.channel === undefined)) {
    at(
      path,
      sink.token === undefined && sink.channel === undefined
        ? 'a Slack sink needs webhookUrl (an incoming webhook), or token and channel (a bot)'
        : `a Slack bot sink needs both token and channel (${sink.token === undefined ? 'token' : 'channel'} is missing)`,
    );
  }
};

export const slackChecks: Checks = [[[], slackTarget]];

/** An incoming webhook, or a bot token and channel; the API URL may come from the environment. */
export function slackSpecOf(
  input: SlackEntry,
  common: CommonEntrySpec,
  { env }: EntryContext,
): SlackSinkSpec {
  const apiUrl = input.apiUrl ?? sinkEnvValue(env, SLACK_ENV.apiUrl);
  const minIntervalMs = checkedMs(input.minInterval);
  return {
    type: 'slack',
    ...common,
    ...(input.webhookUrl !== undefined ? { webhookUrl: input.webhookUrl } : {}),
    ...(input.token !== undefined ? { token: input.token } : {}),
    ...(input.channel !== undefined ? { channel: input.channel } : {}),
    ...(apiUrl ? { apiUrl } : {}),
    ...(minIntervalMs !== undefined ? { minIntervalMs } : {}),
  };
}

/** 'slack <scheme://host/…>' for a webhook, 'slack #alerts' for a bot. */
export function slackSinkName(spec: {
  webhookUrl?: string | undefined;
  channel?: string | undefined;
}): string {
  return spec.webhookUrl !== undefined
    ? `slack ${redactUrl(spec.webhookUrl)}`
    : `slack ${slackChannelLabel(spec.channel ?? '')}`;
}

/** '#alerts' for 'alerts'; a channel ID (C0123456789) or '#name' as it is. */
function slackChannelLabel(channel: string): string {
  return channel.startsWith('#') || /^[CGD][A-Z0-9]{6,}$/.test(channel) ? channel : `#${channel}`;
}

/** The webhook URL, and the bot token (sent as `Authorization: Bearer <token>`). */
export function slackCredentials(spec: SlackSinkSpec): Credential[] {
  return [
    ...(spec.webhookUrl !== undefined ? [{ kind: 'url', value: spec.webhookUrl } as const] : []),
    ...secretCredentials(spec.token),
  ];
}
