// One cluster of `kubediff watch` for the whole run: what outlives any one attempt to watch it (its
// identity, client and state recorder, opened once), and the attempts themselves. Each attempt is a
// ClusterWatcher (src/informer/cluster-watcher.ts: discovery and informers, once), fed into the one
// shared Pipeline through pipeline.source(cluster); when an attempt cannot start, the supervisor retries
// it in the background with the program's backoff until it starts. watch.ts assembles the pipeline and
// decides what a cluster that cannot start means: with one cluster, the watch fails with its sentence;
// with several, the others go on and this one is retried (docs/fleets.md).
import { redactionSignature } from '../config/redaction.ts';
import type { ClusterSelection, WatchSettings } from '../config/watch-settings.ts';
import type { Pipeline, PipelineObserver } from '../events/pipeline.ts';
import { ClusterWatcher } from '../informer/cluster-watcher.ts';
import type { Informer } from '../informer/informer.ts';
import type { ReflectorTiming } from '../informer/reflector.ts';
import type { StoredObject } from '../informer/store.ts';
import { type HttpSettings, KubeClient } from '../kube/client.ts';
import { Discovery } from '../kube/discovery.ts';
import type { ClusterIdentity } from '../kube/kubeconfig.ts';
import type { Selection } from '../kube/selection.ts';
import type { FleetOwnership } from '../state/postgres-store.ts';
import type { StateRecorder } from '../state/recorder.ts';
import { Backoff, sleep } from '../util/backoff.ts';
import { errorMessage } from '../util/errors.ts';
import type { EventFailures } from '../util/event-failures.ts';
import type { Lifecycle } from '../util/lifecycle.ts';
import type { Logger } from '../util/log.ts';
import type { ClusterPlan } from './cluster-plans.ts';

export interface ClusterDeps {
  settings: WatchSettings;
  log: Logger;
  failures: EventFailures;
  http?: Partial<HttpSettings> | undefined;
  timing: Partial<ReflectorTiming>;
  rediscoveryIntervalMs: number | undefined;
  stateMaxBacklogBytes?: number | undefined;
  /** --leader-elect with PostgreSQL: the recorder claims the cluster when this replica leads. */
  leaderElected?: { leaseDurationMs: number } | undefined;
  /** --fleet: this replica owns the cluster at this epoch; every write of its state checks it. */
  fleetOwnership?: FleetOwnership | undefined;
}

/** What the pipeline side gives each cluster's watcher. */
export interface ClusterWiring {
  pipeline: Pipeline;
  /** Backpressure from the sinks. */
  flowControl: () => Promise<void> | undefined;
  /** After each (re-)discovery of this cluster. */
  onSelection: (selection: Selection) => void;
}

/** One watched cluster: its client and state for the whole run, and the ClusterWatcher attempts that watch it. */
export class ClusterSupervisor {
  readonly identity: ClusterIdentity;
  /** The `cluster` of its events: its name in `clusters:`, --cluster-name, else the context's name. */
  readonly name: string;
  /** How messages name it (ClusterPlan.label). */
  readonly label: string;
  readonly optional: boolean;
  private readonly selection: ClusterSelection;
  readonly client: KubeClient;
  readonly recorder: StateRecorder | undefined;
  private readonly deps: ClusterDeps;
  private readonly log: Logger;
  private watcher: ClusterWatcher | undefined;
  private started = false;
  private stopped = false;
  private readonly wake = new AbortController();

  private constructor(
    plan: ClusterPlan,
    client: KubeClient,
    recorder: StateRecorder | undefined,
    deps: ClusterDeps,
    log: Logger,
  ) {
    this.identity = plan.identity;
    this.name = plan.name;
    this.label = plan.label;
    this.optional = plan.optional;
    this.selection = plan.selection;
    this.client = client;
    this.recorder = recorder;
    this.deps = deps;
    this.log = log;
  }

  /**
   * Opens the cluster's state (first: a damaged file or a cluster claimed elsewhere stops kubediff at
   * once) and its client; both are closed by `lifecycle`, the state last.
   */
  static async open(
    plan: ClusterPlan,
    deps: ClusterDeps,
    lifecycle: Lifecycle,
    log: Logger,
  ): Promise<ClusterSupervisor> {
    const { settings } = deps;
    const { identity } = plan;
    const recorder = settings.state
      ? await openRecorder(settings.state, plan, deps, lifecycle, log)
      : undefined;
    const client = lifecycle.use(await KubeClient.create(identity, { http: deps.http, log }), (client) =>
      client.close(),
    );
    return new ClusterSupervisor(plan, client, recorder, deps, log);
  }

  /** Where it is watched: its namespaces (-n), or every namespace but the excluded ones. */
  get scope(): { namespaces: readonly string[]; excludeNamespaces: readonly string[] } {
    return { namespaces: this.selection.namespaces, excludeNamespaces: this.selection.excludeNamespaces };
  }

  /** Its informers now (none before it started). */
  allInformers(): Informer[] {
    return this.watcher?.allInformers() ?? [];
  }

  /** For the owner lookups: an object of this cluster, by what an ownerReference names. */
  findObject(
    group: string,
    kind: string,
    namespace: string | undefined,
    name: string,
  ): StoredObject | undefined {
    return this.watcher?.findObject(group, kind, namespace, name);
  }

  /** "https://… (context "a")", or "… (cluster "eu", context "a")": where it is, for the log. */
  get where(): string {
    const context = `context "${this.identity.contextName}"`;
    return `${this.identity.server} (${this.label === context ? context : `${this.label}, ${context}`})`;
  }

