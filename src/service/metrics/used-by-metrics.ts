// What ConfigMap and Secret changes reach (src/events/used-by/): each cluster's index (objects and
// references held, objects left out at its bound) and the changes waiting for a rollout. Read at each
// scrape.
import { Counter, Gauge } from 'prom-client';
import type { UsedByStats } from '../../events/used-by/used-by-tracker.ts';
import type { MetricsRegistration } from '../../util/metrics-registration.ts';

export interface UsedBySource {
  stats(): UsedByStats;
}

export function registerUsedByMetrics(
  registration: MetricsRegistration,
  source: () => UsedBySource | undefined,
): void {
  const { registers } = registration;
  const perCluster = (
    name: string,
    help: string,
    value: (cluster: UsedByStats['clusters'][number]) => number,
  ) =>
    new Gauge({
      name,
      help,
      labelNames: ['cluster'],
      registers,
      collect() {
        this.reset();
        for (const cluster of source()?.stats().clusters ?? [])
          this.set({ cluster: cluster.cluster }, value(cluster));
      },
    });
  perCluster(
    'kubediff_used_by_objects',
    'Pods, workloads and ServiceAccounts in the "used by" index (bounded by usedBy.maxObjects per cluster).',
    (cluster) => cluster.objects,
  );
  perCluster(
    'kubediff_used_by_references',
    'References to ConfigMaps, Secrets and ServiceAccounts the "used by" index holds (identical lists counted once).',
    (cluster) => cluster.references,
  );
  new Counter({
    name: 'kubediff_used_by_left_out_total',
    help: 'Objects the "used by" index left out because it held usedBy.maxObjects: usedBy then says incomplete: "limit".',
    labelNames: ['cluster'],
    registers,
    collect() {
      for (const cluster of source()?.stats().clusters ?? [])
        registration.incrementTo(
          this,
          { cluster: cluster.cluster },
          cluster.leftOut,
          `used-by-left-out\u0000${cluster.cluster}`,
        );
    },
  });
  new Gauge({
    name: 'kubediff_used_by_pending_rollouts',
    help: 'Workloads with ConfigMap or Secret changes their pods will only see at their next rollout.',
    registers,
    collect() {
      this.set(source()?.stats().pendingRollouts ?? 0);
    },
  });
  new Counter({
    name: 'kubediff_used_by_rollouts_forgotten_total',
    help: 'Workloads whose waiting changes were forgotten at the bound (their rollout then carries no rollsOut).',
    registers,
    collect() {
      registration.incrementTo(
        this,
        {},
        source()?.stats().rolloutsForgotten ?? 0,
        'used-by-rollouts-forgotten',
      );
    },
  });
}
