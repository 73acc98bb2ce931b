/// <reference lib="dom" />
// Stories on the timeline: the events of one root controller close in time (a rollout: the Deployment,
// its ReplicaSets, their Pods) drawn as one mark with its count instead of a pile of marks, opened into
// its events on demand. An event's story is its `owner` (docs/stories.md), or the object itself when
// it has none (the Deployment's own change belongs to the rollout it starts). Grouped per timeline row,
// so that the rows still add up; a pause longer than STORY_GAP_MS between two events starts a new story.
// One object changed several times is not a story: its marks stay single (a click opens its history).
import type { EventSummary } from '../../state/timeline-reader.ts';
import { worstVerdict } from './event-row.ts';

export const STORY_GAP_MS = 5 * 60_000;

export interface Story {
  /** Stable while the window holds its first event: that event's seq (the address's `story=`). */
  key: string;
  owner: { kind: string; name: string };
  namespace?: string;
  /** The timeline row the story is drawn in. */
  row: string;
  /** Oldest first. */
  events: EventSummary[];
}

/** Stories (two objects or more), and the events that stand alone. */
export function groupStories(
  marks: readonly EventSummary[],
  rowOf: (event: EventSummary) => string,
): { stories: Story[]; single: EventSummary[] } {
  const open = new Map<string, Story>();
  const all: Story[] = [];
  const sorted = [...marks].sort((a, b) => Date.parse(a.time) - Date.parse(b.time) || a.seq - b.seq);
  for (const event of sorted) {
    const owner = event.owner ?? { kind: event.kind, name: event.name };
    const row = rowOf(event);
    const group = JSON.stringify([row, event.cluster ?? '', event.namespace ?? '', owner.kind, owner.name]);
    const current = open.get(group);
    const last = current?.events.at(-1);
    if (current && last && Date.parse(event.time) - Date.parse(last.time) <= STORY_GAP_MS) {
      current.events.push(event);
      continue;
    }
    const story: Story = { key: String(event.seq), owner, row, events: [event] };
    if (event.namespace) story.namespace = event.namespace;
    open.set(group, story);
    all.push(story);
  }
  // One object changed several times stays marks of its own: a story is several objects (a rollout).
  const several = (story: Story) =>
    new Set(story.events.map((event) => `${event.resource}/${event.name}`)).size > 1;
  const stories = all.filter(several);
  const single = all.filter((story) => !several(story)).flatMap((story) => story.events);
  return { stories, single };
}

/** `Deployment shop/web: 5 events (2 added, 3 updated)`: a story as its mark's label and its heading say it. */
export function storyText(story: Pick<Story, 'owner' | 'namespace' | 'events'>): string {
  const counts = new Map<string, number>();
  for (const event of story.events) counts.set(event.type, (counts.get(event.type) ?? 0) + 1);
  const parts = ['ADDED', 'UPDATED', 'DELETED']
    .filter((type) => counts.has(type))
    .map((type) => `${counts.get(type)} ${type.toLowerCase()}`);
  const where = story.namespace ? `${story.namespace}/` : '';
  const verdict = worstVerdict(story.events);
  const outcome = verdict ? ` → ${verdict}` : '';
  return `${story.owner.kind} ${where}${story.owner.name}: ${story.events.length} events (${parts.join(', ')})${outcome}`;
}
