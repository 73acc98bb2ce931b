// Which resource types a resource name of a rule stands for: a sink filter's `resources`, a path rule's
// `resources`, a `redact:` rule's. Discovery, when there is one, answers for short names, kinds and the
// kubectl order of groups; without it (validate, tests) the names of the built-in types still resolve.

import { parseResourceName, type ResourceName, resourceNameProblem } from '../kube/resource-names.ts';
import { builtinResourceFor } from '../kube/short-names.ts';
import { groupOf, qualifiedName } from '../kube/types.ts';
import type { ChangeEvent, KubediffEvent } from './event.ts';

/**
 * The qualified names (`deployments.apps`, `pods`) a resource name stands for on this cluster, from
 * discovery; undefined when it does not know the name (the filter then falls back on the names it knows).
 */
export type ResourceResolver = (text: string) => readonly string[] | undefined;

/** Which resource type something is about, as an event's `object` names it. */
export type ResourceTarget = Pick<ChangeEvent['object'], 'apiVersion' | 'resource' | 'kind'>;

/** A resource name or `*.group` wildcard of a rule; throws one sentence for one that cannot be a name. */
export function resourcePattern(text: string): ResourceName {
  const problem = resourceNameProblem(text);
  if (problem) throw new Error(problem);
  return parseResourceName(text);
}

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

/** Does `pattern` stand for the type of `event`'s object? */
export type ResourceMatcher = (pattern: ResourceName, event: KubediffEvent) => boolean;

/**
 * resourcePatternMatches with its answers kept per pattern and type: discovery's answer for a type does
 * not change, and a filter asks for every event.
 */
export function cachedResourceMatcher(resolve: ResourceResolver | undefined): ResourceMatcher {
  const cache = new Map<ResourceName, Map<string, boolean>>();
  return (pattern, event) => {
    let byType = cache.get(pattern);
    if (!byType) {
      byType = new Map();
      cache.set(pattern, byType);
    }
    const key = `${event.object.apiVersion}/${event.object.resource}/${event.object.kind}`;
    let result = byType.get(key);
    if (result === undefined) {
      result = resourcePatternMatches(pattern, event.object, resolve);
      byType.set(key, result);
    }
    return result;
  };
}

function versionOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? apiVersion : apiVersion.slice(slash + 1);
}
