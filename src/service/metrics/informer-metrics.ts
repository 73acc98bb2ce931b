// The informers' metrics, per cluster: events reported, time since the last one, watch restarts, relists
// and failures (from the informers' state changes), informers by state, the types failing now, objects held,
// initial sync.
import { Counter, Gauge } from 'prom-client';
import { type ChangeEvent, qualifiedResource } from '../../events/event.ts';
import type { Informer } from '../../informer/informer.ts';
import type { ReflectorState } from '../../informer/reflector.ts';
import { qualifiedName } from '../../kube/types.ts';
import type { MetricsRegistration } from '../../util/metrics-registration.ts';

/** One watched cluster as its informers' metrics read it on each scrape. */
export interface InformerCluster {
  /** The `cluster` label: its events' `cluster`. */
  readonly name: string;
  /** Its informers running now. */
  readonly informers: readonly Informer[];
  /** Its initial sync is over (it has been reporting since). */
  readonly synced: boolean;
}

/** What the pipeline tells these metrics, as it happens. */
export interface InformerObserver {
  /** An event that leaves the event builder (delivered, or buffered on a standby). */
  observeEvent(event: ChangeEvent): void;
  /** InformerHandler.onState. */
  observeState(informer: Informer, state: ReflectorState, cluster?: string): void;
}

export function registerInformerMetrics(
  registration: MetricsRegistration,
  clusters: () => readonly InformerCluster[],
): InformerObserver {
  const { registers } = registration;
  const events = new Counter({
    name: 'kubediff_events_total',
    help: 'Change events reported (before sink filters), by cluster, type and resource.',
    labelNames: ['cluster', 'type', 'resource'],
    registers,
  });
  /** When each (cluster, resource) last had an event, keyed by `${cluster}\u0000${resource}`. */
  const lastEventAt = new Map<string, number>();
  new Gauge({
    name: 'kubediff_seconds_since_last_event',
    help: 'Seconds since the last change event of each resource of each cluster (only resources that had one).',
    labelNames: ['cluster', 'resource'],
    registers,
    collect() {
      this.reset();
      const now = registration.now();
      for (const [key, at] of lastEventAt) {
        const [cluster = '', resource = ''] = key.split('\u0000');
        this.set({ cluster, resource }, (now - at) / 1000);
      }
    },
  });
  const phases = registerPhaseCounters(registration);
  registerInformerGauges(registration, clusters);
  return {
    observeEvent(event) {
      const resource = qualifiedResource(event);
      const cluster = event.cluster ?? '';
      events.inc({ cluster, type: event.type, resource });
      lastEventAt.set(`${cluster}\u0000${resource}`, registration.now());
    },
    observeState: phases,
  };
}

/** Watch restarts and relists (from the second of each), failures by kind, from the informers' states. */
function registerPhaseCounters(registration: MetricsRegistration): InformerObserver['observeState'] {
  const { registers } = registration;
  const watchRestarts = new Counter({
    name: 'kubediff_watch_restarts_total',
    help: 'Watches re-opened after the first one (server timeouts, dropped connections, errors), by cluster and resource.',
    labelNames: ['cluster', 'resource'],
    registers,
  });
  const relists = new Counter({
    name: 'kubediff_relists_total',
    help: 'LISTs after the first one (after 410 Gone, 403/404 or a long failure), by cluster and resource.',
    labelNames: ['cluster', 'resource'],
    registers,
  });
  const watchFailures = new Counter({
    name: 'kubediff_watch_failures_total',
    help: 'Failed LIST or WATCH attempts, by cluster, resource and kind of failure (network, forbidden, server, …).',
    labelNames: ['cluster', 'resource', 'reason'],
    registers,
  });
  /** Per informer: phases seen so far, to tell a first LIST/WATCH from a relist/restart. */
  const history = new WeakMap<Informer, { listed: boolean; watched: boolean }>();
  return (informer, state, cluster = '') => {
    const labels = { cluster, resource: qualifiedName(informer.type) };
    let seen = history.get(informer);
    if (!seen) {
      seen = { listed: false, watched: false };
      history.set(informer, seen);
    }
    if (state.phase === 'listing') {
      if (seen.listed) relists.inc(labels);
      seen.listed = true;
    } else if (state.phase === 'watching') {
      if (seen.watched) watchRestarts.inc(labels);
      seen.watched = true;
    } else if (state.phase === 'failing') {
      watchFailures.inc({ ...labels, reason: state.error.kind });
    }
  };
}

/** What each cluster's informers hold and how they are doing, read at each scrape. */
function registerInformerGauges(
  registration: MetricsRegistration,
  clusters: () => readonly InformerCluster[],
): void {
  const { registers } = registration;
  new Gauge({
    name: 'kubediff_informers',
    help: 'Informers (one per resource type, or per type and namespace with -n), by cluster and state.',
    labelNames: ['cluster', 'state'],
    registers,
    collect() {
      this.reset();
      for (const cluster of clusters()) {
        const counts = { synced: 0, syncing: 0, failing: 0 };
        for (const informer of cluster.informers) {
          if (informer.failure) counts.failing++;
          else if (informer.hasSynced) counts.synced++;
          else counts.syncing++;
        }
        for (const [state, value] of Object.entries(counts))
          this.set({ cluster: cluster.name, state }, value);
      }
    },
  });
  new Gauge({
    name: 'kubediff_watch_failing',
    help: 'Resource types whose LIST or WATCH fails now (1), by cluster, resource and kind of failure: a part of the cluster kubediff cannot read, retried with backoff (403 and 404 slowly).',
    labelNames: ['cluster', 'resource', 'reason'],
    registers,
    collect() {
      this.reset();
      for (const cluster of clusters()) {
        for (const informer of cluster.informers) {
          const failure = informer.failure;
          if (!failure) continue;
          this.set(
            { cluster: cluster.name, resource: qualifiedName(informer.type), reason: failure.kind },
            1,
          );
        }
      }
    },
  });
  new Gauge({
    name: 'kubediff_informers_running',
    help: 'Informers running (listing, watching or retrying), by cluster.',
    labelNames: ['cluster'],
    registers,
    collect() {
      this.reset();
      for (const cluster of clusters()) this.set({ cluster: cluster.name }, cluster.informers.length);
    },
  });
  new Gauge({
    name: 'kubediff_objects',
    help: 'Objects held in the informer caches, by cluster and resource.',
    labelNames: ['cluster', 'resource'],
    registers,
    collect() {
      this.reset();
      for (const cluster of clusters()) {
        const totals = new Map<string, number>();
        for (const informer of cluster.informers) {
          const resource = qualifiedName(informer.type);
          totals.set(resource, (totals.get(resource) ?? 0) + informer.objectCount);
        }
        for (const [resource, value] of totals) this.set({ cluster: cluster.name, resource }, value);
      }
    },
  });
  new Gauge({
    name: 'kubediff_cluster_synced',
    help: '1 once the cluster finished its initial sync (it reports since), 0 while it syncs or cannot start.',
    labelNames: ['cluster'],
    registers,
    collect() {
      this.reset();
      for (const cluster of clusters()) this.set({ cluster: cluster.name }, cluster.synced ? 1 : 0);
    },
  });
}
