// What `watch` adds when it runs as a service: the health/metrics server (--listen), readiness,
// metrics, and leader election (--leader-elect). In the pipeline it is an observer (informer states
// for readiness and metrics, reported events for metrics) and, under --leader-elect, a handover stage
// (the leader gate). Its lifecycle: start (before the sinks exist, so that the kubelet sees a live
// process during the sync), synced (ready; campaign for the Lease), stopping, stop (after the sinks
// drained: the final checkpoint covers what they delivered).

import type { ChangeEvent, KubediffEvent } from '../events/event.ts';
import { checkpointCheck } from '../events/handover/checkpoint-check.ts';
import {
  CHECKPOINT_ANNOTATION,
  checkpointAnnotation,
  LeaderGate,
  type TakeoverObserver,
} from '../events/handover/leader-gate.ts';
import type { EventStage, PipelineObserver } from '../events/pipeline.ts';
import type { Informer } from '../informer/informer.ts';
import type { ReflectorState } from '../informer/reflector.ts';
import type { KubeClient } from '../kube/client.ts';
import { type LeaderElectionConfig, LeaderElector } from '../kube/leader-election.ts';
import type { DeliveryObserver } from '../sinks/core/delivery.ts';
import type { Sink } from '../sinks/core/sink.ts';
import type { LogFormat, Logger } from '../util/log.ts';
import type { WhoMetrics } from '../who/start.ts';
import { HealthServer } from './health-server.ts';
import type { FleetSource, KubediffMetrics, MetricsSources, ObservedUi } from './metrics.ts';
import { Readiness, readinessReasonOf } from './readiness.ts';

export interface ServiceOptions {
  /** --listen: serve /healthz, /readyz, /metrics here. */
  listen: string | undefined;
  readyFailureThresholdMs: number;
  /** --leader-elect. */
  leaderElection: LeaderElectionConfig | undefined;
  logFormat: LogFormat | 'auto';
}

export class ServiceRuntime implements PipelineObserver {
  private readonly options: ServiceOptions | undefined;
  private readonly log: Logger;
  /** The cluster whose Lease --leader-elect uses (none in a fleet, which never elects a leader). */
  private readonly client: KubeClient | undefined;
  private readonly metrics: KubediffMetrics | undefined;
  private readonly readiness: Readiness;
  private readonly gate: LeaderGate | undefined;
  private server: HealthServer | undefined;
  private elector: LeaderElector | undefined;
  /** Every cluster's informers, once synced (the leader gate checks a checkpoint against them). */
  private informers: () => readonly Informer[] = () => [];

  private constructor(
    options: ServiceOptions | undefined,
    client: KubeClient | undefined,
    log: Logger,
    standbyMaxBufferBytes: number | undefined,
    metrics: KubediffMetrics | undefined,
    takeover: TakeoverObserver | undefined,
  ) {
    this.options = options;
    this.client = client;
    this.log = log;
    this.readiness = new Readiness({ thresholdMs: options?.readyFailureThresholdMs ?? 60_000 });
    this.metrics = metrics;
    if (options?.leaderElection) {
      if (!client) throw new Error('--leader-elect needs the Lease cluster’s client');
      this.gate = new LeaderGate({
        log,
        takeover,
        check: checkpointCheck(client, () => this.informers()),
        ...(standbyMaxBufferBytes !== undefined ? { maxBufferedBytes: standbyMaxBufferBytes } : {}),
      });
      this.metrics?.setSources({ standby: this.gate });
    }
  }

  /** Opens the health server at once, so that the kubelet sees a live (not yet ready) process during the sync. */
  static async start(
    options: ServiceOptions | undefined,
    deps: {
      client: KubeClient | undefined;
      log: Logger;
      version: string;
      /** KUBEDIFF_STANDBY_MAX_BUFFER: bytes a standby may hold back (default in leader-gate.ts). */
      standbyMaxBufferBytes?: number | undefined;
      /** --leader-elect: who records the leader's history (the state recorder), told of each takeover. */
      takeover?: TakeoverObserver | undefined;
    },
  ): Promise<ServiceRuntime> {
    // prom-client is imported only when the metrics are served: a watch without --listen does not hold it.
    const metrics = options?.listen
      ? new (await import('./metrics.ts')).KubediffMetrics({ version: deps.version })
      : undefined;
    const runtime = new ServiceRuntime(
      options,
      deps.client,
      deps.log,
      deps.standbyMaxBufferBytes,
      metrics,
      deps.takeover,
    );
    if (options?.listen && runtime.metrics) {
      try {
        runtime.server = await HealthServer.start(options.listen, {
          readiness: runtime.readiness,
          metrics: runtime.metrics,
          log: deps.log,
        });
      } catch (error) {
        runtime.metrics.close();
        throw error;
      }
    }
    return runtime;
  }

