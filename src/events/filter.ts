// Which events one sink receives (and, with the same code, which events the
// watch passes on at all: the config file's global rules). A filter is a
// conjunction of rules, each optional: event types, namespaces (include and
// exclude, with globs), resources (include and exclude: kubectl names, short
// names, `*.group` wildcards), field managers (include and exclude, with globs)
// and path rules (`ignore` drops changes, `only` keeps an UPDATED only when one
// of its paths changed), path rules optionally limited to some resources and
// to changes made by some managers. An event is delivered when every rule accepts
// it. `evaluate` returns a verdict with the reason, so that `--explain` can
// say why an event went where it went.

import { PathMatcher } from '../diff/ignore.ts';
import { parsePointer } from '../diff/pointer.ts';
import type { Change } from '../diff/types.ts';
import { parseResourceName, type ResourceName, resourceNameProblem } from '../kube/resource-names.ts';
import { builtinResourceFor } from '../kube/short-names.ts';
import { groupOf, qualifiedName } from '../kube/types.ts';
import { errorMessage } from '../util/errors.ts';
import type { EventFailures } from '../util/event-failures.ts';
import { globMatcher, namespaceProblem } from '../util/glob.ts';
import { type ChangeEvent, type EventType, identityOfEvent, qualifiedResource } from './event.ts';

/**
 * A path rule: a JSON Pointer (`*` matches one segment), optionally for some resource types only, and
 * for changes made by some field managers only (globs).
 */
export type PathRule = string | { path: string; resources?: readonly string[]; managers?: readonly string[] };

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
  /** Only these event types. */
  types?: readonly EventType[];
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

/** Which rule decided. */
type FilterRule =
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

/** `reason` says why, for --explain: empty when the filter was not asked to explain (evaluate). */
export type FilterVerdict =
  /** `event`: the event to deliver when `ignore` removed some of its changes. */
  | { deliver: true; reason: string; event?: ChangeEvent }
  | { deliver: false; rule: FilterRule; reason: string };

/**
 * The qualified names (`deployments.apps`, `pods`) a resource name stands for on this cluster, from
 * discovery; undefined when it does not know the name (the filter then falls back on the names it knows).
 */
export type ResourceResolver = (text: string) => readonly string[] | undefined;

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
  evaluate(event: ChangeEvent, explain?: boolean): FilterVerdict;
}

interface CompiledPathRule {
  text: string;
  segments: string[];
  matcher: PathMatcher;
  /** Absent: every resource. */
  resources: ResourceName[] | undefined;
  /** Absent: changes by any manager (or none known). */
  managers: NamePattern[] | undefined;
}

