// Which events one sink receives (and, with the same code, which events the watch passes on at all: the
// config file's global rules). A filter is a conjunction of rules, each compiled from one field of the
// spec into a predicate (src/events/filter-rules/, one file per kind of rule) and asked in a fixed order:
// the first that refuses an event decides. `evaluate` returns a verdict with the reason, so that
// `--explain` can say why an event went where it went.

import { errorMessage } from '../util/errors.ts';
import type { FailureReporter } from '../util/event-failures.ts';
import {
  type ChangeEvent,
  type FilterEventType,
  identityOfEvent,
  isChange,
  type KubediffEvent,
} from './event.ts';
import { typesRule } from './filter-rules/event-types.ts';
import { excludeManagersRules, managersRule } from './filter-rules/managers.ts';
import { excludeNamespacesRule, namespacesRule } from './filter-rules/namespaces.ts';
import { ignoreRule, onlyRule, type PathRule } from './filter-rules/paths.ts';
import { excludeResourcesRule, resourcesRule } from './filter-rules/resources.ts';
import type { Candidate, Rejection, Rule } from './filter-rules/rule.ts';
import { excludeUsersRule, usersRule } from './filter-rules/users.ts';
import { cachedResourceMatcher, type ResourceResolver } from './resource-patterns.ts';

/** A filter as a config file or the command line states it. Every field is optional; an absent field accepts all. */
export interface FilterSpec {
  /**
   * Only objects in these namespaces; `*` and `?` are globs (`team-*`). Cluster-scoped objects do not match,
   * except a Namespace whose own name matches.
   */
  namespaces?: readonly string[];
  /** Not objects in these namespaces (globs allowed). Cluster-scoped objects are not affected. */
  excludeNamespaces?: readonly string[];
  /**
   * Only these resource types: a plural (`configmaps`), a kind (`ConfigMap`, `configmap`), a short name
   * (`deploy`, `cm`), either one qualified by group (`deployments.apps`, `widgets.example.com`) or by
   * version and group (`deployments.v1.apps`); `*.example.com` is every type of that group and its
   * subgroups. `core` stands for the core group (`pods.core`).
   */
  resources?: readonly string[];
  /** Not these resource types (same names as `resources`). */
  excludeResources?: readonly string[];
  /** Only these event types (OUTCOME included: a sink that lists types gets OUTCOMEs when it lists it). */
  types?: readonly FilterEventType[];
  /**
   * Only events made by one of these field managers (globs: `kubectl*`): an UPDATED with a change (or a
   * `by`) naming one, an ADDED whose creator is one. An event that names no manager (a DELETED, an object
   * without managedFields) does not match. The event keeps all its changes.
   */
  managers?: readonly string[];
  /**
   * Changes made by these field managers (globs) are removed from UPDATED events, and an UPDATED left with
   * no change is dropped; an ADDED whose creator is one is dropped. Events naming no manager pass.
   */
  excludeManagers?: readonly string[];
  /**
   * Only UPDATED events with a change at, below or above one of these JSON Pointers; `*` matches any one
   * segment (`/spec/template/spec/containers/*\/image`). ADDED and DELETED events are not affected. A rule
   * limited to some resources only concerns their events. The event keeps all its changes.
   */
  only?: readonly PathRule[];
  /**
   * Changes at or under these paths are removed from UPDATED events; an UPDATED left with no change is
   * dropped.
   */
  ignore?: readonly PathRule[];
  /**
   * Only changes made by these users (globs: `system:serviceaccount:argocd:*`), as the audit webhook names
   * them in `by.user` or `by.impersonatedUser`. A change without a known user does not match.
   */
  users?: readonly string[];
  /** Not changes made by these users (globs); a change without a known user is not affected. */
  excludeUsers?: readonly string[];
}

/** `reason` says why, for --explain: empty when the filter was not asked to explain (evaluate). */
export type FilterVerdict = Delivery | Rejection;

export interface Delivery {
  deliver: true;
  reason: string;
  /** The event to deliver when rules about changes (`ignore`, `excludeManagers`) removed some of them. */
  event?: ChangeEvent;
}

export interface FilterOptions {
  resolve?: ResourceResolver;
  /** Who owns the filter, for reasons: 'the sink' (default) or 'the config file'. */
  owner?: string;
}

