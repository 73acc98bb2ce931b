// The admission webhook as a source of "who" (docs/who.md): which change each admission review is of.
//
// A validating webhook sees a write before it is stored: the object's uid (set before validation, on
// CREATE too) and, for UPDATE and DELETE, the old object's resourceVersion, i.e. the version the write
// replaces. So a review names the change whose uid is its uid and whose previous resourceVersion (what the
// watch saw before it) is its old one; a CREATE names the uid's ADDED. Subresource writes (`scale`,
// `status`) carry the same uid and old resourceVersion.
//
// Several reviews can name the same (uid, old version): a write that then failed (a conflict, a quota,
// another webhook's refusal) or changed nothing, a dry run of the admission server's, and forged ones. A
// review of the object itself in the version kubediff watches carries the digest of the object the write
// produces (object-digest.ts): one whose digest differs from the stored object's is of another write, and
// never names this one. Among those left, the best-fitting tier wins: a verified review (its digest is the
// change's), else one that cannot be verified (a subresource, another API version, a DELETE whose UPDATED
// sets deletionTimestamp). If that tier's reviews name one user, the match is exact; if they name
// several, it is ambiguous: the change names nobody. A forged review can hide who made a write, never
// name someone else as its author, unless it also carries the exact object the write produced.

import type { Logger } from '../util/log.ts';
import type { ByInfo, UserInfo } from './event.ts';
import { objectDigest } from './object-digest.ts';
import { type KeptRecord, RecordStore } from './record-store.ts';
import { type Candidate, type JoinSubject, RANKS, type WaitingIndex, type WhoSource } from './who-source.ts';

export const ADMISSION_OPERATIONS = ['CREATE', 'UPDATE', 'DELETE'] as const;
export type AdmissionOperation = (typeof ADMISSION_OPERATIONS)[number];

/** What kubediff keeps of one admission review: no object, only what names the write. */
export interface AdmissionRecord {
  /** The review's request uid: a review received twice (from a peer too) counts once. */
  reviewUID: string;
  operation: AdmissionOperation;
  group: string;
  resource: string;
  subresource?: string;
  namespace?: string;
  name?: string;
  /** The object's uid. */
  uid: string;
  /** UPDATE, DELETE: the old object's resourceVersion, the version the write replaces. */
  oldResourceVersion?: string;
  /** CREATE, UPDATE of the object itself in the watched version: objectDigest of what the write produces. */
  digest?: string;
  user: UserInfo;
  /** When the review came, in ms since the epoch. */
  time: number;
}

export interface AdmissionSourceOptions {
  maxRecords: number;
  retainMs: number;
  log: Logger;
}

export interface AdmissionSourceStats {
  records: number;
  joinedExact: number;
  joinedAmbiguous: number;
  recordsDropped: number;
  /** Records that named no change within their time (writes that failed or changed nothing reportable). */
  recordsExpired: number;
  /** Reviews of a change already named (the loser of a conflict, a forgery), or received twice. */
  recordsSuperseded: number;
}

/**
 * The two tiers of candidates: FITS, a review verified by its digest (or a DELETE for a DELETED); MAY_FIT,
 * one that cannot be verified (a subresource, another version, a DELETE that set deletionTimestamp, the
 * UPDATE that removed the last finalizer).
 */
const FITS = 0;
const MAY_FIT = 1;

/** Where a review stands for a change: its tier, or undefined when it is not this change's write. */
function tierOf(record: AdmissionRecord, subject: JoinSubject): number | undefined {
  const { event } = subject;
  if (record.uid !== event.object.uid) return undefined;
  const digest = () => {
    if (subject.object === undefined) return undefined;
    subject.digest ??= objectDigest(subject.object);
    return subject.digest;
  };
  const verified = () => {
    if (record.digest === undefined) return MAY_FIT;
    return record.digest === digest() ? FITS : undefined;
  };
  switch (event.type) {
    case 'ADDED':
      return record.operation === 'CREATE' ? verified() : undefined;
    case 'UPDATED':
      if (record.oldResourceVersion !== subject.previousResourceVersion) return undefined;
      if (record.operation === 'UPDATE') return verified();
      // A graceful delete, or one that waits for finalizers, sets deletionTimestamp.
      return record.operation === 'DELETE' ? MAY_FIT : undefined;
    case 'DELETED':
      if (record.oldResourceVersion !== subject.previousResourceVersion) return undefined;
      // The DELETE itself; else the UPDATE that removed the last finalizer of an object being deleted.
      if (record.operation === 'DELETE') return FITS;
      return record.operation === 'UPDATE' ? MAY_FIT : undefined;
  }
}

