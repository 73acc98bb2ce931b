// `kubediff watch`: connect, discover, sync, then report every change until SIGINT or SIGTERM. This is
// wiring and lifecycle only: the path of a change is the Pipeline (src/events/pipeline.ts), assembled
// here in one place from its parts, and everything opened is closed by one Lifecycle, in reverse order:
// on stop, watching ends first, then the sinks deliver what is queued within --shutdown-timeout and
// report what they could not, then the Lease is released, the connections closed and the state file
// committed.
import { outputSinkSpecs } from '../config/output-sink.ts';
import { redactPathsFor } from '../config/redaction.ts';
import { describeSinkSpec } from '../config/sink-settings.ts';
import type { WatchSettings } from '../config/watch-settings.ts';
import { PathMatcher } from '../diff/ignore.ts';
import { Normalizer } from '../diff/normalize.ts';
import { Redactor } from '../diff/redact.ts';
import { DiscoveryResolver } from '../events/discovery-resolver.ts';
import type { KubediffEvent } from '../events/event.ts';
import type { OutcomeEngine } from '../events/outcomes/outcome-engine.ts';
import { OwnerResolver, ownerStage } from '../events/owners.ts';
import { type EventStage, filterStage, Pipeline } from '../events/pipeline.ts';
import { UsedByTracker } from '../events/used-by/used-by-tracker.ts';
import { watchRules } from '../events/watch-rules.ts';
import type { ReflectorTiming } from '../informer/reflector.ts';
import type { HttpSettings, KubeClient } from '../kube/client.ts';
import type { ResourceType } from '../kube/types.ts';
import { SyncProgress } from '../service/progress.ts';
import { type ServiceOptions, ServiceRuntime } from '../service/service.ts';
import { logShutdownReport } from '../sinks/core/router.ts';
import { createSinks, type SinkSet, type SinkSpec } from '../sinks/core/setup.ts';
import type { FleetFence } from '../state/fleet-fence.ts';
import type { Exposure } from '../ui/exposure.ts';
import type { UiServer } from '../ui/server.ts';
import { formatDuration } from '../util/duration.ts';
import { errorMessage, UsageError } from '../util/errors.ts';
import { EventFailures } from '../util/event-failures.ts';
import { Lifecycle } from '../util/lifecycle.ts';
import type { Logger } from '../util/log.ts';
import { startWho, type WhoRuntime } from '../who/start.ts';
import { type ClusterPlan, clusterPlans } from './cluster-plans.ts';
import { startOne, startSeveral } from './cluster-start.ts';
import {
  type ClusterDeps,
  ClusterSupervisor,
  type ClusterWiring,
  clusterLogger,
} from './cluster-supervisor.ts';
import type { FleetWatch } from './fleet-watch.ts';
import { checkRedactRuleNames, checkResourceNames } from './resource-name-check.ts';

export interface WatchRuntime {
  log: Logger;
  /** Resolves when the user asks to stop (SIGINT/SIGTERM). */
  stopRequested: Promise<string>;
  /** Test and tuning knobs from the environment (see docs/watching.md, "Tuning"). */
  timing: Partial<ReflectorTiming>;
  /** How to talk to the API server: protocol, PINGs, connection and read limits. */
  http?: Partial<HttpSettings>;
  rediscoveryIntervalMs: number | undefined;
  /** Sent to the chat platforms and webhooks. */
  userAgent?: string;
  /** Memory bounds from the environment (docs/watching.md, "Tuning"); defaults where absent. */
  limits?: { stateMaxBacklogBytes?: number | undefined; standbyMaxBufferBytes?: number | undefined };
  /** --listen, --leader-elect, … (src/config/service-settings.ts). */
  service?: ServiceOptions;
  version?: string;
  /** --ui: serve the history --state records as a live page (docs/ui.md). */
  ui?: ({ address: string } & Exposure) | undefined;
}

export async function runWatch(settings: WatchSettings, runtime: WatchRuntime): Promise<void> {
  const lifecycle = new Lifecycle();
  try {
    await watch(settings, runtime, lifecycle);
  } finally {
    await lifecycle.close();
  }
}

/** What every step of a watch shares. */
interface WatchContext {
  settings: WatchSettings;
  runtime: WatchRuntime;
  lifecycle: Lifecycle;
  /** The runtime's logger, behind the sync progress line. */
  log: Logger;
  failures: EventFailures;
  /** More than one cluster: each cluster's log lines name it. */
  several: boolean;
}

