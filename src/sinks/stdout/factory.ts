// The standard output's sink as src/sinks/registry.ts lists it (src/sinks/component.ts): the one type
// -o/--output and `output:` choose, one stream (one entry at most), paced by its reader rather than queued
// (no dead letter, no queue), JSON lines or pretty text; stories on pretty text only, by default with
// --stories. Its renderers are imported only for pretty output or stories (chalk stays out of a JSON
// watch's memory).
import type { SinkComponent } from '../component.ts';
import { storiesOf } from '../core/sink-options.ts';
import { renderJsonLine, StreamOutput } from '../core/stream-output.ts';
import { type StdoutEntry, type StdoutSpec, stdoutSchema, stdoutSpecOf } from './config.ts';

export const stdoutComponent: SinkComponent<StdoutEntry, StdoutSpec> = {
  types: ['stdout'],
  schemas: { stdout: stdoutSchema },
  // Its schema says all: the format and color.
  fromOutput: stdoutSpecOf,
  name: () => 'stdout',
  // It sends nothing anywhere.
  credentials: () => [],
  storiesRefused: (spec) =>
    spec.format === 'json'
      ? 'stories apply to the pretty output: a JSON stdout sink stays one event per line.'
      : undefined,
  storiesByDefault: (spec, terminalStories) => spec.format === 'pretty' && terminalStories,
  delivers: false,
  single: 'stdout is one stream',
  async create(spec, { runtime, unique }) {
    const stories = storiesOf(spec);
    const pretty = spec.format === 'json' && !stories ? undefined : await prettyRenderers();
    const color = spec.color ?? false;
    return new StreamOutput({
      name: unique(spec.name ?? this.name(spec)),
      stream: runtime.stdout,
      render: spec.format === 'json' || !pretty ? renderJsonLine : pretty.prettyRenderer({ color }),
      log: runtime.log,
      ...(stories && pretty
        ? { stories: { options: stories, render: pretty.prettyStoryRenderer({ color }), log: runtime.log } }
        : {}),
      ...(runtime.onStdoutClosed ? { onClosed: runtime.onStdoutClosed } : {}),
    });
  },
  docs: 'docs/sinks.md#stdout',
};

/** Imported only for pretty output or stories. */
async function prettyRenderers() {
  return { ...(await import('../core/pretty.ts')), ...(await import('../core/story-format.ts')) };
}
