// The story settings of `kubediff watch` (docs/stories.md): --stories, --story-window,
// --story-max-length, --no-stories <type> (and its old spelling --no-<type>-stories), --webhook-stories,
// and the config file's `stories:` block and each sink's `stories:` switch. The types whose component
// says so (the chat platforms) tell stories by default; webhooks and the terminal when asked; a type whose
// component says why they cannot apply, never.
import { DEFAULT_STORY_OPTIONS, type StoryOptions } from '../events/story.ts';
import type { SinkSpec } from '../sinks/core/setup.ts';
import { sinkComponent } from '../sinks/registry.ts';
import { checkDuration } from '../util/duration.ts';
import { UsageError } from '../util/errors.ts';
import { flagProperty } from '../util/flag-spec.ts';
import { parseSize } from '../util/size.ts';
import { flagDurationMs } from './flag-values.ts';
import type { OutputFormat } from './output-format.ts';

/** The flags as commander hands them over. */
export interface RawStoryFlags {
  stories?: boolean;
  storyWindow?: string;
  storyMaxLength?: string;
  /**
   * A type's stories switched by a flag (storySwitch): on with `--webhook-stories`, off with
   * `--no-stories <type>` or commander's `--no-<type>-stories`.
   */
  [typeStories: `${string}Stories`]: boolean | undefined;
}

/** The config file's `stories:` block (durations checked by their format, formats.ts). */
export interface StoryConfigInput {
  window?: string | undefined;
  maxLength?: string | undefined;
  maxOpenEvents?: number | undefined;
  /** A size ('16MiB'; checked by its format, formats.ts). */
  maxOpenSize?: string | undefined;
}

export interface StorySettings {
  options: StoryOptions;
  /** --stories: the pretty terminal output tells stories. */
  terminal: boolean;
  /** stories.maxOpenSize, when given (else each sink's share of the heap bounds its open stories). */
  maxOpenBytesGiven: number | undefined;
}

export function storySettingsFrom(
  flags: RawStoryFlags,
  config: StoryConfigInput | undefined,
  output: OutputFormat,
): StorySettings {
  const windowMs =
    flags.storyWindow !== undefined
      ? flagDurationMs('--story-window', ['stories', 'window'], flags.storyWindow)
      : fileDuration(config?.window, DEFAULT_STORY_OPTIONS.windowMs);
  const maxLengthMs =
    flags.storyMaxLength !== undefined
      ? flagDurationMs('--story-max-length', ['stories', 'maxLength'], flags.storyMaxLength)
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
  const maxOpenBytesGiven =
    config?.maxOpenSize !== undefined ? parseSize('stories.maxOpenSize', config.maxOpenSize) : undefined;
  return {
    options: {
      windowMs,
      maxLengthMs,
      maxOpenEvents: config?.maxOpenEvents ?? DEFAULT_STORY_OPTIONS.maxOpenEvents,
      maxOpenBytes: maxOpenBytesGiven ?? DEFAULT_STORY_OPTIONS.maxOpenBytes,
    },
    terminal,
    maxOpenBytesGiven,
  };
}

/**
 * Each sink's stories: its own `stories:` key when the config file sets one; else its type's switch when a
 * flag set it (`--no-stories <type>` off, `--webhook-stories` on), else its component's storiesByDefault
 * (the chat platforms; the pretty standard output's with --stories). A type whose component refuses them
 * for the spec (a JSON standard output): a UsageError when they are wanted.
 */
export function withStories(spec: SinkSpec, settings: StorySettings, flags: RawStoryFlags): SinkSpec {
  const wanted =
    spec.stories !== undefined ? spec.stories !== false : storiesByDefault(spec, settings, flags);
  if (!wanted) {
    const { stories: _off, ...rest } = spec;
    return rest as SinkSpec;
  }
  const refused = sinkComponent(spec.type)?.storiesRefused?.(spec);
  if (refused !== undefined) throw new UsageError(refused);
  return { ...spec, stories: settings.options };
}

/** The switch of RawStoryFlags that turns a type's stories on or off: `<type>Stories`, camel-cased. */
export function storySwitch(type: string): `${string}Stories` {
  return flagProperty(`${type}-stories`) as `${string}Stories`;
}

/**
 * A type's story switch when a flag set it (`--webhook-stories`, `--no-stories slack`), else its
 * component's default, which may depend on the spec and --stories.
 */
function storiesByDefault(spec: SinkSpec, settings: StorySettings, flags: RawStoryFlags): boolean {
  const switched = flags[storySwitch(spec.type)];
  if (switched !== undefined) return switched;
  const byDefault = sinkComponent(spec.type)?.storiesByDefault;
  return typeof byDefault === 'function' ? byDefault(spec, settings.terminal) : byDefault === true;
}

function fileDuration(text: string | undefined, fallback: number): number {
  return text === undefined ? fallback : (checkDuration(text).ms ?? fallback);
}