function sameUser(a: UserInfo, b: UserInfo): boolean {
  return a.username === b.username && a.uid === b.uid;
}

export class AdmissionSource implements WhoSource<AdmissionRecord> {
  readonly name = 'admission';
  private readonly store: RecordStore<AdmissionRecord>;
  /** Review uids seen lately (a review posted by the API server and forwarded by a peer counts once). */
  private readonly seen = new Map<string, number>();
  private readonly retainMs: number;
  private readonly maxRecords: number;
  private joinedExact = 0;
  private joinedAmbiguous = 0;
  private superseded = 0;

  constructor(options: AdmissionSourceOptions) {
    this.retainMs = options.retainMs;
    this.maxRecords = options.maxRecords;
    this.store = new RecordStore({
      maxRecords: options.maxRecords,
      retainMs: options.retainMs,
      uidOf: (record) => record.uid,
      nameKeyOf: () => undefined,
      describe: {
        records: 'admission reviews',
        setting: 'admission.maxRecords',
        metric: 'kubediff_admission_records_dropped_total',
      },
      log: options.log,
    });
  }

  stats(): AdmissionSourceStats {
    return {
      records: this.store.size,
      joinedExact: this.joinedExact,
      joinedAmbiguous: this.joinedAmbiguous,
      recordsDropped: this.store.dropped,
      recordsExpired: this.store.expired,
      recordsSuperseded: this.superseded,
    };
  }

  /** Keeps the review; then it may complete what a change waiting for this uid needs. */
  place<W extends { subject: JoinSubject }>(
    record: AdmissionRecord,
    waiting: WaitingIndex<W>,
    now: number,
  ): { entry: W; candidate: Candidate } | undefined {
    if (this.seen.has(record.reviewUID)) {
      this.superseded++;
      return undefined;
    }
    // Bounded as the store is: a review uid is remembered as long as its record could be kept.
    this.seen.set(record.reviewUID, now);
    if (this.seen.size > this.maxRecords) this.seen.delete(this.seen.keys().next().value as string);
    this.store.add(record, now);
    for (const entry of waiting.byUid(record.uid)) {
      const candidate = this.find(entry.subject);
      if (candidate) return { entry, candidate };
    }
    return undefined;
  }

  find(subject: JoinSubject): Candidate | undefined {
    let best: KeptRecord<AdmissionRecord>[] = [];
    let bestTier = Number.POSITIVE_INFINITY;
    for (const kept of this.store.byUid(subject.event.object.uid)) {
      const tier = tierOf(kept.record, subject);
      if (tier === undefined || tier > bestTier) continue;
      if (tier < bestTier) {
        best = [];
        bestTier = tier;
      }
      best.push(kept);
    }
    const first = best[0];
    if (!first) return undefined;
    const ambiguous = best.some((kept) => !sameUser(kept.record.user, first.record.user));
    return {
      rank: ambiguous ? RANKS.admissionAmbiguous : RANKS.admissionExact,
      take: () => {
        for (const kept of best) this.store.use(kept);
        if (ambiguous) {
          this.joinedAmbiguous++;
          return { by: { match: 'ambiguous' } };
        }
        this.joinedExact++;
        return { by: byOf(first.record) };
      },
    };
  }

  /** Reviews of the same uid and old version are of writes that lost (or forged): they name nothing now. */
  passed(subject: JoinSubject): void {
    const { event } = subject;
    for (const kept of [...this.store.byUid(event.object.uid)]) {
      const { record } = kept;
      const stale =
        event.type === 'DELETED' ||
        (event.type === 'ADDED' && record.operation === 'CREATE') ||
        (event.type === 'UPDATED' && record.oldResourceVersion === subject.previousResourceVersion);
      if (stale) {
        this.store.use(kept);
        this.superseded++;
      }
    }
  }

  expire(now: number): void {
    this.store.expire(now);
    for (const [uid, at] of this.seen) {
      if (now - at < this.retainMs) break;
      this.seen.delete(uid);
    }
  }
}

function byOf(record: AdmissionRecord): ByInfo {
  return { user: record.user, reviewUID: record.reviewUID, match: 'exact' };
}
