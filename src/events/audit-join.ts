// Who made each change: the API server's audit records (received by src/service/audit-server.ts) joined
// to the events, as a stage before the watch's rules (so that user filters can see `by.user`).
//
// The join. An audit record of a write at level RequestResponse carries the object the write produced,
// whose uid and resourceVersion are exactly the event's: that is an exact match. A DELETED event also
// matches exactly the delete record of its uid (an object is deleted once; the DELETE response's
// resourceVersion need not be the watch's). A record without a response object (level Metadata) can only
// be matched by what it names: the same resource, namespace and name, a verb that can make this kind of
// event, within `windowMs` of when kubediff saw the change (the closest wins): a nearest match.
//
// The wait. The watch event and its audit record race: either may come first. An event seen live waits
// for its record at most `waitMs` (the only latency the join adds), then goes on without `by.user`.
// Stages pass changes on in the order they came, so an event waits behind one that waits; deadlines
// follow arrival, so the head's deadline is the only timer. Events that are not changes made just now
// (--initial's inventory, what a relist found offline) never wait; they take a record that is already
// there.
//
// Bounds (README "The audit webhook" and docs/audit.md): at most `maxPending` changes wait (beyond it the
// oldest goes on at once, without user), at most `maxRecords` unmatched records are kept (beyond it the
// oldest is dropped), each at most `retainMs`. Each limit is counted in a metric and logged once. The
// records are kept in arrival order, and one that was matched is let go when it reaches the front;
// behind an unmatched one (kept up to retainMs), matched ones are let go in one pass as soon as there
// are more than `maxRecords` of them: whatever the order, at most 2 × maxRecords records are held.

import { groupOf } from '../kube/types.ts';
import { groupedCount } from '../util/count-text.ts';
import type { Logger } from '../util/log.ts';
import { type ByInfo, type ChangeEvent, type EventType, type UserInfo, withBy } from './event.ts';
import type { EventStage, Handover } from './pipeline.ts';

/** What kubediff keeps of one audit event: no request or response body, only what names the write. */
export interface AuditRecord {
  auditID: string;
  verb: string;
  /** objectRef: the API group ('' for the core group), the resource, and the rest when known. */
  group: string;
  resource: string;
  subresource?: string;
  namespace?: string;
  name?: string;
  /** From the response object's metadata (level RequestResponse): the object the write produced. */
  uid?: string;
  resourceVersion?: string;
  user: UserInfo;
  impersonatedUser?: UserInfo;
  userAgent?: string;
  sourceIPs?: string[];
  /** The record's stageTimestamp, in ms since the epoch. */
  time: number;
}

export interface AuditJoinOptions {
  /** How long a change seen live waits for its record (--audit-wait). */
  waitMs: number;
  /** How far apart in time a nearest match may be. */
  windowMs: number;
  /** Changes waiting at most. */
  maxPending: number;
  /** Unmatched records kept at most… */
  maxRecords: number;
  /** …and for at most this long. */
  retainMs: number;
  log: Logger;
  now?: () => number;
}

export const AUDIT_JOIN_DEFAULTS = {
  waitMs: 500,
  windowMs: 5_000,
  maxPending: 10_000,
  maxRecords: 20_000,
  retainMs: 60_000,
} as const;

/** The counts a /metrics scrape reads. */
export interface AuditJoinStats {
  pending: number;
  records: number;
  joinedExact: number;
  joinedNearest: number;
  /** Changes that waited and went on without a record. */
  unmatched: number;
  /** Changes sent on before their time because `maxPending` were waiting. */
  releasedAtLimit: number;
  /** Unmatched records dropped because `maxRecords` were kept. */
  recordsDropped: number;
}

interface Waiting {
  handover: Handover;
  /** Set while the event waits for its record. */
  deadline: number | undefined;
  matched: boolean;
}

interface StoredRecord {
  record: AuditRecord;
  received: number;
  used: boolean;
}

