// What every rule of a filter is: a predicate compiled once from one field of the spec, asked about
// each event in turn. The first rule that refuses an event decides, and says why; a rule that accepts
// notes what it accepted (for --explain), and a rule about changes may narrow an UPDATED's changes.

import type { Change } from '../../diff/types.ts';
import type { KubediffEvent } from '../event.ts';

/** The rule that refused an event: the name of the spec's field it was compiled from. */
export type FilterRule =
  | 'namespaces'
  | 'excludeNamespaces'
  | 'resources'
  | 'excludeResources'
  | 'types'
  | 'managers'
  | 'excludeManagers'
  | 'only'
  | 'ignore'
  | 'users'
  | 'excludeUsers';

/** An event refused: by which rule, and why (empty when the caller did not ask for reasons). */
export interface Rejection {
  deliver: false;
  rule: FilterRule;
  reason: string;
}

/** An event on its way through a filter's rules. */
export interface Candidate {
  readonly event: KubediffEvent;
  /**
   * An UPDATED's changes that the rules so far kept: `ignore` and `excludeManagers` replace the list with
   * a shorter one, never change it in place (it starts as the event's own).
   */
  changes: Change[];
  /** What each rule accepted, for the reason; undefined when nobody reads it (so no text is built). */
  readonly accepted: string[] | undefined;
}

/**
 * A compiled rule: undefined when it lets the candidate through (having noted why in `accepted`, and
 * maybe narrowed its `changes`), else the rejection. It must not change the event itself.
 */
export type Rule = (candidate: Candidate) => Rejection | undefined;

/** A rejection by `rule`, whose reason is built only when the candidate collects reasons. */
export function reject(rule: FilterRule, candidate: Candidate, reason: () => string): Rejection {
  return { deliver: false, rule, reason: candidate.accepted ? reason() : '' };
}

/** A name or glob of a rule (a namespace, a field manager, a user), as written and compiled. */
export interface NamePattern {
  text: string;
  test(name: string): boolean;
}

/** `[a, b*]`: the patterns of a rule as written, for reasons. */
export function listed(patterns: readonly { text: string }[]): string {
  return `[${patterns.map((pattern) => pattern.text).join(', ')}]`;
}

/** A list field of the spec, undefined when absent or empty (an empty list sets no rule). */
export function nonEmpty<T>(values: readonly T[] | undefined): readonly T[] | undefined {
  return values && values.length > 0 ? values : undefined;
}
