// Stories: one message per rollout instead of one per event (docs/stories.md). Chat platforms tell
// stories by default and `--no-stories slack,teams` turns them off per platform; the five flags it
// replaces (`--no-slack-stories`, …) are still accepted, hidden from the help (docs/cli.md, "Stories").
// Read by src/config/story-settings.ts (RawStoryFlags), which knows nothing of the spelling.
import type { RawStoryFlags } from '../../config/story-settings.ts';
import { invalidSetting } from '../../util/errors.ts';
import type { FlagGroup } from '../../util/flag-spec.ts';

/** Each chat platform, by the name `--no-stories` takes, and its switch in the story settings. */
const STORY_SWITCHES = {
  slack: 'slackStories',
  teams: 'teamsStories',
  discord: 'discordStories',
  mattermost: 'mattermostStories',
  'google-chat': 'googleChatStories',
} as const satisfies Record<string, keyof RawStoryFlags>;

type ChatPlatform = keyof typeof STORY_SWITCHES;

const PLATFORMS = Object.keys(STORY_SWITCHES) as ChatPlatform[];

export const STORIES: FlagGroup = {
  title: 'Stories',
  flags: [
    { flags: '--stories', description: 'pretty output: one story per rollout, not per event' },
    {
      flags: '--no-stories <platforms>',
      description: 'post per event, not per story, to: slack,teams,…',
      repeatable: true,
    },
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
    ...PLATFORMS.map((platform) => ({
      flags: `--no-${platform}-stories`,
      description: `the old spelling of --no-stories ${platform}`,
      hidden: true,
    })),
  ],
};

/**
 * The story switches `--no-stories` turns off, from its values as given (repeated, comma-separated);
 * a name that is no chat platform is a UsageError.
 */
export function storiesTurnedOff(values: readonly string[] | undefined): Partial<RawStoryFlags> {
  const off: Partial<RawStoryFlags> = {};
  for (const text of (values ?? []).flatMap((value) => value.split(','))) {
    const name = text.trim();
    if (!isChatPlatform(name)) {
      throw invalidSetting(
        '--no-stories',
        text,
        `name chat platforms, comma-separated: ${PLATFORMS.join(', ')}`,
      );
    }
    off[STORY_SWITCHES[name]] = false;
  }
  return off;
}

function isChatPlatform(name: string): name is ChatPlatform {
  return Object.hasOwn(STORY_SWITCHES, name);
}