async function watch(settings: WatchSettings, runtime: WatchRuntime, lifecycle: Lifecycle): Promise<void> {
  // On a terminal, the initial sync's progress line; every log line of the watch clears it first.
  const progress = new SyncProgress(process.stderr);
  lifecycle.defer(() => progress.stop());
  const log = progress.logger(runtime.log);
  // One exception while processing one change costs that change at that stage, never the watch.
  const failures = new EventFailures(log);
  const plans = clusterPlans(settings);
  const context: WatchContext = {
    settings,
    runtime,
    lifecycle,
    log,
    failures,
    several: plans.length > 1 || settings.fleet !== undefined,
  };
  // --fleet: clusters are opened as this replica comes to own them (src/cli/fleet-watch.ts).
  const fleet = await openFleet(context, plans);
  const opened = fleet ? [] : await openClusters(context, plans);
  const clusters = () => fleet?.clusters() ?? opened;
  const first = opened[0];
  const ui = await startUi(context);
  // After the sinks drained: the leader's last checkpoint covers what they delivered. The Lease is the
  // first cluster's (--leader-elect watches one).
  const service = lifecycle.use(
    await ServiceRuntime.start(runtime.service, {
      client: first?.client,
      log,
      version: runtime.version ?? 'dev',
      standbyMaxBufferBytes: runtime.limits?.standbyMaxBufferBytes,
      takeover: first?.recorder?.followsLeadership ? first.recorder : undefined,
    }),
    (service) => service.stop(),
  );
  if (ui) service.observeUi(ui);
  if (fleet) service.observeFleet(fleet.member, fleet.fence);
  // A fleet's replica opens its clusters as it comes to own them: their Warning Events are followed once each has synced.
  // A fleet's replica resumes a cluster's open rollouts when it comes to own it (below), not at its start.
  const outcomes = await startOutcomes(context, fleet ? [] : plans);
  const { sinks, outputClosed, owners } = await startSinks(context, service, clusters, outcomes);
  const { pipeline, resolver, who } = await assemblePipeline(context, {
    router: sinks.router,
    service,
    owners,
    outcomes,
    client: first?.client,
    fence: fleet?.fence,
  });
  const wiringOf = clusterWiring(context, pipeline, resolver, sinks.flowControl, who, fleet?.fence);
  // After the watch stopped and the join passed on what it held, before the sinks drain: the OUTCOMEs
  // reached by then are delivered (without --state, the rollouts still open are reported unknown).
  if (outcomes) lifecycle.defer(() => outcomes.stop(!settings.state));
  // After the watch stopped: what waits for its record of who made it goes on to the sinks, which then drain.
  const join = who.stage;
  if (join) lifecycle.defer(() => join.close());
  for (const plan of plans) {
    owners.attach(plan.name || undefined, (group, kind, namespace, name) =>
      clusters()
        .find((cluster) => cluster.name === plan.name)
        ?.findObject(group, kind, namespace, name),
    );
  }
  lifecycle.defer(async () => {
    if (fleet) await fleet.stopWatching();
    else await Promise.all(opened.map((cluster) => cluster.stop()));
  });
  // Stop requested: not ready any more (a kubelet stops routing; a standby may prepare).
  lifecycle.defer(() => service.stopping());
  await attachRecorders(opened, sinks.router);
  // A stop (SIGINT/SIGTERM, or stdout gone) is honoured at any moment, the initial sync included: a
  // sync paused by a stalled stdout reader, or a LIST the API server never answers, would otherwise
  // hold it off until the kubelet's SIGKILL. A fleet's replica whose name another process took stops too.
  const stop = Promise.race([runtime.stopRequested, outputClosed, ...(fleet ? [fleet.member.failed] : [])]);
  const allInformers = () => clusters().flatMap((cluster) => cluster.allInformers());
  const onSynced = (cluster: ClusterSupervisor) => {
    if (!outcomes) return;
    const name = cluster.name || undefined;
    outcomes.followWarnings(name, cluster.client, cluster.scope);
    if (!fleet || !settings.state) {
      outcomes.synced(name);
      return;
    }
    // Taken over (or handed over): the rollouts its previous owner followed are followed on here.
    void resumeRollouts(context, outcomes, cluster.name).finally(() => outcomes.synced(name));
  };
  const deps = { service, log, wiringOf, allInformers, progress, onSynced };
  if (fleet) {
    if (!(await fleet.run({ service, log, wiringOf, router: sinks.router, onSynced }, stop))) {
      logStop(log, await stop, settings.delivery.shutdownTimeoutMs, ' before joining the fleet');
      return;
    }
  } else if (context.several) {
    startSeveral(opened, deps);
  } else {
    const stoppedBy = await startOne(first as ClusterSupervisor, { ...deps, stop });
    if (stoppedBy !== undefined) {
      logStop(log, stoppedBy, settings.delivery.shutdownTimeoutMs, ' during the initial sync');
      return;
    }
  }
  logStop(log, await stop, settings.delivery.shutdownTimeoutMs, '');
}