  /**
   * One attempt: discovers, starts every informer, resolves when each listed or reported why it cannot
   * (undefined when stopped meanwhile); rejects when discovery fails. A new watcher each attempt.
   */
  start(wiring: ClusterWiring): Promise<Selection | undefined> {
    const { settings } = this.deps;
    const { selection } = this;
    const recorder = this.recorder;
    const own: PipelineObserver[] = recorder ? [recorder] : [];
    const cluster = this.name || undefined;
    const source = wiring.pipeline.source(cluster, own);
    const watcher = new ClusterWatcher({
      client: this.client,
      discovery: new Discovery(this.client),
      selection: {
        include: selection.resources,
        exclude: selection.excludeResources,
        namespaceScoped: selection.namespaces.length > 0 || (settings.filter?.namespaces?.length ?? 0) > 0,
      },
      namespaces: selection.namespaces,
      excludeNamespaces: selection.excludeNamespaces,
      labelSelector: selection.labelSelector,
      normalize: (type, object) => wiring.pipeline.normalize(type, object, cluster),
      initial: settings.initial,
      handler: source,
      ...(recorder
        ? {
            planInformer: (type, namespace, initialList) => {
              const plan = recorder.plan(type, namespace, initialList);
              if (plan.preload) wiring.pipeline.restored(type, plan.preload, cluster);
              return plan;
            },
          }
        : {}),
      log: this.log,
      timing: this.deps.timing,
      rediscoveryIntervalMs: this.deps.rediscoveryIntervalMs,
      // The recorder pauses the informers after a first LIST until its baseline is durable.
      flowControl: recorder ? () => recorder.flowControl() ?? wiring.flowControl() : wiring.flowControl,
      failures: this.deps.failures,
      onSelection: (selection) => {
        recorder?.noteSelection(selection);
        wiring.onSelection(selection);
      },
    });
    this.watcher = watcher;
    return watcher.start().then((selection) => {
      if (selection && recorder) recorder.reportVanishedTypes(selection, source);
      if (selection) this.started = true;
      return selection;
    });
  }

  /** Its initial sync is over: it reports since (for the metrics). */
  get synced(): boolean {
    return this.started;
  }

  /**
   * Several clusters: retries start() with the program's backoff until it succeeds or the watch stops;
   * `started` is told once it did. The failure that led here was logged by the caller.
   */
  retryInBackground(wiring: ClusterWiring, started: (selection: Selection | undefined) => void): void {
    this.retry(wiring, started).catch((error: unknown) => {
      this.log.warn(`stopped retrying: ${errorMessage(error)}`);
    });
  }

  private async retry(
    wiring: ClusterWiring,
    started: (selection: Selection | undefined) => void,
  ): Promise<void> {
    // The watches' schedule (KUBEDIFF_MAX_BACKOFF included): a cluster down is retried like a watch.
    const backoff = new Backoff(this.deps.timing.backoff);
    while (!this.stopped) {
      await sleep(backoff.next(), this.wake.signal);
      if (this.stopped) return;
      await this.watcher?.stop();
      if (this.stopped) return;
      try {
        const selection = await this.start(wiring);
        if (!this.stopped) started(selection);
        return;
      } catch (error) {
        if (this.stopped) return;
        this.log.debug(`still cannot start: ${errorMessage(error)}`);
      }
    }
  }

  /** True once stop() was called: what an attempt still in flight says then is not news. */
  get stopping(): boolean {
    return this.stopped;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wake.abort();
    // The retries check `stopped` after every wait, so at most one more watcher can appear meanwhile:
    // stop each until none is new. The attempt's discovery is not awaited (see ClusterWatcher.stop):
    // closing the client ends it, and the retries then end on their own.
    let watcher: ClusterWatcher | undefined;
    do {
      watcher = this.watcher;
      await watcher?.stop();
    } while (watcher !== this.watcher);
  }
}

/** Several clusters: each cluster's lines say which it is about (its label, `context "a"`). */
export function clusterLogger(log: Logger, label: string): Logger {
  const prefix = `${label}: `;
  return {
    info: (message, fields) => log.info(prefix + message, fields),
    warn: (message, fields) => log.warn(prefix + message, fields),
    debug: (message, fields) => log.debug(prefix + message, fields),
  };
}

/**
 * --state: the cluster's recorder, its store opened first. Imported only here: a watch without --state
 * loads none of the state modules.
 */
async function openRecorder(
  state: NonNullable<WatchSettings['state']>,
  plan: ClusterPlan,
  deps: ClusterDeps,
  lifecycle: Lifecycle,
  log: Logger,
): Promise<StateRecorder> {
  const [{ StateRecorder }, { openStateStore }, { selectionSignature }] = await Promise.all([
    import('../state/recorder.ts'),
    import('../state/open.ts'),
    import('../state/catch-up.ts'),
  ]);
  const { settings } = deps;
  return lifecycle.use(
    await StateRecorder.open({
      store: await openStateStore(state, plan.name, {
        leaderElected: deps.leaderElected !== undefined,
        fleet: deps.fleetOwnership,
      }),
      leaderElected: deps.leaderElected && { fenceAfterMs: deps.leaderElected.leaseDurationMs },
      log,
      signature: selectionSignature({
        ...settings,
        ...plan.selection,
        redaction: redactionSignature(settings.redaction),
      }),
      retention: state.retention,
      failures: deps.failures,
      ...(deps.stateMaxBacklogBytes !== undefined ? { maxBacklogBytes: deps.stateMaxBacklogBytes } : {}),
    }),
    (recorder) => recorder.close(),
  );
}
