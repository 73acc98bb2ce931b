// The connections to each cluster's API server (src/kube/transport.ts): open, opened, lost, requests
// waiting for one. Read at each scrape.
import { Counter, Gauge } from 'prom-client';
import type { ConnectionStats } from '../../kube/transport.ts';
import type { MetricsRegistration } from '../../util/metrics-registration.ts';

/** One watched cluster as its connections' metrics read it. */
export interface ConnectionCluster {
  readonly name: string;
  /** Its connections to its API server (undefined before its client exists). */
  readonly connections: ConnectionStats | undefined;
}

export function registerConnectionMetrics(
  registration: MetricsRegistration,
  clusters: () => readonly ConnectionCluster[],
): void {
  const { registers } = registration;
  new Gauge({
    name: 'kubediff_api_connections',
    help: 'Connections open to the API server, by cluster and protocol (h2: one carries every request; http/1.1: one per watch).',
    labelNames: ['cluster', 'protocol'],
    registers,
    collect() {
      this.reset();
      for (const { name, connections } of clusters()) {
        if (connections) this.set({ cluster: name, protocol: connections.protocol }, connections.open);
      }
    },
  });
  new Counter({
    name: 'kubediff_api_connections_opened_total',
    help: 'Connections opened to the API server since the start, by cluster.',
    labelNames: ['cluster'],
    registers,
    collect() {
      this.reset();
      for (const { name, connections } of clusters()) {
        if (connections) this.inc({ cluster: name }, connections.opened);
      }
    },
  });
  new Counter({
    name: 'kubediff_api_connections_lost_total',
    help: 'HTTP/2 connections given up, by cluster and reason: reset, ping_timeout (no answer to a PING), closed by the server, goaway (replaced gracefully).',
    labelNames: ['cluster', 'reason'],
    registers,
    collect() {
      this.reset();
      for (const { name, connections } of clusters()) {
        if (!connections) continue;
        for (const [reason, count] of Object.entries(connections.lost))
          this.inc({ cluster: name, reason: reason.replace('-', '_') }, count);
      }
    },
  });
  new Gauge({
    name: 'kubediff_api_requests_waiting',
    help: 'Requests waiting for a connection because every one allowed (KUBEDIFF_MAX_CONNECTIONS) is busy, by cluster.',
    labelNames: ['cluster'],
    registers,
    collect() {
      this.reset();
      for (const { name, connections } of clusters()) {
        if (connections) this.set({ cluster: name }, connections.waiting);
      }
    },
  });
}
