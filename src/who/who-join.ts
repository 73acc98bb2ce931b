// Who made each change: audit records (audit-match.ts) and admission reviews (admission-match.ts) joined
// to the events in a stage before the watch's rules, so that filters see `by.user` (docs/who.md). An
// event seen live waits at most waitMs for its record, behind earlier ones (order kept); other events
// (--initial, offline changes) never wait. Candidates of both sources are weighed by who-source.ts's
// ranks; ones that disagree name nobody. Bounded: maxPending changes wait, and maxPendingBytes of them
// (each counted as its JSON text, eventJsonLength, and ENTRY_OVERHEAD_BYTES); beyond either, the oldest
// goes on without a user (at least one always waits: a change larger than the bytes alone waits its time);
// each source bounds its unmatched records; each limit is counted and logged once.

import { qualifiedResource, withBy } from '../events/event.ts';
import { eventJsonLength } from '../events/event-json.ts';
import type { EventStage, Handover } from '../events/pipeline.ts';
import { groupedCount } from '../util/count-text.ts';
import { type FailureReporter, identityOf } from '../util/event-failures.ts';
import type { Logger } from '../util/log.ts';
import { MEMORY_SHARES } from '../util/memory-budget.ts';
import { formatSize } from '../util/size.ts';
import { addTo, removeFrom } from './record-store.ts';
import {
  type Candidate,
  choose,
  eventNameKey,
  type JoinSubject,
  type WaitingIndex,
  type WhoSource,
} from './who-source.ts';

export interface WhoJoinOptions {
  /** How long a change seen live waits for its record (--audit-wait, admission.wait: the longer). */
  waitMs: number;
  /** Changes waiting at most. */
  maxPending: number;
  /** Bytes of changes waiting at most (memory-budget.ts, whoPendingBytes); by default the largest. */
  maxPendingBytes?: number;
  /**
   * Where a change that fails in the stages after the join is reported: the join passes changes on
   * from its timer and from a webhook's request, where an exception would be unheard and end the process.
   */
  failures?: FailureReporter<'handler'> | undefined;
  log: Logger;
  now?: () => number;
}

export const WHO_JOIN_DEFAULTS = { waitMs: 500, maxPending: 10_000, retainMs: 60_000 } as const;

/** Per change waiting, besides its JSON: its entry, the handover and the indexes (an estimate, on the high side). */
const ENTRY_OVERHEAD_BYTES = 300;

/** The counts a /metrics scrape reads (each source counts its own joins). */
export interface WhoJoinStats {
  pending: number;
  /** Bytes of the changes waiting, as counted against maxPendingBytes. */
  pendingBytes: number;
  /** Changes that waited and went on without a record. */
  unmatched: number;
  /** Changes sent on before their time because `maxPending` changes, or `maxPendingBytes`, were waiting. */
  releasedAtLimit: number;
}

interface Waiting {
  handover: Handover;
  subject: JoinSubject | undefined;
  /** Set while the event waits for its record. */
  deadline: number | undefined;
  matched: boolean;
  /** What it counts against maxPendingBytes while queued. */
  bytes: number;
}

/** A change that waits: it names a write. */
type Indexed = Waiting & { subject: JoinSubject };

/** The change a handover carries, as the sources look at it; undefined for one that names no write. */
function subjectOf(handover: Handover): JoinSubject | undefined {
  const { event, change } = handover;
  // An update without a write (`cause`) has no writer to find.
  if (!event || change?.initial || event.cause) return undefined;
  const deleted = change?.kind === 'deleted';
  return {
    event,
    time: Date.parse(event.time),
    previousResourceVersion: change?.previousResourceVersion,
    object: deleted ? undefined : change?.object.object,
    // A DELETED carries the object's last state, the one the deletion found.
    previousObject: deleted ? change.object.object : change?.previous?.object,
  };
}

export class WhoJoin implements EventStage {
  readonly name = 'who join';
  private readonly options: WhoJoinOptions;
  private readonly maxPendingBytes: number;
  private readonly now: () => number;
  private readonly sources = new Map<string, WhoSource<unknown>>();
  private next: (handover: Handover) => void = () => {};
  /** Changes in arrival order, from `head` on. */
  private queue: Waiting[] = [];
  private head = 0;
  /** Waiting events by uid, and by name (for records that come after them). */
  private readonly waitingByUid = new Map<string, Set<Indexed>>();
  private readonly waitingByName = new Map<string, Set<Indexed>>();
  private readonly waiting: WaitingIndex<Indexed> = {
    byUid: (uid) => this.waitingByUid.get(uid) ?? [],
    byName: (key) => this.waitingByName.get(key) ?? [],
  };
  private timer: NodeJS.Timeout | undefined;
  private timerAt = 0;
  private closed = false;
  private readonly counts = { unmatched: 0, releasedAtLimit: 0 };
  /** Bytes of the changes queued (from `head` on). */
  private bytes = 0;
  /** The bounds already logged (once each). */
  private readonly logged = new Set<'count' | 'bytes'>();

  constructor(options: WhoJoinOptions, sources: readonly WhoSource<unknown>[]) {
    this.options = options;
    this.maxPendingBytes = options.maxPendingBytes ?? MEMORY_SHARES.whoPending.maxBytes;
    this.now = options.now ?? Date.now;
    for (const source of sources) this.sources.set(source.name, source);
  }

  stats(): WhoJoinStats {
    return { ...this.counts, pending: this.queue.length - this.head, pendingBytes: this.bytes };
  }

  connect(next: (handover: Handover) => void): (handover: Handover) => void {
    this.next = next;
    return (handover) => this.accept(handover);
  }

