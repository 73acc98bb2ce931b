// `resources` and `excludeResources`: resource names as kubectl takes them, or `*.group`
// (resource-patterns.ts says which types each stands for).

import { qualifiedResource } from '../event.ts';
import { type ResourceMatcher, resourcePattern } from '../resource-patterns.ts';
import { nonEmpty, type Rule, reject } from './rule.ts';

export function resourcesRule(
  texts: readonly string[] | undefined,
  matches: ResourceMatcher,
): Rule | undefined {
  const resources = nonEmpty(texts)?.map(resourcePattern);
  if (!resources) return undefined;
  return (candidate) => {
    const { event } = candidate;
    const match = resources.find((pattern) => matches(pattern, event));
    if (!match) {
      return reject(
        'resources',
        candidate,
        () => `${qualifiedResource(event)} is not one of ${resources.map((r) => r.text).join(', ')}`,
      );
    }
    candidate.accepted?.push(`resource ${match.text}`);
    return undefined;
  };
}

export function excludeResourcesRule(
  texts: readonly string[] | undefined,
  matches: ResourceMatcher,
): Rule | undefined {
  const excluded = nonEmpty(texts)?.map(resourcePattern);
  if (!excluded) return undefined;
  return (candidate) => {
    const { event } = candidate;
    const match = excluded.find((pattern) => matches(pattern, event));
    if (!match) return undefined;
    return reject(
      'excludeResources',
      candidate,
      () => `${qualifiedResource(event)} is excluded (${match.text})`,
    );
  };
}
