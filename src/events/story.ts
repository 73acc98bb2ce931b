// Stories (docs/stories.md): the events whose objects share a root owner, gathered while they keep
// coming, become one story. `kubectl set image deploy/web` is one change a person made and dozens of
// changes the controllers derive from it (a ReplicaSet created and scaled, pods replaced): the story
// puts the owner's own net change first, then one summary of what was derived, and still counts and
// names every event it covers, by id. Nothing is dropped: a story closes with every event it took.
//
// A story closes when its owner has been quiet for `windowMs`, when it has been open for
// `maxLengthMs` (a long rollout reports its progress; the next story of that owner is marked
// `continued`), when the open stories together hold `maxOpenEvents` events or `maxOpenBytes` of them (as
// JSON; the oldest closes first: memory stays bounded), or at shutdown (flush). Several updates of one object inside a story are
// one net diff per path: the first `from`, the last `to`; a value that went back where it was is no
// change.
//
// A builder belongs to one consumer (a sink), after that sink's filter: each sink tells the story of
// what it receives.

import type { Change } from '../diff/types.ts';
import type { JsonValue } from '../kube/types.ts';
import { jsonEqual } from '../util/json-equal.ts';
import { SINK_SPLIT } from '../util/memory-budget.ts';
import { type ChangeEvent, type EventType, type OwnerRef, qualifiedResource } from './event.ts';
import { eventJsonLength } from './event-json.ts';

export interface StoryOptions {
  /** A story closes once its owner has had no event for this long. */
  windowMs: number;
  /** …or once it has been open this long. */
  maxLengthMs: number;
  /** The most events all open stories hold together; beyond it the oldest story closes early… */
  maxOpenEvents: number;
  /** …and the most bytes of them (as JSON): a few large objects weigh as much as many small ones. */
  maxOpenBytes: number;
}

export const DEFAULT_STORY_OPTIONS: StoryOptions = {
  windowMs: 5_000,
  maxLengthMs: 60_000,
  maxOpenEvents: 10_000,
  // Without a bound from the settings (each sink's share of the heap), the largest.
  maxOpenBytes: SINK_SPLIT.stories.maxBytes,
};

export type StoryCloseReason = 'quiet' | 'max-length' | 'buffer' | 'shutdown';

/** What became of one object inside a story: which object (as in its events), and its net change. */
export interface StoryObject extends Omit<ChangeEvent['object'], 'resourceVersion'> {
  /** Its first event in the story was an ADDED. */
  created: boolean;
  /** Its last event in the story was a DELETED. */
  deleted: boolean;
  /** Events of this object in the story. */
  events: number;
  /** The net changes of its UPDATED events: per path, the first `from` and the last `to`. */
  changes: Change[];
}

/** Events of one kind of object, per type. */
export interface StoryCount {
  kind: string;
  resource: string;
  ADDED: number;
  UPDATED: number;
  DELETED: number;
}

/** The payload of a story (a webhook's body with stories on; docs/sinks.md, "Stories"). */
export interface Story {
  type: 'STORY';
  /** 'story:' and the id of its first event: the same story has the same id on a retry. */
  id: string;
  cluster?: string;
  /** The root controller every event of the story has as `owner`. */
  owner: OwnerRef & { namespace?: string };
  /** Time of the first and the last event. */
  from: string;
  to: string;
  /** Why it closed: its owner went quiet, it reached its maximum length, the buffer limit, or shutdown. */
  closed: StoryCloseReason;
  /** An earlier story of this owner closed before its owner went quiet: this one goes on from it. */
  continued?: true;
  /** Every event of the story was found offline (a relist or a catch-up). */
  offline?: true;
  /** The owner's own events, net; absent when the owner itself had none in the story. */
  ownerChange?: StoryObject;
  /** What the controllers derived, one line: 'ReplicaSet web-7d9 created, scaled 0→3; 3 pods replaced'. */
  summary: string;
  /** Events per kind and type, the owner's included. */
  counts: StoryCount[];
  /** Every object the story touched but the owner, in order of first event. */
  objects: StoryObject[];
  /** How many events the story covers: as many as `events`. */
  count: number;
  /** Every event it covers, in order. */
  events: ChangeEvent[];
}

/** Derived objects of one kind listed one by one up to this many; more are counted. */
const LISTED_PER_KIND = 3;