/** Compiles a spec; throws one readable sentence for a malformed entry (the caller adds where it came from). */
export function compileFilter(spec: FilterSpec = {}, options: FilterOptions = {}): EventFilter {
  const namespaces = nonEmpty(spec.namespaces)?.map(compileNamespace);
  const excludeNamespaces = nonEmpty(spec.excludeNamespaces)?.map(compileNamespace);
  const resources = nonEmpty(spec.resources)?.map(resourcePattern);
  const excludeResources = nonEmpty(spec.excludeResources)?.map(resourcePattern);
  const types = spec.types && spec.types.length > 0 ? new Set(spec.types) : undefined;
  const managers = nonEmpty(spec.managers)?.map(compileManager);
  const excludeManagers = nonEmpty(spec.excludeManagers)?.map(compileManager);
  const only = nonEmpty(spec.only)?.map(compilePathRule);
  const ignore = nonEmpty(spec.ignore)?.map(compilePathRule);
  const users = nonEmpty(spec.users)?.map(compileUser);
  const excludeUsers = nonEmpty(spec.excludeUsers)?.map(compileUser);
  const acceptsAll =
    !namespaces &&
    !excludeNamespaces &&
    !resources &&
    !excludeResources &&
    !types &&
    !managers &&
    !excludeManagers &&
    !only &&
    !ignore &&
    !users &&
    !excludeUsers;
  const owner = options.owner ?? 'the sink';
  const noFilter: FilterVerdict = { deliver: true, reason: `${owner} has no filter` };
  const unexplained: FilterVerdict = { deliver: true, reason: '' };

  // Resource matches are cached per qualified type: discovery answers do not change for a type.
  const cache = new Map<ResourceName, Map<string, boolean>>();
  const matchesResource = (pattern: ResourceName, event: ChangeEvent): boolean => {
    let byType = cache.get(pattern);
    if (!byType) {
      byType = new Map();
      cache.set(pattern, byType);
    }
    const key = `${event.object.apiVersion}/${event.object.resource}/${event.object.kind}`;
    let result = byType.get(key);
    if (result === undefined) {
      result = resourcePatternMatches(pattern, event.object, options.resolve);
      byType.set(key, result);
    }
    return result;
  };
  const ruleApplies = (rule: CompiledPathRule, event: ChangeEvent): boolean =>
    rule.resources === undefined || rule.resources.some((pattern) => matchesResource(pattern, event));

  return {
    spec,
    acceptsAll,
    evaluate(event: ChangeEvent, explain = true): FilterVerdict {
      if (acceptsAll) return explain ? noFilter : unexplained;
      // What each rule accepted, for the reason; not collected (no text built) when nobody reads it.
      const accepted: string[] | undefined = explain ? [] : undefined;
      if (types) {
        if (!types.has(event.type)) {
          return {
            deliver: false,
            rule: 'types',
            reason: explain ? `type ${event.type} is not in ${list(types)}` : '',
          };
        }
        accepted?.push(`type ${event.type}`);
      }
      const { namespace, kind, name } = event.object;
      if (namespaces) {
        if (namespace === undefined) {
          const listed = kind === 'Namespace' ? namespaces.find((pattern) => pattern.test(name)) : undefined;
          if (!listed) {
            return {
              deliver: false,
              rule: 'namespaces',
              reason: explain
                ? `${kind} ${name} is cluster-scoped and the filter lists namespaces ${texts(namespaces)}`
                : '',
            };
          }
          accepted?.push(`namespace ${name} itself`);
        } else {
          const match = namespaces.find((pattern) => pattern.test(namespace));
          if (!match) {
            return {
              deliver: false,
              rule: 'namespaces',
              reason: explain ? `namespace ${namespace} is not in ${texts(namespaces)}` : '',
            };
          }
          accepted?.push(
            match.text === namespace ? `namespace ${namespace}` : `namespace ${namespace} (${match.text})`,
          );
        }
      }
      if (excludeNamespaces && namespace !== undefined) {
        const match = excludeNamespaces.find((pattern) => pattern.test(namespace));
        if (match) {
          return {
            deliver: false,
            rule: 'excludeNamespaces',
            reason: explain ? `namespace ${namespace} is excluded (${match.text})` : '',
          };
        }
      }
      if (resources) {
        const match = resources.find((pattern) => matchesResource(pattern, event));
        if (!match) {
          return {
            deliver: false,
            rule: 'resources',
            reason: explain
              ? `${qualifiedResource(event)} is not one of ${resources.map((r) => r.text).join(', ')}`
              : '',
          };
        }
        accepted?.push(`resource ${match.text}`);
      }
      if (excludeResources) {
        const match = excludeResources.find((pattern) => matchesResource(pattern, event));
        if (match) {
          return {
            deliver: false,
            rule: 'excludeResources',
            reason: explain ? `${qualifiedResource(event)} is excluded (${match.text})` : '',
          };
        }
      }
      if (managers) {
        const names = eventManagers(event);
        const match = firstMatch(managers, names);
        if (!match) {
          return {
            deliver: false,
            rule: 'managers',
            reason: explain
              ? names.length === 0
                ? `the ${event.type} names no field manager, and the filter lists managers ${texts(managers)}`
                : `made by ${names.join(', ')}, not by ${texts(managers)}`
              : '',
          };
        }
        accepted?.push(
          `manager ${match.name}${match.pattern.text === match.name ? '' : ` (${match.pattern.text})`}`,
        );
      }
      if (excludeManagers && event.type === 'ADDED') {
        const match = firstMatch(excludeManagers, eventManagers(event));
        if (match) {
          return {
            deliver: false,
            rule: 'excludeManagers',
            reason: explain ? `created by ${match.name}, excluded (${match.pattern.text})` : '',
          };
        }
      }
      if (users) {
        const names = usernamesOf(event);
        const match = users.find((pattern) => names.some((name) => pattern.test(name)));
        if (!match) {
          return {
            deliver: false,
            rule: 'users',
            reason: explain
              ? names.length === 0
                ? `who made it is not known and the filter lists users ${texts(users)}`
                : `user ${names.join(' via ')} is not in ${texts(users)}`
              : '',
          };
        }
        accepted?.push(`user ${match.text}`);
      }
      if (excludeUsers) {
        const names = usernamesOf(event);
        const match = excludeUsers.find((pattern) => names.some((name) => pattern.test(name)));
        if (match) {
          return {
            deliver: false,
            rule: 'excludeUsers',
            reason: explain ? `user ${names.join(' via ')} is excluded (${match.text})` : '',
          };
        }
      }
      if (event.type !== 'UPDATED') return acceptedVerdict(accepted);

      let changes: readonly Change[] = event.changes ?? [];
      let trimmed: ChangeEvent | undefined;
      if (excludeManagers) {
        const kept = changes.filter((change) => {
          const manager = changeManager(change, event);
          return manager === undefined || !excludeManagers.some((pattern) => pattern.test(manager));
        });
        if (kept.length === 0 && changes.length > 0) {
          return {
            deliver: false,
            rule: 'excludeManagers',
            reason: explain
              ? `every change is made by an excluded manager (${[...new Set(changes.map((change) => changeManager(change, event)))].join(', ')}; excluded ${texts(excludeManagers)})`
              : '',
          };
        }
        if (kept.length < changes.length) {
          accepted?.push(`${count(changes.length - kept.length, 'change')} by excluded managers dropped`);
          changes = kept;
          trimmed = { ...event, changes: kept };
        }
      }
      if (ignore) {
        const rules = ignore.filter((rule) => ruleApplies(rule, event));
        if (rules.length > 0) {
          const kept = changes.filter((change) => {
            const segments = safeSegments(change.path);
            return !rules.some(
              (rule) => rule.matcher.matches(segments) && managerOfRule(rule, change, event),
            );
          });
          if (kept.length === 0 && changes.length > 0) {
            return {
              deliver: false,
              rule: 'ignore',
              reason: explain ? `every change is ignored (${rules.map((rule) => rule.text).join(', ')})` : '',
            };
          }
          if (kept.length < changes.length) {
            accepted?.push(`${count(changes.length - kept.length, 'change')} ignored`);
            changes = kept;
            trimmed = { ...event, changes: kept };
          }
        }
      }
      if (only) {
        const rules = only.filter((rule) => ruleApplies(rule, event));
        if (rules.length > 0) {
          let matched: { change: Change; rule: CompiledPathRule } | undefined;
          for (const change of changes) {
            const changeSegments = safeSegments(change.path);
            const rule = rules.find(
              (rule) => overlaps(rule.segments, changeSegments) && managerOfRule(rule, change, event),
            );
            if (rule) {
              matched = { change, rule };
              break;
            }
          }
          if (matched === undefined) {
            return {
              deliver: false,
              rule: 'only',
              reason: explain ? `no change is at or under ${rules.map((rule) => rule.text).join(', ')}` : '',
            };
          }
          accepted?.push(`change at ${matched.change.path || '(whole object)'} matches ${matched.rule.text}`);
        }
      }
      const verdict = acceptedVerdict(accepted);
      return trimmed ? { ...verdict, event: trimmed } : verdict;
    },
  };
}

