// Which clusters a command works on, each with its name, its selection and whether it may be down: the
// config file's `clusters:`, else one per --context (or every context with --all-contexts), else the
// kubeconfig's current context. `watch` and `resources` read the same plans.
import type { ClusterSelection, WatchSettings } from '../config/watch-settings.ts';
import { type ClusterIdentity, loadContexts, loadKubeconfig } from '../kube/kubeconfig.ts';
import { isPostgresUrl } from '../state/location.ts';
import { UsageError } from '../util/errors.ts';

/** One cluster to watch, as the flags and the config file describe it. */
export interface ClusterPlan {
  identity: ClusterIdentity;
  /** The `cluster` of its events. */
  name: string;
  /** How messages name it: `context "a"`, or `cluster "eu"` when its name is not its context's. */
  label: string;
  selection: ClusterSelection;
  /** `optional: true` in `clusters:`: /readyz does not wait for it. */
  optional: boolean;
  /** `replica:` in `clusters:`: in a fleet, the replica that alone watches it. */
  pin?: string | undefined;
}

/**
 * The clusters to watch: each entry of the file's `clusters:`, else one per --context (or every context),
 * else the current context.
 */
export function clusterPlans(settings: WatchSettings): ClusterPlan[] {
  const global: ClusterSelection = {
    namespaces: settings.namespaces,
    excludeNamespaces: settings.excludeNamespaces,
    resources: settings.resources,
    excludeResources: settings.excludeResources,
    labelSelector: settings.labelSelector,
  };
  const plans =
    settings.clusters.length > 0
      ? settings.clusters.map((cluster) => {
          const identity = loadKubeconfig({
            kubeconfig: cluster.kubeconfig ?? settings.kubeconfig,
            context: cluster.context,
          });
          const name = cluster.name ?? identity.contextName;
          return {
            identity,
            name,
            label: labelOf(name, identity),
            selection: { ...global, ...cluster.selection },
            optional: cluster.optional,
            pin: cluster.replica,
          };
        })
      : loadContexts(settings).map((identity, _index, all) => ({
          identity,
          name: all.length > 1 ? identity.contextName : (settings.clusterName ?? identity.contextName),
          label: labelOf(identity.contextName, identity),
          selection: global,
          optional: false,
        }));
  // Two entries of `clusters:` left to their contexts' names may share one (two kubeconfigs, one "default").
  const twice = plans.find((plan, index) => plans.findIndex((other) => other.name === plan.name) !== index);
  if (twice && settings.clusters.length > 0) {
    throw new UsageError(
      `clusters: two clusters are named "${twice.name}" (after their contexts); give each a name: of its own.`,
    );
  }
  // An SQLite file holds the snapshot of one cluster (docs/state.md); PostgreSQL keeps one per cluster.
  if (plans.length > 1 && settings.state && !isPostgresUrl(settings.state.path)) {
    throw new UsageError(
      `the state file ${settings.state.path} holds one cluster, but ${plans.length} are watched; use --state postgres://… for several clusters in one process, or one process (and file) per cluster.`,
    );
  }
  return plans;
}

function labelOf(name: string, identity: ClusterIdentity): string {
  return name === identity.contextName ? `context "${identity.contextName}"` : `cluster "${name}"`;
}
