// The story settings of `kubediff watch` (README, "Stories"): --stories, --story-window,
// --story-max-length, --no-slack-stories, --webhook-stories, and the config file's `stories:` block and
// each sink's `stories:` switch. Slack tells stories by default; webhooks and the terminal when asked.
import { DEFAULT_STORY_OPTIONS, type StoryOptions } from '../events/story.ts';
import type { SinkSpec } from '../sinks/setup.ts';
import { checkDuration, parseDurationSetting } from '../util/duration.ts';
import { UsageError } from '../util/errors.ts';
import type { OutputFormat } from './watch-settings.ts';

/** The flags as commander hands them over. */
export interface RawStoryFlags {
  stories?: boolean;
  storyWindow?: string;
  storyMaxLength?: string;
  /** commander's --no-slack-stories: false when given. */
  slackStories?: boolean;
  webhookStories?: boolean;
}

/** The config file's `stories:` block (durations checked by meanings.ts). */
export interface StoryConfigInput {
  window?: string | undefined;
  maxLength?: string | undefined;
  maxOpenEvents?: number | undefined;
}

export interface StorySettings {
  options: StoryOptions;
  /** --stories: the pretty terminal output tells stories. */
  terminal: boolean;
}

export function storySettingsFrom(
  flags: RawStoryFlags,
  config: StoryConfigInput | undefined,
  output: OutputFormat,
): StorySettings {
  const windowMs =
    flags.storyWindow !== undefined
      ? parseDurationSetting('--story-window', flags.storyWindow)
      : fileDuration(config?.window, DEFAULT_STORY_OPTIONS.windowMs);
  const maxLengthMs =
    flags.storyMaxLength !== undefined
      ? parseDurationSetting('--story-max-length', flags.storyMaxLength)
      : fileDuration(config?.maxLength, DEFAULT_STORY_OPTIONS.maxLengthMs);
  if (maxLengthMs < windowMs) {
    throw new UsageError(
      `the story maximum length (${flags.storyMaxLength ?? config?.maxLength}) is shorter than the story window (${flags.storyWindow ?? config?.window ?? '5s'}): make it at least as long.`,
    );
  }
  const terminal = flags.stories === true;
  if (terminal && output === 'json') {
    throw new UsageError(
      '--stories applies to the pretty output (-o pretty): JSON stays one event per line (group it by owner.uid).',
    );
  }
  return {
    options: {
      windowMs,
      maxLengthMs,
      maxOpenEvents: config?.maxOpenEvents ?? DEFAULT_STORY_OPTIONS.maxOpenEvents,
    },
    terminal,
  };
}

/**
 * Each sink's stories: its own `stories:` key when the config file sets one; else Slack's are on unless
 * --no-slack-stories, a webhook's are on with --webhook-stories, stdout's with --stories (pretty only).
 */
export function withStories(spec: SinkSpec, settings: StorySettings, flags: RawStoryFlags): SinkSpec {
  const wanted =
    spec.stories !== undefined
      ? spec.stories !== false
      : spec.type === 'slack'
        ? flags.slackStories !== false
        : spec.type === 'webhook'
          ? flags.webhookStories === true
          : spec.format === 'pretty' && settings.terminal;
  if (!wanted) {
    const { stories: _off, ...rest } = spec;
    return rest as SinkSpec;
  }
  if (spec.type === 'stdout' && spec.format === 'json')
    throw new UsageError('stories apply to the pretty output: a JSON stdout sink stays one event per line.');
  return { ...spec, stories: settings.options };
}

function fileDuration(text: string | undefined, fallback: number): number {
  return text === undefined ? fallback : (checkDuration(text).ms ?? fallback);
}
