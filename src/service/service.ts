// What `watch` adds when it runs as a service: the health/metrics server (--listen), readiness,
// metrics, and leader election (--leader-elect) with its event gate. `watch` calls it at four points:
// before the sinks exist (start), for each event (emit), for each informer state (handler), once the
// initial sync is over (synced), and when stopping (stop, after the sinks drained).

import type { ChangeEvent } from '../events/event.ts';
import type { ClusterWatcher } from '../informer/cluster-watcher.ts';
import type { InformerHandler } from '../informer/informer.ts';
import type { KubeClient } from '../kube/client.ts';
import { type LeaderElectionConfig, LeaderElector } from '../kube/leader-election.ts';
import type { Router } from '../sinks/router.ts';
import type { LogFormat, Logger } from '../util/log.ts';
import { HealthServer, Readiness } from './health-server.ts';
import { CHECKPOINT_ANNOTATION, checkpointAnnotation, LeaderGate } from './leader-gate.ts';
import { KubediffMetrics, type MetricsSources } from './metrics.ts';

export interface ServiceOptions {
  /** --listen: serve /healthz, /readyz, /metrics here. */
  listen: string | undefined;
  readyFailureThresholdMs: number;
  /** --leader-elect. */
  leaderElection: LeaderElectionConfig | undefined;
  logFormat: LogFormat | 'auto';
}

export class ServiceRuntime {
  private readonly options: ServiceOptions | undefined;
  private readonly log: Logger;
  private readonly client: KubeClient;
  private readonly metrics: KubediffMetrics | undefined;
  private readonly readiness: Readiness;
  private server: HealthServer | undefined;
  private gate: LeaderGate | undefined;
  private elector: LeaderElector | undefined;
  private router: Router | undefined;
  private readonly standbyMaxBufferBytes: number | undefined;

  private constructor(
    options: ServiceOptions | undefined,
    client: KubeClient,
    log: Logger,
    version: string,
    standbyMaxBufferBytes: number | undefined,
  ) {
    this.options = options;
    this.standbyMaxBufferBytes = standbyMaxBufferBytes;
    this.client = client;
    this.log = log;
    this.readiness = new Readiness({ thresholdMs: options?.readyFailureThresholdMs ?? 60_000 });
    this.metrics = options?.listen ? new KubediffMetrics({ version }) : undefined;
    this.metrics?.setSources({ connections: () => client.connectionStats() });
  }

  /** Opens the health server at once, so that the kubelet sees a live (not yet ready) process during the sync. */
  static async start(
    options: ServiceOptions | undefined,
    deps: {
      client: KubeClient;
      log: Logger;
      version: string;
      /** KUBEDIFF_STANDBY_MAX_BUFFER: bytes a standby may hold back (default in leader-gate.ts). */
      standbyMaxBufferBytes?: number | undefined;
    },
  ): Promise<ServiceRuntime> {
    const runtime = new ServiceRuntime(
      options,
      deps.client,
      deps.log,
      deps.version,
      deps.standbyMaxBufferBytes,
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

  /**
   * The sinks' router: where events go once this replica may deliver; and, for the metrics, the
   * dead-letter files, the failure counts and the --state recorder.
   */
  connect(
    router: Router,
    observed: Pick<MetricsSources, 'failures' | 'state' | 'deadLetterFiles'> = {},
  ): void {
    this.router = router;
    this.metrics?.setSources({ sinks: () => router.sinks, ...observed });
    if (this.options?.leaderElection) {
      this.gate = new LeaderGate({
        deliver: (event) => router.deliver(event),
        log: this.log,
        ...(this.standbyMaxBufferBytes !== undefined ? { maxBufferedBytes: this.standbyMaxBufferBytes } : {}),
      });
      this.metrics?.setSources({ standby: this.gate });
    }
  }

  /** An event from the event builder. */
  emit(event: ChangeEvent): void {
    this.metrics?.observeEvent(event);
    if (this.gate) this.gate.offer(event);
    else this.router?.deliver(event);
  }

  /** The informer handler, observed for readiness and metrics. */
  handler(inner: InformerHandler): InformerHandler {
    return {
      onAdd: (type, object, context) => inner.onAdd(type, object, context),
      onUpdate: (type, previous, current, context) => inner.onUpdate(type, previous, current, context),
      onDelete: (type, last, context) => inner.onDelete(type, last, context),
      onState: (informer, state) => {
        this.readiness.observeState(informer, state);
        this.metrics?.observeState(informer, state);
        inner.onState?.(informer, state);
      },
    };
  }

  /** The initial sync is over: ready, and (with --leader-elect) campaigning for the Lease. */
  synced(watcher: ClusterWatcher): void {
    this.readiness.markSynced();
    this.metrics?.setSources({
      informers: () => watcher.allInformers(),
      isReady: () => this.readiness.report().ready,
      isLeader: () => this.gate?.isLeader ?? true,
    });
    const config = this.options?.leaderElection;
    const gate = this.gate;
    if (!config || !gate) return;
    this.elector = new LeaderElector(
      this.client,
      config,
      {
        onStartedLeading: (previous) => gate.startLeading(previous),
        onStoppedLeading: () => gate.stopLeading(),
        onObserved: (lease) => gate.observe(lease),
        annotations: () => ({ [CHECKPOINT_ANNOTATION]: checkpointAnnotation(watcher.allInformers()) }),
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