/** Verbs that can make each type of event, for a nearest match (a subresource's create updates its object). */
function verbFits(record: AuditRecord, type: EventType): boolean {
  const { verb } = record;
  if (record.subresource) return type === 'UPDATED' && verb !== 'delete';
  switch (type) {
    case 'ADDED':
      // A PUT or an apply may create.
      return verb === 'create' || verb === 'update' || verb === 'patch';
    case 'UPDATED':
      // A delete with finalizers or a grace period sets deletionTimestamp.
      return verb === 'update' || verb === 'patch' || verb === 'delete';
    case 'DELETED':
      return verb === 'delete' || verb === 'deletecollection';
  }
}

function nameKey(group: string, resource: string, namespace: string | undefined, name: string): string {
  return `${group}\u0000${resource}\u0000${namespace ?? ''}\u0000${name}`;
}

function eventNameKey(event: ChangeEvent): string {
  const { apiVersion, resource, namespace, name } = event.object;
  return nameKey(groupOf(apiVersion), resource, namespace, name);
}

/** The record of `event`'s write, by uid and resourceVersion (or the uid's delete); undefined if none. */
function exactFor(record: AuditRecord, event: ChangeEvent): boolean {
  if (record.uid === undefined || record.uid !== event.object.uid) return false;
  if (record.resourceVersion === event.object.resourceVersion) return true;
  return event.type === 'DELETED' && (record.verb === 'delete' || record.verb === 'deletecollection');
}

/** Could `record` be `event`'s write by name and time? Records that name another write exactly cannot. */
function nearFor(record: AuditRecord, event: ChangeEvent, eventTime: number, windowMs: number): boolean {
  if (!verbFits(record, event.type)) return false;
  if (record.uid !== undefined && record.uid !== event.object.uid) return false;
  if (record.resourceVersion !== undefined && event.type !== 'DELETED') return false;
  return Math.abs(record.time - eventTime) <= windowMs;
}

function byOf(record: AuditRecord, match: 'exact' | 'nearest'): ByInfo {
  return {
    user: record.user,
    ...(record.impersonatedUser ? { impersonatedUser: record.impersonatedUser } : {}),
    ...(record.userAgent ? { userAgent: record.userAgent } : {}),
    ...(record.sourceIPs && record.sourceIPs.length > 0 ? { sourceIPs: record.sourceIPs } : {}),
    auditID: record.auditID,
    match,
  };
}

export class AuditJoin implements EventStage {
  readonly name = 'audit join';
  private readonly options: AuditJoinOptions;
  private readonly now: () => number;
  private next: (handover: Handover) => void = () => {};
  /** Changes in arrival order, from `head` on. */
  private queue: Waiting[] = [];
  private head = 0;
  /** Waiting events by uid, and by name (for records that come after them). */
  private readonly waitingByUid = new Map<string, Set<Waiting>>();
  private readonly waitingByName = new Map<string, Set<Waiting>>();
  /** Unmatched records, oldest first from `recordHead`, and their indexes. */
  private records: StoredRecord[] = [];
  private recordHead = 0;
  private liveRecords = 0;
  private readonly recordsByUid = new Map<string, Set<StoredRecord>>();
  private readonly recordsByName = new Map<string, Set<StoredRecord>>();
  private timer: NodeJS.Timeout | undefined;
  private timerAt = 0;
  private closed = false;
  private readonly counts = {
    joinedExact: 0,
    joinedNearest: 0,
    unmatched: 0,
    releasedAtLimit: 0,
    recordsDropped: 0,
  };

  constructor(options: AuditJoinOptions) {
    this.options = options;
    this.now = options.now ?? Date.now;
  }

  stats(): AuditJoinStats {
    return { ...this.counts, pending: this.queue.length - this.head, records: this.liveRecords };
  }

  /** Records held, matched ones not let go yet included (at most 2 × maxRecords). */
  get recordsHeld(): number {
    return this.records.length - this.recordHead;
  }

  connect(next: (handover: Handover) => void): (handover: Handover) => void {
    this.next = next;
    return (handover) => this.accept(handover);
  }

