// What the join (src/who/who-join.ts) asks of a source of "who": the audit webhook's records
// (audit-match.ts) and the admission webhook's (admission-match.ts). A source keeps its records
// (record-store.ts) and decides which change each one is of; the join holds the changes back while they
// wait, keeps their order, and picks among the sources' candidates (choose(): by rank, and never a user
// another source's candidate contradicts, unless it is an exact audit record).

import type { ByInfo, ChangeEvent, UserInfo } from '../events/event.ts';
import { groupOf, type JsonObject } from '../kube/types.ts';

/** A change as the sources look at it. */
export interface JoinSubject {
  readonly event: ChangeEvent;
  /** When kubediff saw it (the event's time), in ms since the epoch. */
  readonly time: number;
  /** The resourceVersion the watch saw before this change (UPDATED, DELETED), when known. */
  readonly previousResourceVersion: string | undefined;
  /** The object now, normalized as the store keeps it; undefined when not known (a DELETED). */
  readonly object: JsonObject | undefined;
  /**
   * The object as the write found it, normalized as the store keeps it: for an UPDATED the state the watch
   * saw before it, for a DELETED the last state (which the DELETED carries); undefined otherwise. A
   * reference to what the store held, not a copy.
   */
  readonly previousObject: JsonObject | undefined;
  /**
   * objectDigest(object) and objectDigest(previousObject), each worked out at most once per change (by the
   * first source that needs it); null when it cannot be (an object nested too deep).
   */
  digest?: string | null | undefined;
  previousDigest?: string | null | undefined;
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
  /**
   * Whom it names: the user the write acted as (for an audit record, the impersonated user when there is
   * one, as an admission review shows it); undefined when it names nobody (ambiguous reviews).
   */
  readonly user: UserInfo | undefined;
  /** Uses the record(s) up and says who they name. */
  take(): WhoFinding;
  /**
   * Another source's candidate names someone else: uses up what `take` would and names nobody
   * (`ambiguous`).
   */
  dispute(): WhoFinding;
}

/**
 * The ranks of the candidates of every source, in one place (docs/who.md, "Both sources"). An exact audit
 * record (the API server's own record of the write that produced this very resourceVersion, from an
 * authenticated sender) wins outright. The others rank only among candidates that agree: admission
 * reviews checked against the object, then a nearest audit record (by name and time), then reviews that
 * could not be checked, then reviews that name several users.
 */
export const RANKS = {
  auditExact: 0,
  admissionExact: 1,
  auditNearest: 2,
  admissionUnchecked: 3,
  admissionAmbiguous: 4,
} as const;

/** The same user: username, uid and groups (in any order). */
export function sameUser(a: UserInfo, b: UserInfo): boolean {
  if (a.username !== b.username || a.uid !== b.uid) return false;
  const groups = (user: UserInfo) => [...(user.groups ?? [])].sort().join('\u0000');
  return groups(a) === groups(b);
}

/**
 * The candidate a change takes among those of every source: the lowest rank; but when a candidate names
 * someone else than the best one, nobody is named (`ambiguous`), unless the best is an exact audit record.
 * So a record that cannot be checked, or a forged one, never names a user against another record of the
 * same write: at most it hides the user.
 */
export function choose(candidates: readonly (Candidate | undefined)[]): Candidate | undefined {
  const present = candidates.filter((candidate): candidate is Candidate => candidate !== undefined);
  present.sort((a, b) => a.rank - b.rank);
  const best = present[0];
  if (!best || best.rank === RANKS.auditExact || best.user === undefined) return best;
  const named = best.user;
  const naming = present.filter((candidate) => candidate.user !== undefined);
  if (naming.every((candidate) => sameUser(candidate.user as UserInfo, named))) return best;
  const dispute = (): WhoFinding => {
    for (const candidate of naming) candidate.dispute();
    return { by: { match: 'ambiguous' } };
  };
  return { rank: RANKS.admissionAmbiguous, user: undefined, take: dispute, dispute };
}

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
