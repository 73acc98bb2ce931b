// One object's history as `show`, `diff` and `blame` read it: its kept events (through the UI's reader,
// with the UI's bound on how many), its last recorded state, and the versions rebuilt from them the way
// the UI rebuilds them (src/ui/versions.ts: the last state, each update undone in turn). Says, when a
// point in time cannot be answered, why: before the history's start, before the oldest of the events
// read, an earlier object of the same name since deleted, or a history whose changes do not undo.
import { undoChanges } from '../../diff/undo.ts';
import type { ChangeEvent } from '../../events/event.ts';
import { type JsonObject, objectKey } from '../../kube/types.ts';
import type { ObjectRef, TimelineReader } from '../../state/timeline-reader.ts';
import { OBJECT_LIMITS } from '../../ui/object-view.ts';
import { LIMITS } from '../../ui/query.ts';
import { rebuildVersions } from '../../ui/versions.ts';
import { KubediffError, UsageError } from '../../util/errors.ts';
import { describePoint, type TimePoint } from './time-point.ts';

export type RecordedEvent = ChangeEvent & { seq: number };

/** The UI's bound on the events of one object (docs/ui.md, "Limits"): the newest this many are read. */
export const OBJECT_EVENTS_LIMIT = LIMITS.objectEventsMax;
/** …and on their size, and the last state's: what one of the UI's answers holds (docs/ui.md, "Limits"). */
export const OBJECT_MAX_BYTES = OBJECT_LIMITS.maxBytes;

/** One version of the object, or its absence. */
export interface Version {
  /** The object as it was (normalized, as recorded); undefined when it did not exist. */
  object: JsonObject | undefined;
  /** The event that made this version; undefined for the state before the oldest event kept. */
  event?: RecordedEvent;
  /** When it began: the event's time, or the history's start. */
  since: string;
}

/** A point the history cannot answer: one sentence saying how far back it reaches, or why not. */
export class HistoryReach extends KubediffError {}

/**
 * The versions asked for are not kept, though the changes are (a deleted object, one too large to read,
 * a gap): `diff` lists the changes instead. A point outside the history stays a plain HistoryReach.
 */
export class VersionsNotKept extends HistoryReach {}

export class ObjectTimeline {
  readonly ref: ObjectRef;
  /** Oldest first: the newest OBJECT_EVENTS_LIMIT of the object, every incarnation of its name. */
  readonly events: readonly RecordedEvent[];
  /** Older events exist than those read. */
  readonly truncated: boolean;
  /** The cluster's oldest kept event's time: nothing before it is known. */
  readonly historyStart: string | undefined;
  /** The cluster of the object's events (asked for, or the one the history records it in). */
  readonly cluster: string | undefined;
  private readonly current: JsonObject | undefined;
  /** Why no version can be rebuilt at all (a last state too large to read), when that is so. */
  private readonly unreadable: string | undefined;
  private rebuilt: { rebuildable: number[]; versions: Map<number, JsonObject> } | undefined;
  private rebuiltFor = new Set<number>();

  private constructor(
    ref: ObjectRef,
    history: { events: RecordedEvent[]; truncated: boolean; current?: JsonObject },
    historyStart: string | undefined,
    unreadable?: string,
  ) {
    this.ref = ref;
    this.unreadable = unreadable;
    this.cluster = ref.cluster ?? history.events.find((event) => event.cluster !== undefined)?.cluster;
    this.events = history.events;
    this.truncated = history.truncated;
    this.current = history.current;
    this.historyStart = historyStart;
  }

  /**
   * Reads the object's history. Without a cluster, a history that records the object in several
   * clusters (PostgreSQL) is a UsageError naming them; an SQLite file holds one cluster, whose events
   * are kept when they name the one asked for. A last state too large to read leaves the events
   * readable (`diff` lists them); asking for a version is then a HistoryReach saying why.
   */
  static async read(reader: TimelineReader, ref: ObjectRef): Promise<ObjectTimeline> {
    const records = await reader.objectRecords(ref, {
      limit: OBJECT_EVENTS_LIMIT,
      maxBytes: OBJECT_MAX_BYTES,
    });
    const unreadable = records.currentTooLarge
      ? `${describeRef(ref)} is larger than ${OBJECT_MAX_BYTES / 2 ** 20} MiB as recorded, the most one read holds (as in the UI): its versions cannot be rebuilt; \`kubediff history\` lists its changes.`
      : undefined;
    const history = {
      events: records.events.map(({ seq, json }) => ({ ...(JSON.parse(json) as ChangeEvent), seq })),
      // A larger history than the bound: the newest events that fit, as older ones beyond the limit.
      truncated: records.truncated,
      current: records.current === undefined ? undefined : (JSON.parse(records.current) as JsonObject),
    };
    let events = history.events;
    let current = history.current;
    if (ref.cluster !== undefined && events.some((event) => event.cluster !== ref.cluster)) {
      events = events.filter((event) => event.cluster === ref.cluster);
      if (events.length === 0) current = undefined;
    }
    const clusters = [...new Set(events.map((event) => event.cluster ?? ''))].sort();
    if (clusters.length > 1) {
      throw new UsageError(
        `${describeRef(ref)} is recorded in ${clusters.length} clusters (${clusters.join(', ')}): choose one with --cluster.`,
      );
    }
    const cluster = ref.cluster ?? (clusters[0] || undefined);
    const [oldest] = await reader.after(0, cluster !== undefined ? { clusters: [cluster] } : {}, 1);
    return new ObjectTimeline(
      ref,
      { events, truncated: history.truncated, ...(current ? { current } : {}) },
      oldest?.time,
      unreadable,
    );
  }