interface NetValue {
  hadFrom: boolean;
  from: JsonValue | undefined;
  hasTo: boolean;
  to: JsonValue | undefined;
}

interface ObjectTrack {
  event: ChangeEvent;
  created: boolean;
  deleted: boolean;
  events: number;
  net: Map<string, NetValue>;
}

interface OpenStory {
  key: string;
  owner: OwnerRef & { namespace?: string };
  cluster: string | undefined;
  openedAt: number;
  lastAt: number;
  continued: boolean;
  events: ChangeEvent[];
  /** Bytes (as JSON) of its events. */
  bytes: number;
  objects: Map<string, ObjectTrack>;
  timer: NodeJS.Timeout | undefined;
}

/** What a builder has done so far (metrics). */
export interface StoryStats {
  /** Stories closed and handed on. */
  stories: number;
  openStories: number;
  /** Events held by open stories (bounded by maxOpenEvents), and their bytes (by maxOpenBytes). */
  openEvents: number;
  openBytes: number;
  /** Stories closed at their maximum length, and at the buffer limit. */
  closedAtMaxLength: number;
  closedAtBufferLimit: number;
}

export interface StoryBuilderEvents {
  /** A story closed: hand it on. */
  story(story: Story): void;
  /** The open stories reached maxOpenEvents or maxOpenBytes: the oldest closed early (count it; say it once). */
  bufferFull?(options: StoryOptions): void;
}

export class StoryBuilder {
  private readonly options: StoryOptions;
  private readonly on: StoryBuilderEvents;
  private readonly now: () => number;
  /** Open stories by cluster and owner uid; Map order is the order they opened (oldest first). */
  private readonly open = new Map<string, OpenStory>();
  /** Owners whose last story closed before they went quiet: their next story is `continued`. */
  private readonly cutShort = new Set<string>();
  private openEvents = 0;
  private openBytes = 0;
  private readonly counters = { stories: 0, closedAtMaxLength: 0, closedAtBufferLimit: 0 };

  constructor(options: Partial<StoryOptions>, on: StoryBuilderEvents, now: () => number = Date.now) {
    this.options = { ...DEFAULT_STORY_OPTIONS, ...options };
    this.on = on;
    this.now = now;
  }

  /** Events held by open stories. */
  get pendingEvents(): number {
    return this.openEvents;
  }

  stats(): StoryStats {
    return {
      ...this.counters,
      openStories: this.open.size,
      openEvents: this.openEvents,
      openBytes: this.openBytes,
    };
  }

  add(event: ChangeEvent): void {
    const owner = event.owner ?? selfOwner(event);
    const key = storyKey(event.cluster, owner.uid);
    const now = this.now();
    let story = this.open.get(key);
    if (!story) {
      story = {
        key,
        owner: {
          ...owner,
          ...(event.object.namespace !== undefined ? { namespace: event.object.namespace } : {}),
        },
        cluster: event.cluster,
        openedAt: now,
        lastAt: now,
        continued: this.cutShort.delete(key),
        events: [],
        bytes: 0,
        objects: new Map(),
        timer: undefined,
      };
      this.open.set(key, story);
    }
    // Dependents that arrived before this object was known (their owner was this object then) belong
    // to this object's owner's story.
    const selfKey = storyKey(event.cluster, event.object.uid);
    if (selfKey !== key) {
      const early = this.open.get(selfKey);
      if (early) this.absorb(story, early);
    }
    const bytes = eventJsonLength(event);
    story.events.push(event);
    story.bytes += bytes;
    story.lastAt = now;
    this.openEvents++;
    this.openBytes += bytes;
    track(story, event);
    // The owner's namespace is its dependents' (Kubernetes allows no other) until its own event says
    // better: a cluster-scoped owner of namespaced objects has none.
    if (story.owner.uid === event.object.uid) {
      if (event.object.namespace === undefined) delete story.owner.namespace;
      else story.owner.namespace = event.object.namespace;
    }
    this.schedule(story);
    while (
      (this.openEvents > this.options.maxOpenEvents || this.openBytes > this.options.maxOpenBytes) &&
      this.open.size > 0
    ) {
      const oldest = this.open.values().next().value;
      if (!oldest) break;
      this.on.bufferFull?.(this.options);
      this.close(oldest, 'buffer');
    }
  }

