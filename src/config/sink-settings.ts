// The sink flags of `kubediff watch` and their environment variables, checked and turned into sink specs
// (those of the registry's types by their components, src/sinks/registry.ts). Secrets never come from
// flags (they would show in `ps` and in manifests): the Slack bot token and, optionally, the Slack webhook
// URL come from the environment. Every problem is a UsageError (exit code 2) that names the flag or
// variable, never the secret itself.

import type { ChatPlatformName } from '../sinks/chat-platforms.ts';
import type { AnySinkComponent } from '../sinks/component.ts';
import type { DeadLetterLimits } from '../sinks/core/dead-letter.ts';
import { sinkEnvValue } from '../sinks/core/entry-settings.ts';
import { isSlackChannel } from '../sinks/core/receiver-checks.ts';
import { checkHttpUrl } from '../sinks/core/receiver-settings.ts';
import type { SinkSpec, SlackSinkSpec } from '../sinks/core/setup.ts';
import { defaultSinkName } from '../sinks/core/sink-name.ts';
import { COMPONENTS_AFTER_CHAT, COMPONENTS_BEFORE_CHAT } from '../sinks/registry.ts';
import { parseDurationSetting } from '../util/duration.ts';
import type { Env } from '../util/environment.ts';
import { UsageError } from '../util/errors.ts';

/** The sink flags as commander hands them over. */
export interface RawSinkFlags {
  deadLetter?: string;
  slackWebhook?: string;
  slackChannel?: string;
  teamsWebhook?: string;
  discordWebhook?: string;
  mattermostWebhook?: string;
  googleChatWebhook?: string;
  shutdownTimeout?: string;
  /** The flags of the sink types of the registry (src/sinks/registry.ts), by camel-cased name. */
  [flag: string]: unknown;
}

export interface SinkSettings {
  /** The HTTP sinks (Slack, webhooks); stdout is set up from --output. */
  sinks: SinkSpec[];
  deadLetterFile: string | undefined;
  /** The cap of every dead-letter file (default DEFAULT_DEAD_LETTER_LIMITS). */
  deadLetterLimits?: DeadLetterLimits;
  shutdownTimeoutMs: number;
}

/** The environment variables read here (documented in docs/sinks.md). */
export const SINK_ENV = {
  slackWebhook: 'KUBEDIFF_SLACK_WEBHOOK',
  slackToken: 'KUBEDIFF_SLACK_TOKEN',
  slackApiUrl: 'KUBEDIFF_SLACK_API_URL',
  teamsWebhook: 'KUBEDIFF_TEAMS_WEBHOOK',
  discordWebhook: 'KUBEDIFF_DISCORD_WEBHOOK',
  mattermostWebhook: 'KUBEDIFF_MATTERMOST_WEBHOOK',
  googleChatWebhook: 'KUBEDIFF_GOOGLE_CHAT_WEBHOOK',
} as const;

const DEFAULT_SHUTDOWN_TIMEOUT_MS = 10_000;

/** --dead-letter given, and no sink flag that delivers over the network (from the flags or beside a file). */
export const DEAD_LETTER_FLAG_WITHOUT_SINK =
  '--dead-letter applies to the deliveries of --webhook, Slack and the other chat platforms, Kafka, OTLP and --output-file, and none is given (stdout has no dead letters).';

export function sinkSettingsFromFlags(flags: RawSinkFlags, env: Env = process.env): SinkSettings {
  const shutdownTimeoutMs =
    flags.shutdownTimeout === undefined
      ? DEFAULT_SHUTDOWN_TIMEOUT_MS
      : // 0 is meaningful: exit at once, reporting what is still queued.
        parseDurationSetting('--shutdown-timeout', flags.shutdownTimeout, { allowZero: true });
  const sinks = FLAG_SINKS.flatMap((read) => read(flags, env));
  const deadLetterFile = flags.deadLetter?.trim() || undefined;
  if (deadLetterFile !== undefined && sinks.length === 0) {
    throw new UsageError(DEAD_LETTER_FLAG_WITHOUT_SINK);
  }
  return { sinks, deadLetterFile, shutdownTimeoutMs };
}