/**
 * Per cluster, in order: its state (--state, docs/state.md), opened before anything is watched, so that
 * a damaged or foreign file, or a cluster another process records in the same database, stops kubediff
 * at once (committed last, once the sinks have finished with everything they were given; leader-elected
 * with PostgreSQL, only the leader claims the cluster and records), then its client.
 */
async function openClusters(
  context: WatchContext,
  plans: readonly ClusterPlan[],
): Promise<ClusterSupervisor[]> {
  const { runtime, log, several } = context;
  const leaderElection = runtime.service?.leaderElection;
  if (several && leaderElection) {
    throw new UsageError(
      '--leader-elect elects one replica per cluster (its Lease lives in that cluster), so it watches one cluster; run one leader-elected pair per cluster, without --context repeated, --all-contexts or several clusters:.',
    );
  }
  const clusters: ClusterSupervisor[] = [];
  for (const plan of plans) {
    const clusterLog = several ? clusterLogger(log, plan.label) : log;
    clusters.push(await ClusterSupervisor.open(plan, clusterDeps(context), context.lifecycle, clusterLog));
  }
  return clusters;
}

/**
 * Outcomes (docs/outcomes.md), unless --no-outcomes: the engine that follows every rollout and (--state) the
 * rollouts the previous run left open, read from the history before anything is watched. Imported only here: --no-outcomes loads none of it.
 */
async function startOutcomes(
  { settings, runtime, log }: WatchContext,
  plans: readonly ClusterPlan[],
): Promise<OutcomeEngine | undefined> {
  if (!settings.outcomes.enabled) return undefined;
  const { OutcomeEngine } = await import('../events/outcomes/outcome-engine.ts');
  const engine = new OutcomeEngine({ timeoutMs: settings.outcomes.timeoutMs, log, timing: runtime.timing });
  if (settings.state) {
    const { pendingRollouts } = await import('./outcome-resume.ts');
    const pending = await pendingRollouts(
      settings.state,
      plans.map((plan) => plan.name),
      { timeoutMs: settings.outcomes.timeoutMs, now: Date.now() },
    );
    for (const [cluster, rollouts] of pending) engine.resume(cluster || undefined, rollouts);
  }
  // Each cluster's Warning Events are followed once it synced (onSynced): a cluster that cannot be reached
  // says so once, in its own sentence, not first through the follower.
  return engine;
}

/** A fleet's cluster newly owned: its rollouts the history shows without an OUTCOME, followed again. */
async function resumeRollouts(
  { settings, log }: WatchContext,
  engine: OutcomeEngine,
  cluster: string,
): Promise<void> {
  if (!settings.state) return;
  try {
    const { pendingRollouts } = await import('./outcome-resume.ts');
    const pending = await pendingRollouts(settings.state, [cluster], {
      timeoutMs: settings.outcomes.timeoutMs,
      now: Date.now(),
    });
    for (const [name, rollouts] of pending) engine.resume(name || undefined, rollouts);
  } catch (error) {
    log.warn(
      `cluster "${cluster}": cannot read the rollouts its previous owner followed (${errorMessage(error)}); its rollouts from now on are followed.`,
    );
  }
}

/** What opening each cluster needs. */
function clusterDeps({ settings, runtime, log, failures }: WatchContext): ClusterDeps {
  const leaderElection = runtime.service?.leaderElection;
  return {
    settings,
    log,
    failures,
    http: runtime.http,
    timing: runtime.timing,
    rediscoveryIntervalMs: runtime.rediscoveryIntervalMs,
    stateMaxBacklogBytes: runtime.limits?.stateMaxBacklogBytes,
    leaderElected: leaderElection && { leaseDurationMs: leaderElection.leaseDurationMs },
  };
}

/**
 * --fleet: this process as one replica of a fleet (docs/fleets.md); its clusters are opened as it comes to
 * own them. After the sinks drained (deferred before them), their state is recorded and the fleet left.
 */
async function openFleet(
  context: WatchContext,
  plans: readonly ClusterPlan[],
): Promise<FleetWatch | undefined> {
  const { settings, runtime, log, lifecycle } = context;
  const { fleet, state } = settings;
  if (!fleet || !state) return undefined;
  const { FleetWatch } = await import('./fleet-watch.ts');
  FleetWatch.checkCompatible(runtime.service?.leaderElection !== undefined);
  const watch = new FleetWatch({ ...settings, fleet, state }, plans, clusterDeps(context), {
    log,
    version: runtime.version ?? 'dev',
  });
  await watch.migrate();
  lifecycle.defer(() => watch.close());
  return watch;
}

