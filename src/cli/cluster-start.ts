// How `watch` starts its clusters: one cluster syncs first and fails the watch with its sentence if it
// cannot start; several start each on its own, one that cannot start retried in the background.

import type { Informer } from '../informer/informer.ts';
import { explainConnectionFailure } from '../kube/connection-errors.ts';
import type { SyncProgress } from '../service/progress.ts';
import type { ServiceRuntime } from '../service/service.ts';
import { plural } from '../util/count-text.ts';
import { errorMessage } from '../util/errors.ts';
import type { Logger } from '../util/log.ts';
import type { ClusterSupervisor, ClusterWiring } from './cluster-supervisor.ts';

/** What starting the clusters needs of the watch. */
export interface StartDeps {
  service: ServiceRuntime;
  log: Logger;
  wiringOf: (cluster: ClusterSupervisor) => ClusterWiring;
  allInformers: () => Informer[];
  /** The terminal's progress line of the initial sync. */
  progress: SyncProgress;
  /** A cluster's first sync is over (each time one of its attempts syncs). */
  onSynced?: (cluster: ClusterSupervisor) => void;
}

/**
 * One cluster: its initial sync; a cluster that cannot start fails the watch with its sentence. When the
 * stop comes first, its reason (nothing more to do then).
 */
export async function startOne(
  cluster: ClusterSupervisor,
  deps: StartDeps & { stop: Promise<string> },
): Promise<string | undefined> {
  const { progress } = deps;
  try {
    progress.start(() => [{ name: undefined, informers: deps.allInformers() }]);
    const starting = cluster.start(deps.wiringOf(cluster));
    const started = await Promise.race([
      starting.then(() => ({ synced: true })),
      deps.stop.then((reason) => ({ reason })),
    ]);
    if ('reason' in started) {
      // watcher.stop() (at close) ends the sync; what it throws then is the stop, not an error.
      starting.catch(() => undefined);
      return started.reason;
    }
  } catch (error) {
    throw explainConnectionFailure(error, cluster.identity);
  } finally {
    progress.stop();
  }
  deps.service.synced(deps.allInformers);
  deps.onSynced?.(cluster);
  logWatching(deps.log, cluster);
  return undefined;
}

/**
 * Several clusters, each on its own: it syncs and reports as soon as it can, whatever the others do. One
 * that cannot start (unreachable, forbidden) says so in one sentence and is retried in the background;
 * /readyz names every context not synced yet.
 */
export function startSeveral(clusters: readonly ClusterSupervisor[], deps: StartDeps): void {
  const { service, progress } = deps;
  // /readyz waits for every cluster but those `optional: true` in clusters:.
  const awaited = clusters.filter((cluster) => !cluster.optional);
  for (const cluster of awaited) service.clusterDown(cluster.label, undefined);
  service.synced(deps.allInformers);
  // The terminal's progress line names each cluster still in its first attempt; it ends once each has
  // synced or said why it cannot start (then it is retried quietly, and events may be printing).
  const syncing = new Set(clusters);
  progress.start(() =>
    [...syncing].map((cluster) => ({ name: cluster.name, informers: cluster.allInformers() })),
  );
  const settled = (cluster: ClusterSupervisor) => {
    syncing.delete(cluster);
    if (syncing.size === 0) progress.stop();
  };
  for (const cluster of clusters) startInBackground(cluster, deps, () => settled(cluster));
}

/**
 * One cluster of several, on its own: it syncs and reports as soon as it can; when it cannot start, it
 * says so in one sentence and is retried in the background. `settled` is told when its first attempt
 * ended, either way.
 */
export function startInBackground(
  cluster: ClusterSupervisor,
  deps: Pick<StartDeps, 'service' | 'log' | 'wiringOf' | 'onSynced'>,
  settled: () => void = () => {},
): void {
  const { service, log } = deps;
  const synced = () => {
    service.clusterSynced(cluster.label);
    deps.onSynced?.(cluster);
    logWatching(log, cluster);
  };
  cluster.start(deps.wiringOf(cluster)).then(
    (selection) => {
      settled();
      // undefined: stopped during the sync.
      if (selection) synced();
    },
    (error: unknown) => {
      settled();
      if (cluster.stopping) return;
      const explained = errorMessage(explainConnectionFailure(error, cluster.identity)).replace(/\.$/, '');
      // The sentence names the context; a cluster named otherwise in clusters: is named too.
      const named = cluster.name === cluster.identity.contextName ? '' : `${cluster.label}: `;
      log.warn(
        `${named}${explained}; retried in the background${cluster.optional ? ' (optional: /readyz does not wait for it)' : ''}.`,
      );
      if (!cluster.optional) service.clusterDown(cluster.label, error);
      cluster.retryInBackground(deps.wiringOf(cluster), (selection) => {
        if (selection) synced();
      });
    },
  );
}

/** "watching N resource types on … (context …)": said of each cluster once it synced. */
function logWatching(log: Logger, cluster: ClusterSupervisor): void {
  const informers = cluster.allInformers();
  const count = new Set(informers.map((informer) => informer.type)).size;
  const failing = new Set(
    informers.filter((informer) => !informer.hasSynced).map((informer) => informer.type),
  ).size;
  log.info(
    `watching ${plural(count, 'resource type')} on ${cluster.where}` +
      (failing > 0 ? `; ${failing} of them failing, retried in the background (see above)` : ''),
  );
}
