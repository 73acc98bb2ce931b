// Where `watch` delivers besides stdout: the sink types of the registry (each declares its own rows in its
// folder, src/sinks/registry.ts), Slack and the other chat platforms, and the dead-letter file for what
// they could not take (docs/sinks.md); src/config/sink-settings.ts reads them. Secrets never come from a flag (a flag
// shows in `ps`): each description names the environment variable that carries them.
import { COMPONENTS_AFTER_CHAT, COMPONENTS_BEFORE_CHAT } from '../../sinks/registry.ts';
import type { FlagGroup } from '../../util/flag-spec.ts';

export const SINKS: FlagGroup = {
  title: 'Sinks',
  flags: [
    ...COMPONENTS_BEFORE_CHAT.flatMap((component) => component.flags ?? []),
    { flags: '--slack-webhook <url>', description: 'post to Slack (or $KUBEDIFF_SLACK_WEBHOOK)' },
    {
      flags: '--slack-channel <channel>',
      description: 'post to this Slack channel as a bot (token: $KUBEDIFF_SLACK_TOKEN)',
      more: true,
    },
    {
      flags: '--teams-webhook <url>',
      description: 'post to Microsoft Teams through a Workflows webhook (or $KUBEDIFF_TEAMS_WEBHOOK)',
      more: true,
    },
    {
      flags: '--discord-webhook <url>',
      description: 'post to Discord through a channel webhook (or $KUBEDIFF_DISCORD_WEBHOOK)',
      more: true,
    },
    {
      flags: '--mattermost-webhook <url>',
      description: 'post to Mattermost through an incoming webhook (or $KUBEDIFF_MATTERMOST_WEBHOOK)',
      more: true,
    },
    {
      flags: '--google-chat-webhook <url>',
      description: 'post to a Google Chat space through its webhook (or $KUBEDIFF_GOOGLE_CHAT_WEBHOOK)',
      more: true,
    },
    ...COMPONENTS_AFTER_CHAT.flatMap((component) => component.flags ?? []),
    { flags: '--dead-letter <file>', description: 'keep what a sink could not take in this file' },
    {
      flags: '--dead-letter-max-size <size>',
      description: 'rotate the dead-letter file at this size (default: 10MB)',
      more: true,
    },
    {
      flags: '--dead-letter-max-files <n>',
      description: 'keep at most n dead-letter files, the oldest deleted (default: 3)',
      more: true,
    },
    {
      flags: '--shutdown-timeout <duration>',
      description: 'on SIGINT/SIGTERM, time to deliver what is queued (default: 10s)',
      more: true,
    },
  ],
};
