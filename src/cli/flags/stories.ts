// Stories: one message per rollout instead of one per event (docs/stories.md). The sink types whose
// component tells stories by default (the chat platforms) are listed by the registry, and `--no-stories
// <type>,<type>` turns them off per type; the flags it replaces (`--no-<type>-stories`) are still
// accepted, hidden from the help (docs/cli.md, "Stories"). Read by src/config/story-settings.ts
// (RawStoryFlags), which knows nothing of the spelling.
import { type RawStoryFlags, storySwitch } from '../../config/story-settings.ts';
import { SINK_COMPONENTS } from '../../sinks/registry.ts';
import { invalidSetting } from '../../util/errors.ts';
import type { FlagGroup } from '../../util/flag-spec.ts';

/** The types `--no-stories` takes, in the registry's order. */
const PLATFORMS: readonly string[] = SINK_COMPONENTS.flatMap((component) =>
  component.storiesByDefault === true ? [...component.types] : [],
);

export const STORIES: FlagGroup = {
  title: 'Stories',
  flags: [
    { flags: '--stories', description: 'pretty output: one story per rollout, not per event' },
    {
      flags: '--no-stories <platforms>',
      description: `post per event, not per story, to: ${PLATFORMS.slice(0, 2).join(',')},…`,
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
    if (!PLATFORMS.includes(name)) {
      throw invalidSetting(
        '--no-stories',
        text,
        `name chat platforms, comma-separated: ${PLATFORMS.join(', ')}`,
      );
    }
    off[storySwitch(name)] = false;
  }
  return off;
}