/** The verdict that delivers, with what each rule accepted when that was collected. */
function acceptedVerdict(accepted: readonly string[] | undefined): { deliver: true; reason: string } {
  return { deliver: true, reason: accepted ? accepted.join('; ') || 'every rule accepts it' : '' };
}

/** A name or glob of a rule (a namespace, a field manager, a user), as written and compiled. */
interface NamePattern {
  text: string;
  test(name: string): boolean;
}

/** The API server's limit on a field manager's name. */
const MANAGER_NAME_MAX = 128;

/** Why `text` cannot be a field manager name or glob, in a phrase; undefined when it can. */
export function managerNameProblem(text: string): string | undefined {
  const trimmed = text.trim();
  if (trimmed !== '' && trimmed.length <= MANAGER_NAME_MAX) return undefined;
  return `not a field manager name: use its name as managedFields shows it (kubectl-set, helm, horizontal-pod-autoscaler), at most ${MANAGER_NAME_MAX} characters, or a glob such as kubectl*`;
}

function compileManager(text: string): NamePattern {
  const problem = typeof text === 'string' ? managerNameProblem(text) : 'not a string';
  if (problem) throw new Error(`${JSON.stringify(text)} is ${problem}`);
  const trimmed = text.trim();
  return { text: trimmed, test: globMatcher(trimmed) };
}

