// A sink's story builder (docs/stories.md): the one place where a sink with stories on gets its
// builder, so that each says the same thing, once, when its open stories reach their bound.
import { type Story, StoryBuilder, type StoryOptions } from '../../events/story.ts';
import { groupedCount } from '../../util/count-text.ts';
import type { Logger } from '../../util/log.ts';
import { formatSize } from '../../util/size.ts';

export function sinkStoryBuilder(
  sink: string,
  options: Partial<StoryOptions>,
  log: Logger,
  onStory: (story: Story) => void,
): StoryBuilder {
  let warned = false;
  return new StoryBuilder(options, {
    story: onStory,
    bufferFull: (limits) => {
      if (warned) return;
      warned = true;
      log.warn(
        `${sink}: open stories reached their bound (${groupedCount(limits.maxOpenEvents)} events or ${formatSize(limits.maxOpenBytes)}, stories.maxOpenEvents and stories.maxOpenSize): the oldest story is sent before its owner went quiet (said once; counted in kubediff_stories_closed_early_total).`,
      );
    },
  });
}
