// Figure 12: stories (docs/stories.md). Replays the recorded watch streams of figure 1 (pods of
// Deployments rolled out by the real controllers, Deployments, ConfigMaps, a custom resource) through
// kubediff's pipeline twice, pair by pair: with stories on (the owner stage, one story builder, each
// story rendered as its chat message in Slack's Block Kit when it closes) and off (the same pipeline, each event rendered as its JSON
// line: what a sink without stories does). Figures are input lines per second, and the ratio on/off.
// Memory: the retained heap of open stories per event they hold (with --expose-gc), against the
// event's JSON size.
//
//   node --expose-gc bench/stories.ts --fixtures <folder> [--pairs 7]   (prints JSON)
import { parseArgs } from 'node:util';
import type { ChangeEvent } from '../src/events/event.ts';
import { OwnerResolver, ownerStage } from '../src/events/owners.ts';
import type { EventStage } from '../src/events/pipeline.ts';
import { StoryBuilder } from '../src/events/story.ts';
import type { Informer } from '../src/informer/informer.ts';
import { objectKey } from '../src/kube/types.ts';
import { renderSlackChatMessage } from '../src/sinks/chat/slack/slack-format.ts';
import { storyMessage } from '../src/sinks/core/story-format.ts';
import { renderJsonLine } from '../src/sinks/core/stream-output.ts';
import { paired, round, type Spread, spread } from './lib/stats.ts';
import { benchPipeline, type Fixture, loadFixture, rate, replayInto, STREAMS } from './pipeline.ts';

export interface StoryStreamFigures {
  stream: string;
  lines: number;
  events: number;
  stories: number;
  onEventsPerSecond: Spread;
  offEventsPerSecond: Spread;
  /** on / off, pair by pair. */
  ratio: Spread;
}

export interface StoryFigures {
  streams: StoryStreamFigures[];
  /** Retained heap of open stories per event held, and the average JSON size of those events. */
  heap?: { events: number; bytesPerEvent: number; jsonBytesPerEvent: number; ratio: number };
}

let sink = 0;

/** One replay through the pipeline, each event handed to `deliver`; `stages` come first. */
async function replay(
  fixture: Fixture,
  stages: EventStage[],
  deliver: (event: ChangeEvent) => void,
  lookupOf?: (informer: Informer) => void,
): Promise<void> {
  await replayInto(fixture, benchPipeline(deliver, stages), lookupOf ? { started: lookupOf } : {});
}

/** Stories on: owners through the informer's store, a builder, each story rendered as its Slack message. */
async function withStories(fixture: Fixture): Promise<{ events: number; stories: number }> {
  const owners = new OwnerResolver();
  let events = 0;
  let stories = 0;
  // A window longer than the replay: every story closes at the flush, the most the builder holds.
  const builder = new StoryBuilder(
    { windowMs: 3_600_000, maxLengthMs: 3_600_000, maxOpenEvents: 10_000 },
    {
      story: (story) => {
        stories++;
        sink += JSON.stringify(renderSlackChatMessage(storyMessage(story))).length;
      },
    },
  );
  await replay(
    fixture,
    [ownerStage(owners)],
    (event) => {
      events++;
      builder.add(event);
    },
    (informer) =>
      owners.attach('bench', (group, kind, namespace, name) =>
        group === informer.type.group && kind === informer.type.kind
          ? informer.get(objectKey({ namespace, name }))
          : undefined,
      ),
  );
  builder.flush();
  return { events, stories };
}

async function withoutStories(fixture: Fixture): Promise<void> {
  await replay(fixture, [], (event) => {
    sink += renderJsonLine(event).length;
  });
}

async function measureStream(fixture: Fixture, pairs: number): Promise<StoryStreamFigures> {
  const once = await withStories(fixture);
  if (once.events === 0) throw new Error(`stories: replaying ${fixture.stream} reported no event`);
  const result = await paired(
    pairs,
    2,
    () => rate(fixture, () => withStories(fixture)),
    () => rate(fixture, () => withoutStories(fixture)),
  );
  return {
    stream: fixture.stream,
    lines: fixture.lines.length,
    events: once.events,
    stories: once.stories,
    onEventsPerSecond: spread(result.a),
    offEventsPerSecond: spread(result.b),
    ratio: spread(result.ratios),
  };
}

/**
 * Heap held by open stories per event (the events themselves, which stories keep until they close,
 * and the builder's net diffs), after a full GC, for `copies` replays of `fixture` (each replay's
 * events are new objects; enough of them that the GC's noise does not matter).
 */
async function measureHeap(fixture: Fixture, copies: number): Promise<StoryFigures['heap']> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) return undefined;
  const builder = new StoryBuilder(
    { windowMs: 3_600_000, maxLengthMs: 3_600_000, maxOpenEvents: Number.MAX_SAFE_INTEGER },
    { story: () => {} },
  );
  let jsonBytes = 0;
  gc();
  const before = process.memoryUsage().heapUsed;
  for (let copy = 0; copy < copies; copy++) {
    await replay(fixture, [], (event) => {
      jsonBytes += JSON.stringify(event).length;
      builder.add(event);
    });
  }
  gc();
  const held = process.memoryUsage().heapUsed - before;
  const open = builder.stats().openEvents;
  builder.flush();
  return {
    events: open,
    bytesPerEvent: round(held / open),
    jsonBytesPerEvent: round(jsonBytes / open),
    ratio: round(held / jsonBytes),
  };
}

if (import.meta.main) {
  const { values } = parseArgs({ options: { fixtures: { type: 'string' }, pairs: { type: 'string' } } });
  const dir = values.fixtures;
  if (!dir) throw new Error('usage: node --expose-gc bench/stories.ts --fixtures <folder> [--pairs N]');
  const pairs = Number(values.pairs ?? 7);
  const figures: StoryFigures = { streams: [] };
  for (const stream of Object.keys(STREAMS)) {
    const fixture = loadFixture(dir, stream);
    if (fixture.lines.length === 0) continue;
    const result = await measureStream(fixture, pairs);
    figures.streams.push(result);
    process.stderr.write(`stories: ${stream} ratio ${result.ratio.median.toFixed(3)}\n`);
  }
  const pods = loadFixture(dir, 'pods');
  const heap = await measureHeap(pods.lines.length > 0 ? pods : loadFixture(dir, 'configmaps'), 40);
  if (heap) figures.heap = heap;
  process.stdout.write(`${JSON.stringify({ ...figures, sink: sink > 0 })}\n`);
}