/** The manager a change is attributed to: its own, else the event's when it names only one. */
function changeManager(change: Change, event: ChangeEvent): string | undefined {
  if (change.manager !== undefined) return change.manager;
  const managers = event.by?.managers;
  if (!managers || managers.length === 0) return undefined;
  const first = managers[0]!.manager;
  return managers.every((entry) => entry.manager === first) ? first : undefined;
}

/** Every manager an event names: in `by`, then on its changes. */
function eventManagers(event: ChangeEvent): string[] {
  const names = new Set<string>();
  for (const entry of event.by?.managers ?? []) names.add(entry.manager);
  for (const change of event.changes ?? []) if (change.manager !== undefined) names.add(change.manager);
  return [...names];
}

function firstMatch(
  patterns: readonly NamePattern[],
  names: readonly string[],
): { pattern: NamePattern; name: string } | undefined {
  for (const name of names) {
    const pattern = patterns.find((candidate) => candidate.test(name));
    if (pattern) return { pattern, name };
  }
  return undefined;
}

/** A rule limited to managers concerns a change only when its manager is known and one of them. */
function managerOfRule(rule: CompiledPathRule, change: Change, event: ChangeEvent): boolean {
  if (!rule.managers) return true;
  const manager = changeManager(change, event);
  return manager !== undefined && rule.managers.some((pattern) => pattern.test(manager));
}

function nonEmpty<T>(values: readonly T[] | undefined): readonly T[] | undefined {
  return values && values.length > 0 ? values : undefined;
}

function count(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

function list(values: ReadonlySet<string>): string {
  return `[${[...values].join(', ')}]`;
}

function texts(patterns: readonly { text: string }[]): string {
  return `[${patterns.map((pattern) => pattern.text).join(', ')}]`;
}

function compileNamespace(text: string): NamePattern {
  const trimmed = text.trim();
  const problem = namespaceProblem(trimmed);
  if (problem) throw new Error(`${JSON.stringify(text)} is ${problem}`);
  return { text: trimmed, test: globMatcher(trimmed) };
}

/** A username or a glob over usernames (`*` any run, `?` one character). */
function compileUser(text: string): NamePattern {
  const trimmed = text.trim();
  if (trimmed === '')
    throw new Error('"" is not a username: name a user such as alice@example.com or a glob');
  return { text: trimmed, test: globMatcher(trimmed) };
}

/** Who made the change: the impersonated user first (the identity it was made as), then the one who asked. */
function usernamesOf(event: ChangeEvent): string[] {
  const names: string[] = [];
  if (event.by?.impersonatedUser) names.push(event.by.impersonatedUser.username);
  if (event.by?.user) names.push(event.by.user.username);
  return names;
}

function compilePathRule(rule: PathRule): CompiledPathRule {
  const path = typeof rule === 'string' ? rule : rule.path;
  const segments = parsePathPattern(path);
  const resources =
    typeof rule === 'string' || !rule.resources || rule.resources.length === 0
      ? undefined
      : rule.resources.map(resourcePattern);
  const managers =
    typeof rule === 'string' || !rule.managers || rule.managers.length === 0
      ? undefined
      : rule.managers.map(compileManager);
  let text = resources ? `${path} for ${resources.map((r) => r.text).join(', ')}` : path;
  if (managers) text += ` by ${managers.map((m) => m.text).join(', ')}`;
  return { text, segments, matcher: new PathMatcher([path]), resources, managers };
}

function versionOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? apiVersion : apiVersion.slice(slash + 1);
}

