// The audit webhook as a source of "who" (docs/audit.md): which change each audit record is of.
//
// An audit record of a write at level RequestResponse carries the object the write produced, whose uid and
// resourceVersion are exactly the event's: that is an exact match. A DELETED event also matches exactly
// the delete record of its uid (an object is deleted once; the DELETE response's resourceVersion need not
// be the watch's). A record without a response object (level Metadata) can only be matched by what it
// names: the same resource, namespace and name, a verb that can make this kind of event, within
// `windowMs` of when kubediff saw the change (the closest wins): a nearest match.

import type { ByInfo, EventType, UserInfo } from '../../events/event.ts';
import type { Logger } from '../../util/log.ts';
import { type KeptRecord, RecordStore } from '../record-store.ts';
import {
  type Candidate,
  eventNameKey,
  type JoinSubject,
  nameKey,
  RANKS,
  type WaitingIndex,
  type WhoSource,
} from '../who-source.ts';

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

export const AUDIT_SOURCE_DEFAULTS = { windowMs: 5_000, maxRecords: 20_000 } as const;

export interface AuditSourceOptions {
  /** How far apart in time a nearest match may be. */
  windowMs: number;
  /** Unmatched records kept at most… */
  maxRecords: number;
  /** …and for at most this long. */
  retainMs: number;
  log: Logger;
}

export interface AuditSourceStats {
  records: number;
  /** Records held, matched ones not let go yet included (at most 2 × maxRecords: record-store.ts). */
  held: number;
  joinedExact: number;
  joinedNearest: number;
  /** Unmatched records dropped because `maxRecords` were kept. */
  recordsDropped: number;
  /** Records received again (from the API server and from a peer): the second is dropped. */
  recordsDuplicate: number;
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

/** Is `record` the write of this change, by uid and resourceVersion (or the uid's delete)? */
function exactFor(record: AuditRecord, subject: JoinSubject): boolean {
  const { event } = subject;
  if (record.uid === undefined || record.uid !== event.object.uid) return false;
  if (record.resourceVersion === event.object.resourceVersion) return true;
  return event.type === 'DELETED' && (record.verb === 'delete' || record.verb === 'deletecollection');
}

/** Could `record` be this change's write by name and time? Records that name another write exactly cannot. */
function nearFor(record: AuditRecord, subject: JoinSubject, windowMs: number): boolean {
  const { event } = subject;
  if (!verbFits(record, event.type)) return false;
  if (record.uid !== undefined && record.uid !== event.object.uid) return false;
  if (record.resourceVersion !== undefined && event.type !== 'DELETED') return false;
  return Math.abs(record.time - subject.time) <= windowMs;
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

function recordNameKey(record: AuditRecord): string | undefined {
  return record.name === undefined
    ? undefined
    : nameKey(record.group, record.resource, record.namespace, record.name);
}

export class AuditSource implements WhoSource<AuditRecord> {
  readonly name = 'audit';
  private readonly windowMs: number;
  private readonly store: RecordStore<AuditRecord>;
  private joinedExact = 0;
  private joinedNearest = 0;
  private duplicates = 0;
  private readonly maxRecords: number;
  /**
   * The auditIDs of the last `maxRecords` records, oldest first: a record that comes twice (the API
   * server's call and a peer's copy) counts once; kept as a second copy, it could name the wrong user
   * of a later write of the same object (a nearest match). Bounded as the store is.
   */
  private readonly seen = new Set<string>();

  constructor(options: AuditSourceOptions) {
    this.windowMs = options.windowMs;
    this.maxRecords = options.maxRecords;
    this.store = new RecordStore({
      maxRecords: options.maxRecords,
      retainMs: options.retainMs,
      uidOf: (record) => record.uid,
      nameKeyOf: recordNameKey,
      describe: {
        records: 'audit records',
        setting: 'audit.maxRecords',
        metric: 'kubediff_audit_records_dropped_total',
      },
      log: options.log,
    });
  }

  stats(): AuditSourceStats {
    return {
      records: this.store.size,
      held: this.store.held,
      joinedExact: this.joinedExact,
      joinedNearest: this.joinedNearest,
      recordsDropped: this.store.dropped,
      recordsDuplicate: this.duplicates,
    };
  }

  /** The waiting change this record is of: exactly, else the nearest in time; else it is kept. */
  place<W extends { subject: JoinSubject }>(
    record: AuditRecord,
    waiting: WaitingIndex<W>,
    now: number,
  ): { entry: W; candidate: Candidate } | undefined {
    if (this.seen.has(record.auditID)) {
      this.duplicates++;
      return undefined;
    }
    this.seen.add(record.auditID);
    if (this.seen.size > this.maxRecords) this.seen.delete(this.seen.values().next().value as string);
    if (record.uid !== undefined) {
      for (const entry of waiting.byUid(record.uid)) {
        if (exactFor(record, entry.subject)) return { entry, candidate: this.named(record, 'exact') };
      }
    }
    const key = recordNameKey(record);
    let best: W | undefined;
    let bestDistance = Number.POSITIVE_INFINITY;
    for (const entry of key === undefined ? [] : waiting.byName(key)) {
      if (!nearFor(record, entry.subject, this.windowMs)) continue;
      const distance = Math.abs(record.time - entry.subject.time);
      if (distance < bestDistance) {
        best = entry;
        bestDistance = distance;
      }
    }
    if (best) return { entry: best, candidate: this.named(record, 'nearest') };
    this.store.add(record, now);
    return undefined;
  }

  find(subject: JoinSubject): Candidate | undefined {
    for (const exact of this.store.byUid(subject.event.object.uid)) {
      if (exactFor(exact.record, subject)) return this.kept(exact, 'exact');
    }
    let best: KeptRecord<AuditRecord> | undefined;
    let bestDistance = Number.POSITIVE_INFINITY;
    for (const near of this.store.byName(eventNameKey(subject.event))) {
      if (!nearFor(near.record, subject, this.windowMs)) continue;
      const distance = Math.abs(near.record.time - subject.time);
      if (distance <= bestDistance) {
        best = near;
        bestDistance = distance;
      }
    }
    return best ? this.kept(best, 'nearest') : undefined;
  }

  expire(now: number): void {
    this.store.expire(now);
  }

  /** The candidate of a record in the store: taking it uses it up. */
  private kept(kept: KeptRecord<AuditRecord>, match: 'exact' | 'nearest'): Candidate {
    const named = this.named(kept.record, match);
    return {
      ...named,
      take: () => {
        this.store.use(kept);
        return named.take();
      },
    };
  }

  /**
   * The candidate of a record already out of the store (or never in it). Disputed (an admission review
   * names someone else: only a nearest record can be), it names nobody and stays where it is: it may be
   * of another write.
   */
  private named(record: AuditRecord, match: 'exact' | 'nearest'): Candidate {
    return {
      rank: match === 'exact' ? RANKS.auditExact : RANKS.auditNearest,
      // An admission review shows the user the write acted as: the impersonated one.
      user: record.impersonatedUser ?? record.user,
      take: () => {
        if (match === 'exact') this.joinedExact++;
        else this.joinedNearest++;
        return { by: byOf(record, match) };
      },
      dispute: () => ({ by: { match: 'ambiguous' } }),
    };
  }
}