  /** Closes every open story now (shutdown), oldest first. */
  flush(): void {
    for (const story of [...this.open.values()]) this.close(story, 'shutdown');
  }

  private absorb(into: OpenStory, from: OpenStory): void {
    clearTimeout(from.timer);
    this.open.delete(from.key);
    const merged = [...into.events, ...from.events].sort((a, b) =>
      a.time < b.time ? -1 : a.time > b.time ? 1 : 0,
    );
    into.events = merged;
    into.bytes += from.bytes;
    into.objects = new Map();
    for (const event of merged) track(into, event);
    into.openedAt = Math.min(into.openedAt, from.openedAt);
  }

  /**
   * One timer per story, armed once: an event only moves `lastAt`, and the timer, when it fires early
   * (the owner was not quiet after all), re-arms itself for the new due time. Cheaper than a timer
   * reset per event on a busy rollout.
   */
  private schedule(story: OpenStory): void {
    if (story.timer) return;
    const fire = (): void => {
      story.timer = undefined;
      const quietAt = story.lastAt + this.options.windowMs;
      const longestAt = story.openedAt + this.options.maxLengthMs;
      const due = Math.min(quietAt, longestAt);
      const now = this.now();
      if (now < due) {
        story.timer = setTimeout(fire, due - now);
        return;
      }
      this.close(story, quietAt <= longestAt ? 'quiet' : 'max-length');
    };
    const due = Math.min(story.lastAt + this.options.windowMs, story.openedAt + this.options.maxLengthMs);
    story.timer = setTimeout(fire, Math.max(0, due - this.now()));
  }

  private close(story: OpenStory, reason: StoryCloseReason): void {
    if (this.open.get(story.key) !== story) return;
    clearTimeout(story.timer);
    this.open.delete(story.key);
    this.openEvents -= story.events.length;
    this.openBytes -= story.bytes;
    this.counters.stories++;
    if (reason === 'max-length') this.counters.closedAtMaxLength++;
    if (reason === 'buffer') this.counters.closedAtBufferLimit++;
    if (reason === 'max-length' || reason === 'buffer') this.cutShort.add(story.key);
    // A bounded memory of owners cut short: the set never outgrows the stories that can be open.
    if (this.cutShort.size > this.options.maxOpenEvents) this.cutShort.clear();
    this.on.story(finish(story, reason));
  }
}

function storyKey(cluster: string | undefined, uid: string): string {
  return `${cluster ?? ''}\u0000${uid}`;
}

/** An event without an owner (a builder fed without the owner stage) is its own story. */
function selfOwner(event: ChangeEvent): OwnerRef {
  const { apiVersion, kind, name, uid } = event.object;
  return { apiVersion, kind, name, uid };
}

function track(story: OpenStory, event: ChangeEvent): void {
  let object = story.objects.get(event.object.uid);
  if (!object) {
    object = { event, created: event.type === 'ADDED', deleted: false, events: 0, net: new Map() };
    story.objects.set(event.object.uid, object);
  }
  object.event = event;
  object.events++;
  object.deleted = event.type === 'DELETED';
  for (const change of event.changes ?? []) {
    const entry = object.net.get(change.path);
    if (!entry) {
      object.net.set(change.path, {
        hadFrom: change.op !== 'add',
        from: change.from,
        hasTo: change.op !== 'remove',
        to: change.to,
      });
    } else {
      entry.hasTo = change.op !== 'remove';
      entry.to = change.to;
    }
  }
}

function netChanges(net: Map<string, NetValue>): Change[] {
  const changes: Change[] = [];
  for (const [path, value] of net) {
    const { hadFrom, hasTo, from, to } = value;
    if (hadFrom && hasTo) {
      if (from !== undefined && to !== undefined && !jsonEqual(from, to))
        changes.push({ op: 'replace', path, from, to });
    } else if (hasTo && to !== undefined) changes.push({ op: 'add', path, to });
    else if (hadFrom && from !== undefined) changes.push({ op: 'remove', path, from });
  }
  return changes;
}

function objectOf(track: ObjectTrack): StoryObject {
  const { resourceVersion: _version, ...object } = track.event.object;
  return {
    ...object,
    created: track.created,
    deleted: track.deleted,
    events: track.events,
    changes: netChanges(track.net),
  };
}