  /** The pipeline's handover stages: under --leader-elect, the gate that holds events back on a standby. */
  get stages(): EventStage<KubediffEvent>[] {
    return this.gate ? [this.gate] : [];
  }

  /** What the HTTP sinks report their requests and retries to, when the metrics are served. */
  get deliveries(): DeliveryObserver | undefined {
    return this.metrics?.deliveries;
  }

  /** What the metrics read on each scrape: the sinks, the dead-letter files, the failures. */
  observeSinks(
    sinks: () => readonly Sink[],
    observed: Pick<MetricsSources, 'failures' | 'deadLetterFiles' | 'owners' | 'outcomes'> = {},
  ): void {
    this.metrics?.setSources({ sinks, ...observed });
  }

  /** What the metrics read of each cluster on each scrape: informers, connections, --state. */
  observeClusters(clusters: NonNullable<MetricsSources['clusters']>): void {
    this.metrics?.setSources({ clusters });
  }

  /** What the metrics read of the "used by" index (undefined with --no-used-by). */
  observeUsedBy(usedBy: MetricsSources['usedBy']): void {
    this.metrics?.setSources({ usedBy });
  }

  /** What the metrics read of "who" (src/who/start.ts): its listeners, the audit webhook, its own series. */
  async observeWho(who: WhoMetrics): Promise<void> {
    for (const guard of who.listeners) this.metrics?.observeListener(guard);
    if (who.audit) this.metrics?.setSources({ audit: who.audit });
    if (this.metrics) await who.register(this.metrics.registry);
  }

  /** --fleet: what this replica owns and sees, in the metrics (when --listen serves them). */
  observeFleet(member: Pick<FleetSource, 'stats'>, fence: FleetSource['fence']): void {
    this.metrics?.observeFleet({
      get stats() {
        return member.stats;
      },
      fence,
    });
  }

  /** `watch --ui`: the UI's requests, refusals and live streams in the metrics (when --listen serves them). */
  observeUi(ui: ObservedUi): void {
    this.metrics?.observeUi(ui);
  }

  /** PipelineObserver: informer health, for readiness and metrics. */
  stateChanged(informer: Informer, state: ReflectorState, cluster: string | undefined): void {
    this.readiness.observeState(informer, state, cluster);
    this.metrics?.observeState(informer, state, cluster);
  }

  /** PipelineObserver: an event that passed the watch's rules (delivered, or held on a standby). */
  eventReported(event: ChangeEvent): void {
    this.metrics?.observeEvent(event);
  }

  /**
   * Several clusters: one is not synced yet (error undefined: still syncing) or could not start;
   * /readyz names it (its label: `context "a"`, `cluster "eu"`) until clusterSynced.
   */
  clusterDown(cluster: string, error: unknown): void {
    this.readiness.markClusterDown(cluster, error === undefined ? undefined : readinessReasonOf(error));
  }

  clusterSynced(cluster: string): void {
    this.readiness.clusterSynced(cluster);
  }

  /**
   * The initial sync is over (of every cluster that could start): ready, and (with --leader-elect)
   * campaigning for the Lease. `informers`: every cluster's.
   */
  synced(informers: () => Informer[]): void {
    this.informers = informers;
    this.readiness.markSynced();
    this.metrics?.setSources({
      isReady: () => this.readiness.report().ready,
      isLeader: () => this.gate?.isLeader ?? true,
    });
    const config = this.options?.leaderElection;
    const gate = this.gate;
    if (!config || !gate || !this.client) return;
    this.elector = new LeaderElector(
      this.client,
      config,
      {
        onStartedLeading: (previous) => void gate.startLeading(previous),
        onStoppedLeading: () => gate.stopLeading(),
        onObserved: (lease) => gate.observe(lease),
        annotations: () => ({ [CHECKPOINT_ANNOTATION]: checkpointAnnotation(informers()) }),
      },
      this.log,
    );
    this.log.info(
      'standing by until this replica holds the lease: changes are watched but not delivered meanwhile.',
    );
    this.elector.start();
  }

  /** Stop requested: not ready any more (a kubelet stops routing; a standby may prepare). */
  stopping(): void {
    this.readiness.markStopping();
  }

  /** After the watch stopped and the sinks drained: release the Lease (with the final checkpoint), close the server. */
  async stop(): Promise<void> {
    this.readiness.markStopping();
    await this.elector?.stop();
    await this.server?.close();
    this.metrics?.close();
  }
}
