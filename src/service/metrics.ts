// Prometheus metrics (`--listen`, GET /metrics; docs/deploy.md, "Health and metrics"), with prom-client:
// one registry, into which each area's provider (src/service/metrics/) registers its series and reads its
// own sources, observed from outside the data path (at most a counter increment per event). Prometheus
// conventions; `resource` is the qualified name (`deployments.apps`), `sink` the sink's log name, and
// `cluster` is on every series about a cluster, also when only one is watched.
import { collectDefaultMetrics, Registry } from 'prom-client';
import type { ChangeEvent } from '../events/event.ts';
import type { Informer } from '../informer/informer.ts';
import type { ReflectorState } from '../informer/reflector.ts';
import type { DeliveryObserver } from '../sinks/core/delivery.ts';
import { type AuditSource, registerAuditMetrics } from './metrics/audit-metrics.ts';
import { type ConnectionCluster, registerConnectionMetrics } from './metrics/connection-metrics.ts';
import { type FleetSource, registerFleetMetrics } from './metrics/fleet-metrics.ts';
import {
  type InformerCluster,
  type InformerObserver,
  registerInformerMetrics,
} from './metrics/informer-metrics.ts';
import { type ObservedListener, registerListenerMetrics } from './metrics/listener-metrics.ts';
import { type OutcomeSources, registerOutcomeMetrics } from './metrics/outcome-metrics.ts';
import { type PipelineSources, registerPipelineMetrics } from './metrics/pipeline-metrics.ts';
import { type MetricsRegistration, metricsRegistration } from './metrics/registration.ts';
import { registerServiceMetrics, type ServiceSources } from './metrics/service-metrics.ts';
import { registerSinkMetrics, type SinkSources } from './metrics/sink-metrics.ts';
import { registerStateMetrics, type StateCluster } from './metrics/state-metrics.ts';
import { type ObservedUi, registerUiMetrics } from './metrics/ui-metrics.ts';
import { registerUsedByMetrics, type UsedBySource } from './metrics/used-by-metrics.ts';

/** One watched cluster as the metrics read it on each scrape: what each area's metrics read of it. */
export type MetricsCluster = InformerCluster & ConnectionCluster & StateCluster;

/** Where the scrape-time values come from (set as the watch is wired), by area. */
export interface MetricsSources extends SinkSources, PipelineSources, ServiceSources, OutcomeSources {
  /** Every watched cluster (read on each scrape). */
  clusters?: () => readonly MetricsCluster[];
  /** --audit-listen: the audit webhook's requests and the join's counts. */
  audit?: AuditSource;
  /** What ConfigMap and Secret changes reach: the index (absent with --no-used-by). */
  usedBy?: UsedBySource | undefined;
}

export type { FleetSource, ObservedListener, ObservedUi };

export class KubediffMetrics {
  readonly registry = new Registry();
  private readonly registration: MetricsRegistration;
  private sources: MetricsSources = {};
  private readonly informers: InformerObserver;
  /** What the HTTP sinks report their requests and retries to (src/sinks/core/delivery.ts). */
  readonly deliveries: DeliveryObserver;
  private readonly addListener: (listener: ObservedListener) => void;

  constructor(options: { version: string; defaultMetrics?: boolean; now?: () => number }) {
    this.registration = metricsRegistration(this.registry, options.now ?? Date.now);
    if (options.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry });
    const sources = () => this.sources;
    const clusters = () => this.sources.clusters?.() ?? [];
    registerServiceMetrics(this.registration, options.version, sources);
    this.informers = registerInformerMetrics(this.registration, clusters);
    this.deliveries = registerSinkMetrics(this.registration, sources);
    registerPipelineMetrics(this.registration, sources);
    registerOutcomeMetrics(this.registration, sources);
    registerStateMetrics(this.registration, clusters);
    registerConnectionMetrics(this.registration, clusters);
    registerAuditMetrics(this.registration, () => this.sources.audit);
    registerUsedByMetrics(this.registration, () => this.sources.usedBy);
    this.addListener = registerListenerMetrics(this.registration);
  }

  /** A listener's closed connections (src/service/listener-guard.ts), in kubediff_listener_connections_closed_total. */
  observeListener(listener: ObservedListener): void {
    this.addListener(listener);
  }

  /** --fleet: the fleet's metrics, registered when this process is a fleet's replica (docs/fleets.md). */
  observeFleet(fleet: FleetSource): void {
    registerFleetMetrics(this.registration, fleet);
  }

  /** The UI's metrics, registered when a UI is served beside the watch (docs/deploy.md, "Health and metrics"). */
  observeUi(ui: ObservedUi): void {
    registerUiMetrics(this.registration, ui);
    this.observeListener(ui.listener);
  }

  setSources(sources: MetricsSources): void {
    this.sources = { ...this.sources, ...sources };
  }

  /** An event that leaves the event builder (delivered, or buffered on a standby). */
  observeEvent(event: ChangeEvent): void {
    this.informers.observeEvent(event);
  }

  /** InformerHandler.onState. */
  observeState(informer: Informer, state: ReflectorState, cluster = ''): void {
    this.informers.observeState(informer, state, cluster);
  }

  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  close(): void {
    this.registry.clear();
  }
}