/** --ui: the history --state records, served as a live page (docs/ui.md). */
async function startUi({ settings, runtime, lifecycle, log }: WatchContext): Promise<UiServer | undefined> {
  if (!runtime.ui || !settings.state) return undefined;
  // Imported only here: a watch without --ui loads none of the UI's modules.
  const [{ openTimelineReader }, { UiServer }] = await Promise.all([
    import('../state/open.ts'),
    import('../ui/server.ts'),
  ]);
  // A connection of its own, read-only, off this thread: the page's queries never hold the
  // recorder's writes nor the watch (docs/ui.md).
  const reader = lifecycle.use(await openTimelineReader(settings.state), (reader) => reader.close());
  return lifecycle.use(
    await UiServer.start(runtime.ui.address, { flag: '--ui', ...runtime.ui, reader, log }),
    (server) => server.close(),
  );
}

/**
 * stdout and the sinks, observed by the service; `outputClosed` resolves when stdout's reader goes away.
 * `owners` gives every event its `owner`, from the informers' stores of its cluster.
 */
async function startSinks(
  { settings, runtime, lifecycle, log, failures }: WatchContext,
  service: ServiceRuntime,
  clusters: () => readonly ClusterSupervisor[],
  outcomes: OutcomeEngine | undefined,
): Promise<{ sinks: SinkSet; outputClosed: Promise<string>; owners: OwnerResolver }> {
  let stopOutput: (reason: string) => void = () => {};
  const outputClosed = new Promise<string>((resolve) => {
    stopOutput = resolve;
  });
  const sinks = await createSinks(sinkSpecs(settings), {
    log,
    stdout: process.stdout,
    onStdoutClosed: (error) =>
      stopOutput(error.code === 'EPIPE' ? 'stdout closed' : `stdout failed: ${error.message}`),
    deadLetterFile: settings.delivery.deadLetterFile,
    deadLetterLimits: settings.delivery.deadLetterLimits,
    failures,
    ...(runtime.userAgent ? { userAgent: runtime.userAgent } : {}),
    deliveries: service.deliveries,
  });
  const { router } = sinks;
  const owners = new OwnerResolver({ log });
  lifecycle.defer(() => {
    for (const file of sinks.deadLetterFiles) file.close();
  });
  lifecycle.defer(async () => {
    logShutdownReport(await router.close(settings.delivery.shutdownTimeoutMs), log);
  });
  service.observeSinks(() => router.sinks, {
    failures,
    deadLetterFiles: () => sinks.deadLetterFiles,
    owners,
    outcomes,
  });
  // Per cluster, labelled with its events' `cluster` (docs/deploy.md, "Health and metrics").
  service.observeClusters(() =>
    clusters().map((cluster) => ({
      name: cluster.name,
      informers: cluster.allInformers(),
      connections: cluster.client.connectionStats(),
      state: cluster.recorder,
      synced: cluster.synced,
    })),
  );
  if (settings.delivery.sinks.length > 0) {
    log.info(`delivering to ${settings.delivery.sinks.map(describeSinkSpec).join(', ')}`);
  }
  return { sinks, outputClosed, owners };
}

/**
 * The pipeline: normalize → store/diff → (who join) → the watch's rules → the leader gate → the sinks.
 * Resource names in rules (`redact:`, filters) are resolved through discovery, fed by each cluster's
 * wiring (clusterWiring).
 */
