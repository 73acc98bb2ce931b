// The config file's filters as FilterSpecs (src/events/filter.ts): a sink's `filter:`, and the path
// rules of `ignore:` and `only:` (a path alone, or a path with the resources and managers it applies to).
import type { FilterEventType } from '../events/event.ts';
import type { FilterSpec } from '../events/filter.ts';
import type { PathRule } from '../events/filter-rules/paths.ts';
import type { FilterInput, PathRuleInput } from './schema.ts';

/** The `filter:` of a sink, as a SinkSpec field. */
export function filterOf(input: FilterInput | undefined): { filter?: FilterSpec } {
  if (!input) return {};
  const filter: FilterSpec = {
    ...(input.namespaces ? { namespaces: input.namespaces } : {}),
    ...(input.excludeNamespaces ? { excludeNamespaces: input.excludeNamespaces } : {}),
    ...(input.resources ? { resources: input.resources } : {}),
    ...(input.excludeResources ? { excludeResources: input.excludeResources } : {}),
    ...(input.events ? { types: input.events.map((type) => type.toUpperCase() as FilterEventType) } : {}),
    ...(input.ignore ? { ignore: input.ignore.map(pathRuleOf) } : {}),
    ...(input.only ? { only: input.only.map(pathRuleOf) } : {}),
    ...(input.managers ? { managers: input.managers } : {}),
    ...(input.excludeManagers ? { excludeManagers: input.excludeManagers } : {}),
    ...(input.users ? { users: input.users } : {}),
    ...(input.excludeUsers ? { excludeUsers: input.excludeUsers } : {}),
  };
  return Object.keys(filter).length > 0 ? { filter } : {};
}

export function pathRuleOf(rule: PathRuleInput): PathRule {
  return typeof rule === 'string'
    ? rule
    : {
        path: rule.path,
        ...(rule.resources ? { resources: rule.resources } : {}),
        ...(rule.managers ? { managers: rule.managers } : {}),
      };
}
