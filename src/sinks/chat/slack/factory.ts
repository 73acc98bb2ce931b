// The Slack sink type as src/sinks/registry.ts lists it (src/sinks/component.ts): its settings from
// config.ts, and a factory that imports the sink (slack.ts) only when a Slack sink is created.
import type { SinkComponent } from '../../component.ts';
import { chatCoreOptions } from '../core/chat-component.ts';
import {
  type SlackEntry,
  type SlackSinkSpec,
  slackChannelFormat,
  slackChecks,
  slackCredentials,
  slackFlags,
  slackSchema,
  slackSinkName,
  slackSpecOf,
  slackSpecsFromFlags,
} from './config.ts';

export const slackComponent: SinkComponent<SlackEntry, SlackSinkSpec> = {
  types: ['slack'],
  schemas: { slack: slackSchema },
  formats: [slackChannelFormat],
  checks: slackChecks,
  flags: slackFlags,
  fromFlags: slackSpecsFromFlags,
  spec: slackSpecOf,
  name: slackSinkName,
  credentials: slackCredentials,
  storiesByDefault: true,
  chatQueue: true,
  /** An incoming webhook, or a bot token and a channel. */
  async create(spec, context) {
    const target =
      spec.webhookUrl !== undefined
        ? { kind: 'webhook' as const, url: spec.webhookUrl }
        : {
            kind: 'bot' as const,
            token: spec.token ?? '',
            channel: spec.channel ?? '',
            ...(spec.apiUrl ? { apiUrl: spec.apiUrl } : {}),
          };
    const { SlackSink } = await import('./slack.ts');
    return new SlackSink({
      ...chatCoreOptions(spec, context, slackSinkName(spec)),
      target,
      ...(spec.minIntervalMs !== undefined ? { minIntervalMs: spec.minIntervalMs } : {}),
    });
  },
  docs: 'docs/sinks.md#slack',
};
