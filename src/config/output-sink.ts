// The standard output's sink that -o/--output (or the file's `output:`) adds when the file lists none (an
// entry of its type replaces it: file-sink-settings.ts): made by the registry's output type from the
// watch's output and the terminal, with the terminal's stories (--stories).
import type { SinkSpec } from '../sinks/core/setup.ts';
import { OUTPUT_COMPONENT } from '../sinks/registry.ts';
import type { Env } from '../util/environment.ts';
import { withStories } from './story-settings.ts';
import type { WatchSettings } from './watch-settings.ts';

/** The standard output: a terminal or not, and the environment that may say NO_COLOR. */
export interface Terminal {
  isTTY: boolean;
  env: Env;
}

/** The sink -o adds; none with `-o none`, or when the file lists the standard output's sink. */
export function outputSinkSpecs(
  settings: Pick<WatchSettings, 'output' | 'stories'>,
  terminal: Terminal,
): SinkSpec[] {
  // The output is -o's (or `output:`'s) choice with the terminal's default applied: it is given as -o.
  const spec = OUTPUT_COMPONENT?.fromOutput?.({ flag: settings.output, file: undefined, ...terminal });
  return spec ? [withStories(spec, settings.stories, {})] : [];
}