export interface EventFilter {
  /** The spec this filter was compiled from (for messages and --explain). */
  readonly spec: FilterSpec;
  /** True when the filter accepts every event. */
  readonly acceptsAll: boolean;
  /**
   * The verdict on `event`; its reason only when `explain` (the default) asks for it: the delivery path
   * asks for none, so an event costs no reason text per sink unless --explain prints it.
   */
  evaluate(event: KubediffEvent, explain?: boolean): FilterVerdict;
}

/** Compiles a spec; throws one readable sentence for a malformed entry (the caller adds where it came from). */
export function compileFilter(spec: FilterSpec = {}, options: FilterOptions = {}): EventFilter {
  const matches = cachedResourceMatcher(options.resolve);
  // Compiled in this order, so that of two malformed entries the same one is reported.
  const namespaces = namespacesRule(spec.namespaces);
  const excludeNamespaces = excludeNamespacesRule(spec.excludeNamespaces);
  const resources = resourcesRule(spec.resources, matches);
  const excludeResources = excludeResourcesRule(spec.excludeResources, matches);
  const types = typesRule(spec.types);
  const managers = managersRule(spec.managers);
  const excludeManagers = excludeManagersRules(spec.excludeManagers);
  const only = onlyRule(spec.only, matches);
  const ignore = ignoreRule(spec.ignore, matches);
  const users = usersRule(spec.users);
  const excludeUsers = excludeUsersRule(spec.excludeUsers);
  // Asked in this order: the first refusal is the reason. The rules about changes concern UPDATED only.
  const eventRules = present([
    types,
    namespaces,
    excludeNamespaces,
    resources,
    excludeResources,
    managers,
    excludeManagers?.creator,
    users,
    excludeUsers,
  ]);
  const changeRules = present([excludeManagers?.changes, ignore, only]);
  const acceptsAll = eventRules.length === 0 && changeRules.length === 0;
  const noFilter: FilterVerdict = { deliver: true, reason: `${options.owner ?? 'the sink'} has no filter` };
  const unexplained: FilterVerdict = { deliver: true, reason: '' };

  return {
    spec,
    acceptsAll,
    evaluate(event: KubediffEvent, explain = true): FilterVerdict {
      if (acceptsAll) return explain ? noFilter : unexplained;
      const changes = isChange(event) ? (event.changes ?? []) : [];
      const candidate: Candidate = { event, changes, accepted: explain ? [] : undefined };
      const rejection =
        firstRejection(eventRules, candidate) ??
        (event.type === 'UPDATED' ? firstRejection(changeRules, candidate) : undefined);
      if (rejection) return rejection;
      const reason = candidate.accepted ? candidate.accepted.join('; ') || 'every rule accepts it' : '';
      // Rules about changes narrow an UPDATED's list; the event itself is never changed.
      return candidate.changes === changes || !isChange(event)
        ? { deliver: true, reason }
        : { deliver: true, reason, event: { ...event, changes: candidate.changes } };
    },
  };
}

function present(rules: readonly (Rule | undefined)[]): Rule[] {
  return rules.filter((rule) => rule !== undefined);
}

function firstRejection(rules: readonly Rule[], candidate: Candidate): Rejection | undefined {
  for (const rule of rules) {
    const rejection = rule(candidate);
    if (rejection) return rejection;
  }
  return undefined;
}

/**
 * The filter's verdict, with its reason only when `explain`; a filter that throws lets the event through (a
 * filter bug must not lose changes), says why for --explain, and is reported. Without `failures` the
 * exception propagates.
 */
export function evaluateContained(
  filter: EventFilter,
  event: KubediffEvent,
  failures: FailureReporter<'filter'> | undefined,
  owner: string,
  explain: boolean,
): FilterVerdict {
  const { verdict, error } = evaluateSafely(filter, event, explain);
  if (error !== undefined) {
    if (!failures) throw error;
    failures.report(
      'filter',
      `the filter of ${owner}`,
      identityOfEvent(event),
      error,
      'the event is delivered as if the filter had let it through',
    );
  }
  return verdict;
}

/** The verdict, or, when the filter throws, a verdict that lets the event through and the error. */
export function evaluateSafely(
  filter: EventFilter,
  event: KubediffEvent,
  explain: boolean,
): { verdict: FilterVerdict; error?: unknown } {
  try {
    return { verdict: filter.evaluate(event, explain) };
  } catch (error) {
    return {
      verdict: { deliver: true, reason: `the filter failed (${errorMessage(error)}); delivered anyway` },
      error,
    };
  }
}