  /** Audit records from the webhook: each joins a waiting change, or is kept for one to come. */
  offer(records: readonly AuditRecord[]): void {
    if (this.closed) return;
    const now = this.now();
    this.expireRecords(now);
    for (const record of records) {
      const waiting = this.waitingFor(record);
      if (waiting) {
        this.join(waiting, record);
      } else {
        this.store(record, now);
      }
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
    const event = handover.event;
    let entry: Waiting = { handover, deadline: undefined, matched: false };
    if (event && !(handover.change?.initial ?? false)) {
      const record = this.takeRecordFor(event);
      if (record) {
        entry = {
          handover: { ...handover, event: withBy(event, byOf(record.record, record.match)) },
          deadline: undefined,
          matched: true,
        };
        this.counted(record.match);
      } else if (!event.offline && !this.closed) {
        entry.deadline = this.now() + this.options.waitMs;
        this.index(entry, event);
      }
    }
    if (this.queue.length === this.head && entry.deadline === undefined) {
      this.next(entry.handover);
      return;
    }
    this.queue.push(entry);
    if (this.queue.length - this.head > this.options.maxPending) this.releaseAtLimit();
    this.drain();
  }

  private releaseAtLimit(): void {
    const oldest = this.queue[this.head] as Waiting;
    if (oldest.deadline !== undefined && !oldest.matched) {
      oldest.deadline = this.now();
      if (this.counts.releasedAtLimit++ === 0) {
        this.options.log.warn(
          `audit join: more than ${groupedCount(this.options.maxPending)} changes wait for their audit record; ` +
            'the oldest go on at once without user. Counted in kubediff_audit_pending_released_total; logged once.',
        );
      }
    }
  }

  /** Sends on, in order, what no longer waits; sets the timer for the head that does. */
  private drain(all = false): void {
    const now = this.now();
    while (this.head < this.queue.length) {
      const entry = this.queue[this.head] as Waiting;
      if (!all && !entry.matched && entry.deadline !== undefined && entry.deadline > now) break;
      this.queue[this.head] = undefined as unknown as Waiting;
      this.head++;
      if (entry.deadline !== undefined && !entry.matched) {
        this.unindex(entry);
        this.counts.unmatched++;
      }
      this.next(entry.handover);
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

  private counted(match: 'exact' | 'nearest'): void {
    if (match === 'exact') this.counts.joinedExact++;
    else this.counts.joinedNearest++;
  }

  private join(entry: Waiting, record: AuditRecord): void {
    const event = entry.handover.event as ChangeEvent;
    const match = exactFor(record, event) ? 'exact' : 'nearest';
    this.unindex(entry);
    entry.handover = { ...entry.handover, event: withBy(event, byOf(record, match)) };
    entry.matched = true;
    this.counted(match);
  }

  // Waiting changes, indexed for records that come after them.

  private index(entry: Waiting, event: ChangeEvent): void {
    addTo(this.waitingByUid, event.object.uid, entry);
    addTo(this.waitingByName, eventNameKey(event), entry);
  }

  private unindex(entry: Waiting): void {
    const event = entry.handover.event as ChangeEvent;
    removeFrom(this.waitingByUid, event.object.uid, entry);
    removeFrom(this.waitingByName, eventNameKey(event), entry);
  }

  /** The waiting change this record is of: exactly, else the nearest in time. */
  private waitingFor(record: AuditRecord): Waiting | undefined {
    if (record.uid !== undefined) {
      for (const entry of this.waitingByUid.get(record.uid) ?? []) {
        if (exactFor(record, entry.handover.event as ChangeEvent)) return entry;
      }
    }
    if (record.name === undefined) return undefined;
    let best: Waiting | undefined;
    let bestDistance = Number.POSITIVE_INFINITY;
    const key = nameKey(record.group, record.resource, record.namespace, record.name);
    for (const entry of this.waitingByName.get(key) ?? []) {
      const event = entry.handover.event as ChangeEvent;
      const time = Date.parse(event.time);
      if (!nearFor(record, event, time, this.options.windowMs)) continue;
      const distance = Math.abs(record.time - time);
      if (distance < bestDistance) {
        best = entry;
        bestDistance = distance;
      }
    }
    return best;
  }

  // Unmatched records, for changes that come after them.

  private store(record: AuditRecord, now: number): void {
    const stored: StoredRecord = { record, received: now, used: false };
    this.records.push(stored);
    this.liveRecords++;
    if (record.uid !== undefined) addTo(this.recordsByUid, record.uid, stored);
    if (record.name !== undefined) {
      addTo(
        this.recordsByName,
        nameKey(record.group, record.resource, record.namespace, record.name),
        stored,
      );
    }
    while (this.liveRecords > this.options.maxRecords) {
      this.dropOldestRecord();
      if (this.counts.recordsDropped++ === 0) {
        this.options.log.warn(
          `audit join: more than ${groupedCount(this.options.maxRecords)} audit records wait for their change; ` +
            'dropping the oldest (their changes go out without user). Counted in kubediff_audit_records_dropped_total; logged once.',
        );
      }
    }
  }

  private takeRecordFor(event: ChangeEvent): { record: AuditRecord; match: 'exact' | 'nearest' } | undefined {
    for (const stored of this.recordsByUid.get(event.object.uid) ?? []) {
      if (!stored.used && exactFor(stored.record, event)) return { record: this.use(stored), match: 'exact' };
    }
    const time = Date.parse(event.time);
    let best: StoredRecord | undefined;
    let bestDistance = Number.POSITIVE_INFINITY;
    for (const stored of this.recordsByName.get(eventNameKey(event)) ?? []) {
      if (stored.used || !nearFor(stored.record, event, time, this.options.windowMs)) continue;
      const distance = Math.abs(stored.record.time - time);
      if (distance <= bestDistance) {
        best = stored;
        bestDistance = distance;
      }
    }
    return best ? { record: this.use(best), match: 'nearest' } : undefined;
  }

  private use(stored: StoredRecord): AuditRecord {
    stored.used = true;
    this.liveRecords--;
    this.unindexRecord(stored);
    // Matched records behind an unmatched one: let go in one pass once they outnumber maxRecords.
    if (this.records.length - this.recordHead - this.liveRecords > this.options.maxRecords) {
      this.records = this.records.slice(this.recordHead).filter((kept) => !kept.used);
      this.recordHead = 0;
    }
    return stored.record;
  }

  private unindexRecord(stored: StoredRecord): void {
    const { record } = stored;
    if (record.uid !== undefined) removeFrom(this.recordsByUid, record.uid, stored);
    if (record.name !== undefined) {
      removeFrom(
        this.recordsByName,
        nameKey(record.group, record.resource, record.namespace, record.name),
        stored,
      );
    }
  }

  private expireRecords(now: number): void {
    for (let oldest = this.oldestRecord(); oldest; oldest = this.oldestRecord()) {
      if (now - oldest.received < this.options.retainMs) break;
      this.dropOldestRecord();
    }
  }

  /** The oldest record not used yet (used ones are passed over for good). */
  private oldestRecord(): StoredRecord | undefined {
    while (this.recordHead < this.records.length) {
      const oldest = this.records[this.recordHead] as StoredRecord;
      if (!oldest.used) return oldest;
      this.records[this.recordHead] = undefined as unknown as StoredRecord;
      this.recordHead++;
    }
    this.records = [];
    this.recordHead = 0;
    return undefined;
  }

  private dropOldestRecord(): void {
    const oldest = this.oldestRecord();
    if (!oldest) return;
    this.use(oldest);
    if (this.recordHead > 1024 && this.recordHead * 2 > this.records.length) {
      this.records = this.records.slice(this.recordHead);
      this.recordHead = 0;
    }
  }
}

/** The indexes by uid and by name: a Set per key keeps arrival order and removes in constant time. */
function addTo<T>(map: Map<string, Set<T>>, key: string, value: T): void {
  let set = map.get(key);
  if (!set) {
    set = new Set();
    map.set(key, set);
  }
  set.add(value);
}

function removeFrom<T>(map: Map<string, Set<T>>, key: string, value: T): void {
  const set = map.get(key);
  if (!set) return;
  set.delete(value);
  if (set.size === 0) map.delete(key);
}