  /** Records from one source: each joins a waiting change, or is kept for one to come. */
  offer<R>(source: WhoSource<R>, records: readonly R[]): void {
    if (this.closed) return;
    const now = this.now();
    for (const known of this.sources.values()) known.expire(now);
    for (const record of records) {
      const placed = source.place(record, this.waiting, now);
      if (!placed) continue;
      // The other sources may have a candidate for the same change that contradicts this one.
      const others = [...this.sources.values()].filter((other) => other !== source);
      const candidate = choose([
        placed.candidate,
        ...others.map((other) => other.find(placed.entry.subject)),
      ]);
      if (candidate) this.join(placed.entry, candidate);
    }
    this.drain();
  }

  /** Stop: every waiting change goes on now (without user if it has none), and no timer is left. */
  close(): void {
    this.closed = true;
    this.drain(true);
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private accept(handover: Handover): void {
    const subject = subjectOf(handover);
    let entry: Waiting = { handover, subject, deadline: undefined, matched: false, bytes: 0 };
    if (subject) {
      const candidate = this.bestCandidate(subject);
      if (candidate) {
        entry = { ...entry, handover: { ...handover, event: withBy(subject.event, candidate.take().by) } };
        entry.matched = true;
      } else if (!subject.event.offline && !this.closed) {
        entry.deadline = this.now() + this.options.waitMs;
        this.index(entry as Indexed);
      }
    }
    if (this.queue.length === this.head && entry.deadline === undefined) {
      this.passOn(entry);
      return;
    }
    entry.bytes = ENTRY_OVERHEAD_BYTES + (handover.event ? eventJsonLength(handover.event) : 0);
    this.queue.push(entry);
    this.bytes += entry.bytes;
    // The head waits (drain() sent on whatever did not): the oldest go on until both bounds hold.
    for (let bound = this.overBound(); bound; bound = this.overBound()) {
      this.releaseAtLimit(bound);
      this.drain();
    }
    this.drain();
  }

  /** Which bound the changes queued are over, if any; the last one left is never over the bytes. */
  private overBound(): 'count' | 'bytes' | undefined {
    const pending = this.queue.length - this.head;
    if (pending > this.options.maxPending) return 'count';
    if (pending > 1 && this.bytes > this.maxPendingBytes) return 'bytes';
    return undefined;
  }

  /** What the candidates of every source name for a change that just came (who-source.ts, choose()). */
  private bestCandidate(subject: JoinSubject): Candidate | undefined {
    return choose([...this.sources.values()].map((source) => source.find(subject)));
  }

  private passOn(entry: Waiting): void {
    try {
      if (entry.subject) for (const source of this.sources.values()) source.passed?.(entry.subject);
      this.next(entry.handover);
    } catch (error) {
      // Contained to this change: the changes behind it still go on, in order.
      const event = entry.handover.event;
      const failures = this.options.failures;
      if (!failures) throw error;
      failures.report(
        'handler',
        'passing on a change after the who join',
        event ? identityOf(qualifiedResource(event), event.object) : { resource: 'a change' },
        error,
        'it is not reported',
      );
    }
  }

  private releaseAtLimit(bound: 'count' | 'bytes'): void {
    const oldest = this.queue[this.head] as Waiting;
    if (oldest.deadline === undefined || oldest.matched) return;
    oldest.deadline = this.now();
    this.counts.releasedAtLimit++;
    if (this.logged.has(bound)) return;
    this.logged.add(bound);
    const what =
      bound === 'count'
        ? `more than ${groupedCount(this.options.maxPending)} changes wait`
        : `more than ${formatSize(this.maxPendingBytes)} of changes wait`;
    this.options.log.warn(
      `who join: ${what} for their audit record or admission review; ` +
        'the oldest go on at once without user. Counted in kubediff_who_pending_released_total; logged once.',
    );
  }

  /** Sends on, in order, what no longer waits; sets the timer for the head that does. */
  private drain(all = false): void {
    const now = this.now();
    while (this.head < this.queue.length) {
      const entry = this.queue[this.head] as Waiting;
      if (!all && !entry.matched && entry.deadline !== undefined && entry.deadline > now) break;
      this.queue[this.head] = undefined as unknown as Waiting;
      this.head++;
      this.bytes -= entry.bytes;
      if (entry.deadline !== undefined && !entry.matched) {
        this.unindex(entry as Indexed);
        this.counts.unmatched++;
      }
      this.passOn(entry);
    }
    if (this.head === this.queue.length) {
      this.queue = [];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
    this.schedule();
  }

  private schedule(): void {
    const entry = this.queue[this.head];
    const due = entry && !entry.matched ? entry.deadline : undefined;
    if (due === undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
      return;
    }
    if (this.timer && this.timerAt === due) return;
    clearTimeout(this.timer);
    this.timerAt = due;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.drain();
      },
      Math.max(0, due - this.now()),
    );
  }

  private join(entry: Indexed, candidate: Candidate): void {
    this.unindex(entry);
    entry.handover = { ...entry.handover, event: withBy(entry.subject.event, candidate.take().by) };
    entry.matched = true;
  }

  // Waiting changes, indexed for records that come after them.

  private index(entry: Indexed): void {
    addTo(this.waitingByUid, entry.subject.event.object.uid, entry);
    addTo(this.waitingByName, eventNameKey(entry.subject.event), entry);
  }

  private unindex(entry: Indexed): void {
    removeFrom(this.waitingByUid, entry.subject.event.object.uid, entry);
    removeFrom(this.waitingByName, eventNameKey(entry.subject.event), entry);
  }
}
