// Which change each admission review is of (docs/who.md, "How a review names a change"): a review can
// only be of the change with its uid and, for UPDATE and DELETE, its old resourceVersion. Reviews that
// claim the same change are checked against it where they can be (the produced object's digest, a scale's
// replicas, a DELETE's old object): one whose check fails names nothing; the rest are equal candidates.
// Promises: one user among them is an exact match, several are ambiguous (nobody named); a forged review
// can hide who made a write, never name someone else, unless the write's own review never came.

import type { ByInfo, UserInfo } from '../../events/event.ts';
import { isJsonObject, type JsonObject } from '../../kube/types.ts';
import type { Logger } from '../../util/log.ts';
import { type KeptRecord, RecordStore } from '../record-store.ts';
import {
  type Candidate,
  type JoinSubject,
  RANKS,
  sameUser,
  type WaitingIndex,
  type WhoFinding,
  type WhoSource,
} from '../who-source.ts';
import { objectDigest } from './object-digest.ts';

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
  /** DELETE of an object in the watched version: objectDigest of its old object, the state it deletes. */
  oldDigest?: string;
  /** UPDATE of the `scale` subresource of a type whose Scale is its spec.replicas: the replicas it sets. */
  replicas?: number;
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

/** How a review stands against a change it could be of: checked against it, or not checkable. */
type Standing = 'checked' | 'unchecked';

/** objectDigest of the change's object, or of the one before it; undefined when not known or not digestible. */
function storedDigest(subject: JoinSubject, which: 'object' | 'previousObject'): string | undefined {
  const key = which === 'object' ? 'digest' : 'previousDigest';
  if (subject[key] === undefined) {
    const object = subject[which];
    if (object === undefined) return undefined;
    try {
      subject[key] = objectDigest(object);
    } catch {
      // Nested too deep to digest: the reviews of this change cannot be checked against it.
      subject[key] = null;
    }
  }
  return subject[key] ?? undefined;
}

/** A digest the review carries against the one of the stored object: undefined when they differ. */
function against(carried: string | undefined, stored: () => string | undefined): Standing | undefined {
  if (carried === undefined) return 'unchecked';
  const known = stored();
  if (known === undefined) return 'unchecked';
  return carried === known ? 'checked' : undefined;
}

/** A scale's replicas against the new object's spec.replicas (not there: ignored, redacted, not known). */
function replicasAgainst(replicas: number, object: JsonObject | undefined): Standing | undefined {
  const spec = object?.spec;
  const stored = isJsonObject(spec) ? spec.replicas : undefined;
  if (typeof stored !== 'number') return 'unchecked';
  return stored === replicas ? 'checked' : undefined;
}

/** Where a review stands for a change: undefined when it is not this change's write. */
function standingOf(record: AdmissionRecord, subject: JoinSubject): Standing | undefined {
  const { event } = subject;
  if (record.uid !== event.object.uid) return undefined;
  const object = () => storedDigest(subject, 'object');
  const previous = () => storedDigest(subject, 'previousObject');
  switch (event.type) {
    case 'ADDED':
      return record.operation === 'CREATE' ? against(record.digest, object) : undefined;
    case 'UPDATED':
      if (record.oldResourceVersion !== subject.previousResourceVersion) return undefined;
      if (record.operation === 'UPDATE') {
        return record.replicas !== undefined
          ? replicasAgainst(record.replicas, subject.object)
          : against(record.digest, object);
      }
      // A graceful delete, or one that waits for finalizers, sets deletionTimestamp: its old object is
      // the state before.
      return record.operation === 'DELETE' ? against(record.oldDigest, previous) : undefined;
    case 'DELETED':
      if (record.oldResourceVersion !== subject.previousResourceVersion) return undefined;
      if (record.operation === 'DELETE') return against(record.oldDigest, previous);
      // The update that removed the last finalizer of an object being deleted: nothing to check it by.
      return record.operation === 'UPDATE' ? 'unchecked' : undefined;
  }
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
    const fitting: { kept: KeptRecord<AdmissionRecord>; standing: Standing }[] = [];
    for (const kept of this.store.byUid(subject.event.object.uid)) {
      const standing = standingOf(kept.record, subject);
      if (standing !== undefined) fitting.push({ kept, standing });
    }
    const first = fitting[0];
    if (!first) return undefined;
    const ambiguous = fitting.some(({ kept }) => !sameUser(kept.record.user, first.kept.record.user));
    const checked = fitting.find(({ standing }) => standing === 'checked');
    // The review the event names: one that was checked, when there is one.
    const named = (checked ?? first).kept.record;
    const useUp = () => {
      for (const { kept } of fitting) this.store.use(kept);
    };
    const dispute = (): WhoFinding => {
      useUp();
      this.joinedAmbiguous++;
      return { by: { match: 'ambiguous' } };
    };
    if (ambiguous) return { rank: RANKS.admissionAmbiguous, user: undefined, take: dispute, dispute };
    return {
      rank: checked ? RANKS.admissionExact : RANKS.admissionUnchecked,
      user: named.user,
      take: () => {
        useUp();
        this.joinedExact++;
        return { by: byOf(named) };
      },
      dispute,
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
