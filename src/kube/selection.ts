// Decides which discovered resource types to watch, and says why each of the
// others is skipped (shown by `kubediff resources`).
import type { DiscoveredResource } from './discovery.ts';
import { type ResourceName, resolveResourceName } from './resource-names.ts';
import { qualifiedName } from './types.ts';

export type SkipReason =
  | 'no list/watch verbs'
  | 'stale (aggregated API unavailable)'
  | 'excluded by default (high churn)'
  | 'excluded by --exclude-resource'
  | 'not selected by --resource'
  | 'cluster-scoped (skipped with --namespace)'
  | 'same objects as events'
  | 'forbidden';

interface SkippedResource {
  type: DiscoveredResource;
  reason: SkipReason;
}

export interface SelectionOptions {
  /** -r/--resource: when non-empty, only these are watched. */
  include: readonly ResourceName[];
  /** --exclude-resource */
  exclude: readonly ResourceName[];
  /** -n/--namespace was given: cluster-scoped types are only watched when named with -r. */
  namespaceScoped: boolean;
}

export interface Selection {
  watched: DiscoveredResource[];
  skipped: SkippedResource[];
  /** -r names that match nothing the server offers (yet). */
  unresolved: ResourceName[];
}

/**
 * High-churn types that would drown everything else: watched only when named.
 * Keys are qualified names.
 */
const EXCLUDED_BY_DEFAULT: ReadonlySet<string> = new Set([
  'events',
  'events.events.k8s.io',
  'leases.coordination.k8s.io',
  'endpoints',
  'endpointslices.discovery.k8s.io',
]);

export function selectResources(
  discovered: readonly DiscoveredResource[],
  options: SelectionOptions,
): Selection {
  const watchable = discovered.filter((type) => type.verbs.includes('list') && type.verbs.includes('watch'));
  const named = new Set<DiscoveredResource>();
  const unresolved: ResourceName[] = [];
  for (const name of options.include) {
    const matches = resolveResourceName(name, watchable);
    if (matches.length === 0) unresolved.push(name);
    for (const match of matches) named.add(match);
  }
  const excluded = new Set<DiscoveredResource>();
  for (const name of options.exclude) {
    for (const match of resolveResourceName(name, discovered)) excluded.add(match);
  }

  const watched: DiscoveredResource[] = [];
  const skipped: SkippedResource[] = [];
  for (const type of discovered) {
    const reason = skipReason(type, named, excluded, options);
    if (reason) skipped.push({ type, reason });
    else watched.push(type);
  }

  // Core events and events.k8s.io events are the same objects: watch them once.
  const coreEvents = watched.find((type) => type.group === '' && type.resource === 'events');
  const newEvents = watched.findIndex((type) => type.group === 'events.k8s.io' && type.resource === 'events');
  if (coreEvents && newEvents >= 0) {
    const [duplicate] = watched.splice(newEvents, 1);
    if (duplicate) skipped.push({ type: duplicate, reason: 'same objects as events' });
  }
  return { watched, skipped, unresolved };
}

function skipReason(
  type: DiscoveredResource,
  named: ReadonlySet<DiscoveredResource>,
  excluded: ReadonlySet<DiscoveredResource>,
  options: SelectionOptions,
): SkipReason | undefined {
  if (!type.verbs.includes('list') || !type.verbs.includes('watch')) return 'no list/watch verbs';
  if (excluded.has(type)) return 'excluded by --exclude-resource';
  if (type.stale) return 'stale (aggregated API unavailable)';
  if (options.include.length > 0) return named.has(type) ? undefined : 'not selected by --resource';
  if (EXCLUDED_BY_DEFAULT.has(qualifiedName(type))) return 'excluded by default (high churn)';
  if (options.namespaceScoped && !type.namespaced) return 'cluster-scoped (skipped with --namespace)';
  return undefined;
}