  /** For tests and callers that hold the history already. */
  static of(
    ref: ObjectRef,
    history: { events: RecordedEvent[]; truncated: boolean; current?: JsonObject },
    historyStart: string | undefined,
  ): ObjectTimeline {
    return new ObjectTimeline(ref, history, historyStart);
  }

  /** The version at `point`; a HistoryReach when the history cannot tell. */
  versionAt(point: TimePoint): Version {
    this.checkReadable();
    const index = this.indexAt(point);
    if (index < 0) return this.versionBeforeEvents(point);
    const event = this.events[index]!;
    if (event.type === 'DELETED') return { object: undefined, event, since: event.time };
    const object = this.rebuild([event.seq]).get(event.seq);
    if (object) return { object, event, since: event.time };
    throw this.unrebuildable(event);
  }

  /**
   * The oldest version the history can rebuild (`diff` without --from): the state before the oldest
   * event read when that event is an update that undoes, else the version after the oldest event that
   * can be rebuilt.
   */
  oldestVersion(): Version {
    this.checkReadable();
    const rebuildable = this.rebuildable();
    const first = rebuildable[0];
    if (first === undefined) {
      const last = this.events.at(-1);
      if (!last) throw new HistoryReach(`${describeRef(this.ref)} has no recorded history.`);
      throw this.unrebuildable(last);
    }
    const event = this.eventBySeq(first)!;
    const base = this.baseState();
    if (base) return base;
    return { object: this.rebuild([first]).get(first), event, since: event.time };
  }

  /** The newest version (`--to` by default): the object as last recorded, or its deletion. */
  latestVersion(): Version {
    const last = this.events.at(-1);
    if (!last) throw new HistoryReach(`${describeRef(this.ref)} has no recorded history.`);
    return this.versionAt({ kind: 'event', id: last.id });
  }

  /** The events after version `from` up to and including version `to`'s, oldest first. */
  eventsBetween(from: Version, to: Version): RecordedEvent[] {
    const start = from.event ? from.event.seq : Number.NEGATIVE_INFINITY;
    const end = to.event ? to.event.seq : Number.NEGATIVE_INFINITY;
    return this.events.filter((event) => event.seq > start && event.seq <= end);
  }

  /**
   * Every version of the current object up to `version`, newest first, at most `max` (blame), each with
   * the event that made it; then, when the oldest of them is an update that undoes, the state before it
   * (no event). `complete`: they reach back to the object's creation, so no line is older than them.
   */
  versionsUpTo(version: Version, max: number): { versions: Version[]; complete: boolean } {
    const until = version.event?.seq;
    if (until === undefined) return { versions: [version], complete: false };
    const seqs = this.rebuildable()
      .filter((seq) => seq <= until)
      .slice(-max);
    const rebuilt = this.rebuild(seqs);
    const versions: Version[] = seqs
      .map((seq) => {
        const event = this.eventBySeq(seq)!;
        return { object: rebuilt.get(seq), event, since: event.time };
      })
      .reverse();
    const oldest = versions.at(-1);
    const oldestEvent = oldest?.event;
    if (oldestEvent?.type === 'UPDATED' && oldest?.object) {
      const before = undoChanges(oldest.object, oldestEvent.changes ?? []);
      if (before) versions.push({ object: before, since: this.historyStart ?? oldestEvent.time });
    }
    return { versions, complete: oldestEvent?.type === 'ADDED' };
  }

  private checkReadable(): void {
    if (this.unreadable !== undefined) throw new VersionsNotKept(this.unreadable);
  }

  /** The state before the oldest kept event, when that event is an update that undoes. */
  private baseState(): Version | undefined {
    const firstSeq = this.rebuildable()[0];
    const first = firstSeq === undefined ? undefined : this.eventBySeq(firstSeq);
    if (first?.type !== 'UPDATED' || first !== this.events[0] || this.truncated) return undefined;
    const after = this.rebuild([first.seq]).get(first.seq);
    const before = after ? undoChanges(after, first.changes ?? []) : undefined;
    if (!before) return undefined;
    return { object: before, since: this.historyStart ?? first.time };
  }

