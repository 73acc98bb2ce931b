// Which clusters `kubediff watch` watches: the current context, the contexts named by --context or the
// file's `contexts:`, every context (--all-contexts, `allContexts:`), or the file's `clusters:` list,
// each with its own kubeconfig, context and selection (docs/fleets.md).
import { parseResourceName } from '../kube/resource-names.ts';
import { UsageError } from '../util/errors.ts';
import type { ConfigInput } from './schema.ts';
import type { ClusterSelection, ClusterSettings, RawWatchFlags, WatchSettings } from './watch-settings.ts';

/**
 * Which clusters: --context (repeatable) or --all-contexts, else the file's `contexts:` (or `context:`)
 * or `allContexts:`. A context named twice, or named beside "all", is a mistake the user must see, not
 * one we guess around; so is one cluster name for several clusters.
 */
export function contextsFrom(
  flags: RawWatchFlags,
  config: ConfigInput,
): Pick<WatchSettings, 'contexts' | 'allContexts'> {
  const fromFlags = flags.context !== undefined || flags.allContexts !== undefined;
  const named = fromFlags
    ? { list: '--context', all: '--all-contexts' }
    : { list: 'contexts:', all: 'allContexts:' };
  if (!fromFlags && config.context !== undefined && config.contexts !== undefined) {
    throw new UsageError(
      'the config file has both context: and contexts:; keep contexts: (a list) and drop context:.',
    );
  }
  const given = fromFlags
    ? [flags.context ?? []].flat()
    : (config.contexts ?? (config.context !== undefined ? [config.context] : []));
  const allContexts = (fromFlags ? flags.allContexts : config.allContexts) ?? false;
  if (allContexts && given.length > 0) {
    throw new UsageError(
      `${named.list} and ${named.all} both choose the clusters to watch; pass one of them, not both.`,
    );
  }
  const twice = given.find((name, index) => given.indexOf(name) !== index);
  if (twice !== undefined) {
    throw new UsageError(`${named.list} "${twice}" is given twice; name each context once.`);
  }
  const clusterName =
    flags.clusterName !== undefined
      ? '--cluster-name'
      : config.clusterName !== undefined
        ? 'clusterName:'
        : undefined;
  if (clusterName && (allContexts || given.length > 1)) {
    throw new UsageError(
      `${clusterName} names one cluster, but several contexts are watched; each cluster is named after its context, so drop ${clusterName.replace(/:$/, '')}.`,
    );
  }
  return { contexts: given, allContexts };
}

/**
 * The file's `clusters:` (checked by the schema and semantic-checks.ts). --context and --all-contexts choose the clusters instead,
 * as flags win over the file; a selection flag (-n, -r, …) wins over every cluster's own key.
 */
export function clustersFrom(
  flags: RawWatchFlags,
  config: ConfigInput,
  excludedWith: (
    resources: readonly string[] | undefined,
    excludes: readonly string[] | undefined,
  ) => WatchSettings['excludeResources'],
): ClusterSettings[] {
  if (!config.clusters || flags.context !== undefined || flags.allContexts !== undefined) return [];
  return config.clusters.map((entry) => {
    const selection: Partial<ClusterSelection> = {};
    if (flags.namespace === undefined && entry.namespaces) selection.namespaces = entry.namespaces;
    if (flags.excludeNamespace === undefined && entry.excludeNamespaces)
      selection.excludeNamespaces = entry.excludeNamespaces;
    const resources = flags.resource === undefined ? entry.resources : undefined;
    const excludes = flags.excludeResource === undefined ? entry.excludeResources : undefined;
    if (resources) selection.resources = resources.map(parseResourceName);
    // Its own types, or its own exclusions: the preset's noisy types stay out unless it names them.
    if (resources || excludes) selection.excludeResources = excludedWith(resources, excludes);
    if (flags.selector === undefined && entry.selector !== undefined)
      selection.labelSelector = entry.selector.trim() || undefined;
    return {
      name: entry.name,
      kubeconfig: entry.kubeconfig,
      context: entry.context,
      selection,
      optional: entry.optional ?? false,
      replica: entry.replica,
    };
  });
}
