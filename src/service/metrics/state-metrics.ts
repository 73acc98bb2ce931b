// --state, per cluster (src/state/recorder.ts): whether this process records it, the writes held back for
// the sinks, those committed early at the bound, those dropped. Read at each scrape.
import { Counter, Gauge } from 'prom-client';
import type { MetricsRegistration } from './registration.ts';

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
  new Gauge({
    name: 'kubediff_state_recording',
    help: '--state: 1 while this process records the cluster (in PostgreSQL under --leader-elect, the leader once it holds the claim), else 0.',
    labelNames: ['cluster'],
    registers,
    collect() {
      this.reset();
      for (const cluster of clusters()) this.set({ cluster: cluster.name }, cluster.state?.recording ? 1 : 0);
    },
  });
  new Gauge({
    name: 'kubediff_state_backlog_bytes',
    help: 'Bytes of --state writes held back until every sink has finished with their events (bounded by KUBEDIFF_STATE_MAX_BACKLOG).',
    labelNames: ['cluster'],
    registers,
    collect() {
      this.reset();
      for (const cluster of clusters()) this.set({ cluster: cluster.name }, cluster.state?.backlogBytes ?? 0);
    },
  });
  new Counter({
    name: 'kubediff_state_unconfirmed_writes_total',
    help: '--state writes committed before every sink had finished with their events, because the backlog was at its bound (a slow or failing sink).',
    labelNames: ['cluster'],
    registers,
    collect() {
      for (const { name, state } of clusters()) {
        registration.incrementTo(
          this,
          { cluster: name },
          state?.unconfirmedWrites ?? 0,
          `state-unconfirmed\u0000${name}`,
        );
      }
    },
  });
  new Counter({
    name: 'kubediff_state_dropped_writes_total',
    help: '--state writes not recorded because the store (a PostgreSQL database down or slow) could not take them before the backlog reached its bound.',
    labelNames: ['cluster'],
    registers,
    collect() {
      for (const { name, state } of clusters()) {
        registration.incrementTo(
          this,
          { cluster: name },
          state?.droppedWrites ?? 0,
          `state-dropped\u0000${name}`,
        );
      }
    },
  });
}
