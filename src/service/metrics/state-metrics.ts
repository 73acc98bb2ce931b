// --state, per cluster (src/state/recorder.ts): whether this process records it, the writes held back for
// the sinks, those committed early at the bound, those dropped. Read at each scrape.
import { Counter, Gauge } from 'prom-client';
import type { MetricsRegistration } from '../../util/metrics-registration.ts';

/** --state of one cluster: the writes held back for the sinks. */
export interface StateMetricsSource {
  readonly backlogBytes: number;
  readonly unconfirmedWrites: number;
  readonly droppedWrites: number;
  /** Whether this process records the cluster now (false on a leader-elected standby, PostgreSQL). */
  readonly recording: boolean;
}

/** One watched cluster as its state's metrics read it. */
export interface StateCluster {
  readonly name: string;
  readonly state: StateMetricsSource | undefined;
}

export function registerStateMetrics(
  registration: MetricsRegistration,
  clusters: () => readonly StateCluster[],
): void {
  const { registers } = registration;
  /** A gauge per cluster, set at each scrape. */
  const gauge = (name: string, help: string, value: (state: StateMetricsSource | undefined) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['cluster'],
      registers,
      collect() {
        this.reset();
        for (const cluster of clusters()) this.set({ cluster: cluster.name }, value(cluster.state));
      },
    });
  /** A counter per cluster, brought up to the state's own count at each scrape. */
  const counter = (name: string, help: string, total: (state: StateMetricsSource | undefined) => number) =>
    new Counter({
      name,
      help,
      labelNames: ['cluster'],
      registers,
      collect() {
        for (const cluster of clusters()) {
          registration.incrementTo(
            this,
            { cluster: cluster.name },
            total(cluster.state),
            `${name}\u0000${cluster.name}`,
          );
        }
      },
    });
  gauge(
    'kubediff_state_recording',
    '--state: 1 while this process records the cluster (in PostgreSQL under --leader-elect, the leader once it holds the claim), else 0.',
    (state) => (state?.recording ? 1 : 0),
  );
  gauge(
    'kubediff_state_backlog_bytes',
    'Bytes of --state writes held back until every sink has finished with their events (bounded by KUBEDIFF_STATE_MAX_BACKLOG).',
    (state) => state?.backlogBytes ?? 0,
  );
  counter(
    'kubediff_state_unconfirmed_writes_total',
    '--state writes committed before every sink had finished with their events, because the backlog was at its bound (a slow or failing sink).',
    (state) => state?.unconfirmedWrites ?? 0,
  );
  counter(
    'kubediff_state_dropped_writes_total',
    '--state writes not recorded because the store (a PostgreSQL database down or slow) could not take them before the backlog reached its bound.',
    (state) => state?.droppedWrites ?? 0,
  );
}