async function assemblePipeline(
  context: WatchContext,
  parts: {
    router: SinkSet['router'];
    service: ServiceRuntime;
    owners: OwnerResolver;
    outcomes: OutcomeEngine | undefined;
    /** The first cluster's (a managed admission certificate lives there). */
    client: KubeClient | undefined;
    /** --fleet: delivers a cluster's changes only while this replica owns it (src/state/fleet-fence.ts). */
    fence: EventStage<KubediffEvent> | undefined;
  },
): Promise<{ pipeline: Pipeline; resolver: DiscoveryResolver; who: WhoRuntime }> {
  const { settings, log, failures, lifecycle } = context;
  const { router, service } = parts;
  const resolver = new DiscoveryResolver();
  // Secrets (decided by resource type), `redact:` rules and ignored paths, before anything is stored.
  const normalizer = new Normalizer({
    ignore: new PathMatcher(settings.ignoredPaths),
    redactor: new Redactor(settings.redaction.key),
    redactPaths: redactPathsFor(settings.redaction.rules, resolver.resolve),
  });
  // --audit-listen, --admission-listen: who made each change, joined before the rules so that user
  // filters see it (src/who/).
  const who = lifecycle.use(
    await startWho(settings, { client: parts.client, normalizer, log, failures }),
    (who) => who.stop(),
  );
  await service.observeWho(who.metrics);
  // What each ConfigMap and Secret change reaches (docs/used-by.md): an observer of the objects as
  // served, and a stage after the owners (it names workloads by their root owner).
  const usedBy = settings.usedBy.enabled
    ? new UsedByTracker({ maxObjects: settings.usedBy.maxObjects, owners: parts.owners, log, failures })
    : undefined;
  service.observeUsedBy(usedBy);
  const rules: EventStage[] = [
    // Owners first (every deletion passes it, reported or not), then what a change reaches, then who
    // made it, then what the user asked for.
    ownerStage(parts.owners),
    ...(usedBy ? [usedBy.stage()] : []),
    ...(who.stage ? [who.stage] : []),
    // Event types, the config file's global rules and --explain (src/events/watch-rules.ts).
    filterStage('rules', watchRules(settings, { router, log, resolver, failures })),
  ];
  // Each cluster's recorder observes its own source (ClusterSupervisor.start); the service every one, and
  // the outcome engine (it reports OUTCOMEs into the pipeline it observes).
  const { outcomes } = parts;
  const pipeline = new Pipeline({
    normalizer,
    rules,
    handover: [...service.stages, ...(parts.fence ? [parts.fence] : [])],
    delivery: router,
    observers: [...(usedBy ? [usedBy] : []), service, ...(outcomes ? [outcomes] : [])],
    failures,
  });
  outcomes?.reportTo((outcome) => pipeline.report(outcome));
  return { pipeline, resolver, who };
}

/** What each cluster's watcher is given; the names rules use resolve against what any cluster offers. */
function clusterWiring(
  { settings, log }: WatchContext,
  pipeline: Pipeline,
  resolver: DiscoveryResolver,
  flowControl: SinkSet['flowControl'],
  who: WhoRuntime,
  fence: FleetFence | undefined,
): (cluster: ClusterSupervisor) => ClusterWiring {
  // By cluster name: a fleet's replica opens a cluster anew each time it comes to own it.
  const offered = new Map<string, ResourceType[]>();
  // What every cluster watches now: reviews of other types name nothing (src/who/).
  const watched = new Map<string, readonly ResourceType[]>();
  let namesChecked = false;
  return (cluster) => ({
    pipeline,
    // A fleet's cluster pauses while the fence holds its changes.
    flowControl: fence ? () => fence.flowControl(cluster.name) ?? flowControl() : flowControl,
    onSelection: (selection) => {
      offered.set(cluster.name, [...selection.watched, ...selection.skipped.map((skipped) => skipped.type)]);
      resolver.update([...offered.values()].flat());
      watched.set(cluster.name, selection.watched);
      who.watching([...watched.values()].flat());
      // Checked on the first discovery, before any informer starts.
      if (namesChecked) return;
      namesChecked = true;
      checkResourceNames(selection, log);
      checkRedactRuleNames(settings.redaction.rules, selection, log);
    },
  });
}

/**
 * Each cluster's recorder (--state) learns what the sinks delivered; it says "catching up from …" now, or
 * "recording state in …" once its baseline is durable (src/state/recorder.ts).
 */
async function attachRecorders(
  clusters: readonly ClusterSupervisor[],
  router: SinkSet['router'],
): Promise<void> {
  if (!clusters.some((cluster) => cluster.recorder)) return;
  const { sinkProgress } = await import('../state/write-queue.ts');
  for (const cluster of clusters) {
    const recorder = cluster.recorder;
    if (!recorder) continue;
    recorder.attach(
      sinkProgress(() => router.sinks),
      () => cluster.allInformers(),
    );
  }
}

/** The standard output's sink (unless `-o none`, or the file lists it), then the other sinks. */
function sinkSpecs(settings: WatchSettings): SinkSpec[] {
  return [
    ...outputSinkSpecs(settings, { isTTY: process.stdout.isTTY === true, env: process.env }),
    ...settings.delivery.sinks,
  ];
}

/** A signal is the user's (or the kubelet's) request: say it is heard. A closed stdout needs no words. */
function logStop(log: Logger, reason: string, shutdownTimeoutMs: number, when: string): void {
  if (reason.startsWith('SIG')) {
    log.info(
      `stopping on ${reason}${when}: delivering what is queued (at most ${formatDuration(shutdownTimeoutMs)}), then exiting.`,
    );
  } else {
    log.debug(`stopping${when}: ${reason}`);
  }
}