function finish(story: OpenStory, reason: StoryCloseReason): Story {
  const first = story.events[0];
  const last = story.events[story.events.length - 1];
  let ownerChange: StoryObject | undefined;
  const objects: StoryObject[] = [];
  for (const track of story.objects.values()) {
    const object = objectOf(track);
    if (object.uid === story.owner.uid) ownerChange = object;
    else objects.push(object);
  }
  const counts = new Map<string, StoryCount>();
  for (const event of story.events) {
    const resource = qualifiedResource(event);
    let count = counts.get(resource);
    if (!count) {
      count = { kind: event.object.kind, resource, ADDED: 0, UPDATED: 0, DELETED: 0 };
      counts.set(resource, count);
    }
    count[event.type]++;
  }
  return {
    type: 'STORY',
    id: `story:${first?.id ?? story.owner.uid}`,
    ...(story.cluster !== undefined ? { cluster: story.cluster } : {}),
    owner: story.owner,
    from: first?.time ?? '',
    to: last?.time ?? '',
    closed: reason,
    ...(story.continued ? { continued: true as const } : {}),
    ...(story.events.every((event) => event.offline) ? { offline: true as const } : {}),
    ...(ownerChange ? { ownerChange } : {}),
    summary: summarize(objects),
    counts: [...counts.values()],
    objects,
    count: story.events.length,
    events: story.events,
  };
}

/** 'ReplicaSet web-7d9 created, scaled 1→3; ReplicaSet web-5c4 scaled 3→0; 3 pods replaced'. */
function summarize(objects: readonly StoryObject[]): string {
  const byKind = new Map<string, StoryObject[]>();
  for (const object of objects) {
    const key = `${object.apiVersion} ${object.resource}`;
    const list = byKind.get(key);
    if (list) list.push(object);
    else byKind.set(key, [object]);
  }
  const parts: string[] = [];
  for (const list of byKind.values()) {
    if (list.length <= LISTED_PER_KIND && list[0]?.kind !== 'Pod') {
      for (const object of list) parts.push(`${object.kind} ${object.name} ${describeObject(object)}`);
    } else {
      parts.push(countObjects(list));
    }
  }
  return parts.join('; ');
}

/** 'created, scaled 1→3', 'deleted', 'scaled 3→0', '2 fields changed', 'no net change'. */
export function describeObject(object: StoryObject): string {
  const words: string[] = [];
  if (object.created && object.deleted) words.push('created and deleted');
  else if (object.created) words.push('created');
  else if (object.deleted) words.push('deleted');
  if (!(object.created && object.deleted)) {
    const replicas = object.changes.find((change) => change.path === '/spec/replicas');
    if (replicas && replicas.op === 'replace')
      words.push(`scaled ${show(replicas.from)}→${show(replicas.to)}`);
    const others = object.changes.length - (replicas ? 1 : 0);
    if (others > 0) words.push(`${others} field${others === 1 ? '' : 's'} changed`);
  }
  return words.length > 0 ? words.join(', ') : 'no net change';
}

function countObjects(list: readonly StoryObject[]): string {
  const plural = list[0]?.resource ?? '';
  const singular = (list[0]?.kind ?? plural).toLowerCase();
  const created = list.filter((object) => object.created && !object.deleted).length;
  const deleted = list.filter((object) => object.deleted && !object.created).length;
  const transient = list.filter((object) => object.created && object.deleted).length;
  const updated = list.length - created - deleted - transient;
  const replaced = Math.min(created, deleted);
  const phrase = (n: number, verb: string) => (n > 0 ? `${n} ${n === 1 ? singular : plural} ${verb}` : '');
  return [
    phrase(replaced, 'replaced'),
    phrase(created - replaced, 'created'),
    phrase(deleted - replaced, 'deleted'),
    phrase(transient, 'created and deleted'),
    phrase(updated, 'updated'),
  ]
    .filter(Boolean)
    .join(', ');
}

function show(value: JsonValue | undefined): string {
  return value === undefined ? '?' : typeof value === 'string' ? value : JSON.stringify(value);
}

/** The event types a story's counts add up to, for one-line summaries. */
export function countsByType(story: Story): Record<EventType, number> {
  const totals: Record<EventType, number> = { ADDED: 0, UPDATED: 0, DELETED: 0 };
  for (const count of story.counts) {
    totals.ADDED += count.ADDED;
    totals.UPDATED += count.UPDATED;
    totals.DELETED += count.DELETED;
  }
  return totals;
}