  private versionBeforeEvents(point: TimePoint): Version {
    const first = this.events[0];
    const name = describeRef(this.ref);
    if (!first) throw new HistoryReach(`${name} has no recorded history.`);
    if (this.truncated) {
      throw new HistoryReach(
        `${name} changed more than ${OBJECT_EVENTS_LIMIT} times after ${describePoint(point)}: its newest ${OBJECT_EVENTS_LIMIT} changes are read (the UI's bound), which reach back to ${first.time}.`,
      );
    }
    if (first.type === 'ADDED') return { object: undefined, since: this.historyStart ?? first.time };
    if (first.type === 'DELETED') throw this.unrebuildable(first);
    const base = this.baseState();
    if (base) return base;
    throw this.unrebuildable(first);
  }

  /** The index of the last event at or before `point` (-1: before every event read). */
  private indexAt(point: TimePoint): number {
    if (point.kind === 'event') {
      const index = this.events.findIndex((event) => event.id === point.id);
      if (index < 0) {
        throw new UsageError(
          `no event ${point.id} in the history of ${describeRef(this.ref)}${this.truncated ? ` (its newest ${OBJECT_EVENTS_LIMIT} events are read)` : ''}; \`kubediff history\` lists their ids.`,
        );
      }
      return index;
    }
    if (this.historyStart !== undefined && point.ms < Date.parse(this.historyStart)) {
      throw new HistoryReach(
        `${describePoint(point)} is before the history's start: it reaches back to ${this.historyStart}${this.ref.cluster ? ` in cluster ${this.ref.cluster}` : ''}, so nothing older is known of ${describeRef(this.ref)}.`,
      );
    }
    let index = -1;
    for (let at = 0; at < this.events.length; at++) {
      if (Date.parse(this.events[at]!.time) <= point.ms) index = at;
      else break;
    }
    return index;
  }

  private unrebuildable(event: RecordedEvent): VersionsNotKept {
    const name = describeRef(this.ref);
    const last = this.events.at(-1);
    const deletion = this.events.find(
      (candidate) =>
        candidate.type === 'DELETED' &&
        candidate.object.uid === event.object.uid &&
        candidate.seq >= event.seq,
    );
    if (deletion || last?.object.uid !== event.object.uid) {
      return new VersionsNotKept(
        `${name} (uid ${event.object.uid}) was deleted${deletion ? ` at ${deletion.time}` : ''}: kubediff keeps the last state of objects that exist, so the versions of a deleted one cannot be rebuilt (its changes are listed by \`kubediff history\`).`,
      );
    }
    if (!this.current) {
      return new VersionsNotKept(
        `the history holds no recorded state of ${name}, only its changes, so its versions cannot be rebuilt (\`kubediff history\` lists them).`,
      );
    }
    const oldest = this.rebuildable()[0];
    const since = oldest === undefined ? undefined : this.eventBySeq(oldest)?.time;
    return new VersionsNotKept(
      `the versions of ${name} before ${since ?? event.time} cannot be rebuilt: the changes recorded before then do not undo on the recorded state (a gap in the history).`,
    );
  }

  /** The seqs whose version can be rebuilt, oldest first. */
  private rebuildable(): number[] {
    this.rebuild([]);
    return this.rebuilt?.rebuildable ?? [];
  }

  /** The versions after the events `seqs` (rebuilt once; asking for more rebuilds again). */
  private rebuild(seqs: readonly number[]): Map<number, JsonObject> {
    const missing = seqs.some((seq) => !this.rebuiltFor.has(seq));
    if (!this.rebuilt || missing) {
      const wanted = new Set([...this.rebuiltFor, ...seqs]);
      // rebuildVersions undoes the changes on the object it is given: a copy of our own.
      const current = this.current ? structuredClone(this.current) : undefined;
      const rebuilt = rebuildVersions([...this.events], current, wanted);
      const rebuildable = rebuilt.rebuildable;
      const versions = new Map(
        [...rebuilt.versions].map(([seq, json]) => [seq, JSON.parse(json) as JsonObject] as const),
      );
      this.rebuilt = { rebuildable, versions };
      this.rebuiltFor = wanted;
    }
    return this.rebuilt.versions;
  }

  private eventBySeq(seq: number): RecordedEvent | undefined {
    return this.events.find((event) => event.seq === seq);
  }
}

/** `deployments.apps shop/web`, with its cluster when one is named. */
export function describeRef(ref: ObjectRef): string {
  return `${ref.resource} ${objectKey(ref)}${ref.cluster ? ` [${ref.cluster}]` : ''}`;
}
