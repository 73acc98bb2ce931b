// Stories: one message per rollout instead of one per event (README, "Stories"). Chat platforms tell
// stories by default, each with its switch to turn them off. Read by src/config/story-settings.ts.
import type { FlagGroup } from './flag-spec.ts';

export const STORIES: FlagGroup = {
  title: 'Stories',
  flags: [
    { flags: '--stories', description: 'pretty output: one story per rollout, not per event' },
    {
      flags: '--webhook-stories',
      description: 'POST one STORY payload per story (with its events) instead of each event',
      more: true,
    },
    {
      flags: '--story-window <duration>',
      description: 'a story closes once its owner has been quiet this long (default: 5s)',
      more: true,
    },
    {
      flags: '--story-max-length <duration>',
      description: 'a story open this long is told, and goes on in the next (default: 1m)',
      more: true,
    },
    {
      flags: '--no-slack-stories',
      description: 'post to Slack one message per event (or digest), not per story',
    },
    { flags: '--no-teams-stories', description: 'the same for Teams', more: true },
    { flags: '--no-discord-stories', description: 'the same for Discord', more: true },
    { flags: '--no-mattermost-stories', description: 'the same for Mattermost', more: true },
    { flags: '--no-google-chat-stories', description: 'the same for Google Chat', more: true },
  ],
};
