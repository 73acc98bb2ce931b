// What the join (src/events/who-join.ts) asks of a source of "who": the audit webhook's records
// (audit-match.ts) and the admission webhook's (admission-match.ts). A source keeps its records
// (record-store.ts) and decides which change each one is of; the join holds the changes back while they
// wait, keeps their order, and picks among the sources' candidates by rank.

import { groupOf, type JsonObject } from '../kube/types.ts';
import type { ByInfo, ChangeEvent } from './event.ts';

/** A change as the sources look at it. */
export interface JoinSubject {
  readonly event: ChangeEvent;
  /** When kubediff saw it (the event's time), in ms since the epoch. */
  readonly time: number;
  /** The resourceVersion the watch saw before this change (UPDATED, DELETED), when known. */
  readonly previousResourceVersion: string | undefined;
  /** The object now, normalized as the store keeps it; undefined when not known. */
  readonly object: JsonObject | undefined;
  /** objectDigest(object), worked out at most once per change (by the first source that needs it). */
  digest?: string | undefined;
}

/** Who a record names, and how it was joined. */
export interface WhoFinding {
  by: ByInfo;
}

/**
 * A record (or records) a source would join to a change. Nothing is used up until `take` is called:
 * the join compares the sources' candidates first. Lower ranks win (docs/who.md, "Both sources").
 */
export interface Candidate {
  readonly rank: number;
  /** Uses the record(s) up and says who they name. */
  take(): WhoFinding;
}

/** The ranks of the candidates of every source, in one place: an exact audit record wins. */
export const RANKS = { auditExact: 0, admissionExact: 1, auditNearest: 2, admissionAmbiguous: 3 } as const;

/** The changes waiting for their record, as a source looks them up. */
export interface WaitingIndex<W extends { subject: JoinSubject }> {
  byUid(uid: string): Iterable<W>;
  byName(key: string): Iterable<W>;
}

/** A source of "who": records in, candidates out. */
export interface WhoSource<R> {
  /** 'audit' or 'admission' (log lines). */
  readonly name: string;
  /**
   * A record that came: the waiting change it is of, with the candidate to take, or undefined (then the
   * source keeps it, bounded, for a change still to come).
   */
  place<W extends { subject: JoinSubject }>(
    record: R,
    waiting: WaitingIndex<W>,
    now: number,
  ): { entry: W; candidate: Candidate } | undefined;
  /** The best record kept for a change that just came; undefined when none fits. */
  find(subject: JoinSubject): Candidate | undefined;
  /** The change went on (joined or not): records it made useless may go. */
  passed?(subject: JoinSubject): void;
  /** Drops records kept longer than the source keeps them. */
  expire(now: number): void;
}

/** The key of an object by what records name: group, resource, namespace, name. */
export function nameKey(
  group: string,
  resource: string,
  namespace: string | undefined,
  name: string,
): string {
  return `${group}\u0000${resource}\u0000${namespace ?? ''}\u0000${name}`;
}

export function eventNameKey(event: ChangeEvent): string {
  const { apiVersion, resource, namespace, name } = event.object;
  return nameKey(groupOf(apiVersion), resource, namespace, name);
}