/**
 * The flags' sinks, one reader per kind, read (and checked) in this order: the order of the sinks, and
 * of the problems reported.
 */
const FLAG_SINKS: readonly ((flags: RawSinkFlags, env: Env) => SinkSpec[])[] = [
  ...fromFlagsOf(COMPONENTS_BEFORE_CHAT),
  slackSpecsFromFlags,
  chatSpecsFromFlags,
  ...fromFlagsOf(COMPONENTS_AFTER_CHAT),
];

function fromFlagsOf(components: readonly AnySinkComponent[]) {
  return components.flatMap((component) => (component.fromFlags ? [component.fromFlags] : []));
}

/**
 * Slack: an incoming webhook (--slack-webhook or its variable), and a bot posting to --slack-channel
 * with the token from the environment; either, both or neither.
 */
function slackSpecsFromFlags(flags: RawSinkFlags, env: Env): SlackSinkSpec[] {
  const specs: SlackSinkSpec[] = [];
  const slackWebhook = flags.slackWebhook?.trim() || sinkEnvValue(env, SINK_ENV.slackWebhook);
  if (slackWebhook) {
    const from = flags.slackWebhook?.trim() ? '--slack-webhook' : SINK_ENV.slackWebhook;
    checkHttpUrl(slackWebhook, `invalid ${from}`);
    specs.push({ type: 'slack', webhookUrl: slackWebhook });
  }
  const token = sinkEnvValue(env, SINK_ENV.slackToken);
  const channel = flags.slackChannel?.trim();
  const apiUrl = sinkEnvValue(env, SINK_ENV.slackApiUrl);
  if (apiUrl) checkHttpUrl(apiUrl, `invalid ${SINK_ENV.slackApiUrl}`);
  if (channel !== undefined) {
    if (!isSlackChannel(channel))
      throw new UsageError(
        `invalid --slack-channel "${channel}": use a channel ID such as C0123456789, or #name.`,
      );
    if (!token) {
      throw new UsageError(
        `--slack-channel needs a bot token: set ${SINK_ENV.slackToken} (an xoxb-… token with the chat:write scope).`,
      );
    }
    specs.push({ type: 'slack', token, channel, ...(apiUrl ? { apiUrl } : {}) });
  } else if (token) {
    throw new UsageError(
      `${SINK_ENV.slackToken} is set but --slack-channel is not: name the channel to post to, e.g. --slack-channel '#alerts'.`,
    );
  }
  return specs;
}

/** The other chat platforms: a webhook URL each, from its flag or else its variable. */
function chatSpecsFromFlags(flags: RawSinkFlags, env: Env): SinkSpec[] {
  const chats: Array<[ChatPlatformName, string | undefined, string, string]> = [
    ['teams', flags.teamsWebhook, '--teams-webhook', SINK_ENV.teamsWebhook],
    ['discord', flags.discordWebhook, '--discord-webhook', SINK_ENV.discordWebhook],
    ['mattermost', flags.mattermostWebhook, '--mattermost-webhook', SINK_ENV.mattermostWebhook],
    ['google-chat', flags.googleChatWebhook, '--google-chat-webhook', SINK_ENV.googleChatWebhook],
  ];
  const specs: SinkSpec[] = [];
  for (const [type, flag, flagName, variable] of chats) {
    const url = flag?.trim() || sinkEnvValue(env, variable);
    if (!url) continue;
    checkHttpUrl(url, `invalid ${flag?.trim() ? flagName : variable}`);
    specs.push({ type, webhookUrl: url });
  }
  return specs;
}

/** For the startup line: where events go, URLs elided. */
export function describeSinkSpec(spec: SinkSpec): string {
  return spec.name || defaultSinkName(spec);
}