/** A resource name or `*.group` wildcard of a rule; throws one sentence for one that cannot be a name. */
function resourcePattern(text: string): ResourceName {
  const problem = resourceNameProblem(text);
  if (problem) throw new Error(problem);
  return parseResourceName(text);
}

/** Which resource type something is about, as an event's `object` names it. */
export type ResourceTarget = Pick<ChangeEvent['object'], 'apiVersion' | 'resource' | 'kind'>;

/** Does a parsed resource name (resourcePattern) stand for this resource type? */
export function resourcePatternMatches(
  pattern: ResourceName,
  target: ResourceTarget,
  resolve: ResourceResolver | undefined,
): boolean {
  const { resource, kind, apiVersion } = target;
  const group = groupOf(apiVersion);
  if (pattern.name === '*') {
    const wanted = pattern.group ?? '';
    return group === wanted || group.endsWith(`.${wanted}`);
  }
  if (pattern.version !== undefined && pattern.version !== versionOf(apiVersion)) return false;
  const qualified = qualifiedName({ group, resource });
  // Discovery knows short names, singular names and the kubectl order of groups.
  const resolved = resolve?.(pattern.text);
  if (resolved && resolved.length > 0) return resolved.includes(qualified);
  if (pattern.name === resource || pattern.name === kind.toLowerCase()) {
    if (pattern.group === undefined) return true;
    const wanted = pattern.group === 'core' ? '' : pattern.group;
    return group === wanted || group.startsWith(`${wanted}.`);
  }
  // Without discovery (validate, tests): the short names of the built-in types.
  const builtin = builtinResourceFor(pattern.name);
  return pattern.group === undefined && builtin === qualified;
}

const ANY_SEGMENT = '*';

function parsePathPattern(path: string): string[] {
  const segments = parsePointer(path);
  if (segments.length === 0) {
    throw new Error('"" is the whole object and matches every change; name a path such as /spec/replicas');
  }
  return segments;
}

function safeSegments(pointer: string): string[] {
  try {
    return parsePointer(pointer);
  } catch {
    return [pointer];
  }
}

/**
 * A change at `change` concerns the pattern when one is a prefix of the other: `/spec/replicas` matches a
 * change at `/spec/replicas` and at `/spec` (the whole spec replaced), and `/spec` matches `/spec/replicas`.
 */
function overlaps(pattern: readonly string[], change: readonly string[]): boolean {
  const common = Math.min(pattern.length, change.length);
  for (let i = 0; i < common; i++) {
    const segment = pattern[i];
    if (segment !== ANY_SEGMENT && segment !== change[i]) return false;
  }
  return true;
}

/**
 * The filter's verdict, with its reason only when `explain`; a filter that throws lets the event through (a
 * filter bug must not lose changes), says why for --explain, and is reported. Without `failures` the
 * exception propagates.
 */
export function evaluateContained(
  filter: EventFilter,
  event: ChangeEvent,
  failures: EventFailures | undefined,
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
  event: ChangeEvent,
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
