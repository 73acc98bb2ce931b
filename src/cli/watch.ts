// `kubediff watch`: connect, discover, sync, then report every change until SIGINT or SIGTERM. This is
// wiring and lifecycle only: the path of a change is the Pipeline (src/events/pipeline.ts), assembled
// here in one place from its parts, and everything opened is closed by one Lifecycle, in reverse order:
// on stop, watching ends first, then the sinks deliver what is queued within --shutdown-timeout and
// report what they could not, then the Lease is released, the connections closed and the state file
// committed.
import { redactPathsFor } from '../config/redaction.ts';
import { describeSinkSpec } from '../config/sink-settings.ts';
import type { WatchSettings } from '../config/watch-settings.ts';
import { PathMatcher } from '../diff/ignore.ts';
import { Normalizer } from '../diff/normalize.ts';
import { Redactor } from '../diff/redact.ts';
import { AuditJoin } from '../events/audit-join.ts';
import { DiscoveryResolver, eventGate } from '../events/gate.ts';
import { OwnerResolver, ownerStage } from '../events/owners.ts';
import { type EventStage, filterStage, Pipeline } from '../events/pipeline.ts';
import type { Informer } from '../informer/informer.ts';
import type { ReflectorTiming } from '../informer/reflector.ts';
import type { HttpSettings } from '../kube/client.ts';
import { explainConnectionFailure } from '../kube/connection-errors.ts';
import type { ResourceType } from '../kube/types.ts';
import { SyncProgress } from '../service/progress.ts';
import { type ServiceOptions, ServiceRuntime } from '../service/service.ts';
import { logShutdownReport } from '../sinks/router.ts';
import { createSinks, type SinkSpec } from '../sinks/setup.ts';
import { openTimelineReader } from '../state/open.ts';
import { sinkProgress } from '../state/recorder.ts';
import type { Exposure } from '../ui/exposure.ts';
import { UiServer } from '../ui/server.ts';
import { formatDuration } from '../util/duration.ts';
import { errorMessage, UsageError } from '../util/errors.ts';
import { EventFailures } from '../util/event-failures.ts';
import { Lifecycle } from '../util/lifecycle.ts';
import type { Logger } from '../util/log.ts';
import { clusterPlans } from './cluster-plans.ts';
import { checkRedactRuleNames, checkResourceNames } from './resource-name-check.ts';
import { type ClusterWiring, clusterLogger, WatchedCluster } from './watch-cluster.ts';

export interface WatchRuntime {
  log: Logger;
  /** Resolves when the user asks to stop (SIGINT/SIGTERM). */
  stopRequested: Promise<string>;
  /** Test and tuning knobs from the environment (see README, "Tuning"). */
  timing: Partial<ReflectorTiming>;
  /** How to talk to the API server: protocol, PINGs, connection and read limits. */
  http?: Partial<HttpSettings>;
  rediscoveryIntervalMs: number | undefined;
  /** Sent to Slack and webhooks. */
  userAgent?: string;
  /** Memory bounds from the environment (README, "Tuning"); defaults where absent. */
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

async function watch(settings: WatchSettings, runtime: WatchRuntime, lifecycle: Lifecycle): Promise<void> {
  // On a terminal, the initial sync's progress line; every log line of the watch clears it first.
  const progress = new SyncProgress(process.stderr);
  lifecycle.defer(() => progress.stop());
  const log = progress.logger(runtime.log);
  // One exception while processing one change costs that change at that stage, never the watch.
  const failures = new EventFailures(log);
  const plans = clusterPlans(settings);
  const several = plans.length > 1;
  const leaderElection = runtime.service?.leaderElection;
  if (several && leaderElection) {
    throw new UsageError(
      '--leader-elect elects one replica per cluster (its Lease lives in that cluster), so it watches one cluster; run one leader-elected pair per cluster, without --context repeated, --all-contexts or several clusters:.',
    );
  }
  // Per cluster, in order: its state (--state, docs/state.md), opened before anything is watched, so
  // that a damaged or foreign file, or a cluster another process records in the same database, stops
  // kubediff at once (committed last, once the sinks have finished with everything they were given;
  // leader-elected with PostgreSQL, only the leader claims the cluster and records), then its client.
  const clusters: WatchedCluster[] = [];
  for (const plan of plans) {
    const clusterLog = several ? clusterLogger(log, plan.label) : log;
    const deps = {
      settings,
      log,
      failures,
      http: runtime.http,
      timing: runtime.timing,
      rediscoveryIntervalMs: runtime.rediscoveryIntervalMs,
      stateMaxBacklogBytes: runtime.limits?.stateMaxBacklogBytes,
      leaderElected: leaderElection && { leaseDurationMs: leaderElection.leaseDurationMs },
    };
    clusters.push(await WatchedCluster.open(plan, deps, lifecycle, clusterLog));
  }
  const first = clusters[0] as WatchedCluster;
  let ui: UiServer | undefined;
  if (runtime.ui && settings.state) {
    // A connection of its own, read-only, off this thread: the page's queries never hold the
    // recorder's writes nor the watch (docs/ui.md).
    const reader = lifecycle.use(await openTimelineReader(settings.state), (reader) => reader.close());
    ui = lifecycle.use(
      await UiServer.start(runtime.ui.address, { flag: '--ui', ...runtime.ui, reader, log }),
      (server) => server.close(),
    );
  }
  // After the sinks drained: the leader's last checkpoint covers what they delivered. The Lease is the
  // first cluster's (--leader-elect watches one).
  const service = lifecycle.use(
    await ServiceRuntime.start(runtime.service, {
      client: first.client,
      log,
      version: runtime.version ?? 'dev',
      standbyMaxBufferBytes: runtime.limits?.standbyMaxBufferBytes,
      takeover: first.recorder?.followsLeadership ? first.recorder : undefined,
    }),
    (service) => service.stop(),
  );
  if (ui) service.observeUi(ui);

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
  });
  const { router } = sinks;
  // The `owner` of every event, looked up in the informers' stores of its cluster (attached below).
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
  });
  // Per cluster, labelled with its events' `cluster` (docs/deploy.md, "Health and metrics").
  service.observeClusters(() =>
    clusters.map((cluster) => ({
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

  // --audit-listen: who made each change, joined before the rules so that user filters see it.
  const auditJoin = settings.audit
    ? new AuditJoin({
        waitMs: settings.audit.waitMs,
        windowMs: settings.audit.windowMs,
        maxPending: settings.audit.maxPending,
        maxRecords: settings.audit.maxRecords,
        retainMs: Math.max(60_000, settings.audit.windowMs),
        log,
      })
    : undefined;
  if (settings.audit && auditJoin) {
    // Imported only here: its HTTPS server stays out of a watch without --audit-listen.
    const { AuditServer } = await import('../service/audit-server.ts');
    const auditServer = lifecycle.use(
      await AuditServer.start({
        listen: settings.audit.listen,
        certFile: settings.audit.certFile,
        keyFile: settings.audit.keyFile,
        clientCAFile: settings.audit.clientCAFile,
        clientNames: settings.audit.clientNames,
        token: settings.audit.token,
        maxRequestBytes: settings.audit.maxRequestBytes,
        onRecords: (records) => auditJoin.offer(records),
        log,
      }),
      (server) => server.close(),
    );
    service.observeAudit({ requests: () => auditServer.stats().requests, join: () => auditJoin.stats() });
    service.observeListener(auditServer.listener);
  }

  // The pipeline: normalize → store/diff → (audit join) → the watch's rules → the leader gate → the sinks.
  // Resource names in rules (`redact:`, filters) are resolved through discovery, fed below.
  const resolver = new DiscoveryResolver();
  const rules: EventStage[] = [
    // Owners first (every deletion passes it, reported or not), then who made it, then what the user asked for.
    ownerStage(owners),
    ...(auditJoin ? [auditJoin] : []),
    // Event types, the config file's global rules and --explain (src/events/gate.ts).
    filterStage('rules', eventGate(settings, { router, log, resolver, failures })),
  ];
  // Each cluster's recorder observes its own source (WatchedCluster.start); the service every one.
  const pipeline = new Pipeline({
    // Secrets (decided by resource type), `redact:` rules and ignored paths, before anything is stored.
    normalizer: new Normalizer({
      ignore: new PathMatcher(settings.ignoredPaths),
      redactor: new Redactor(settings.redaction.key),
      redactPaths: redactPathsFor(settings.redaction.rules, resolver.resolve),
    }),
    rules,
    handover: service.stages,
    delivery: router,
    observers: [service],
    failures,
  });

  // The names rules use resolve against what any cluster offers.
  const offered = new Map<WatchedCluster, ResourceType[]>();
  let namesChecked = false;
  const wiringOf = (cluster: WatchedCluster): ClusterWiring => ({
    pipeline,
    flowControl: sinks.flowControl,
    onSelection: (selection) => {
      offered.set(cluster, [...selection.watched, ...selection.skipped.map((skipped) => skipped.type)]);
      resolver.update([...offered.values()].flat());
      // Checked on the first discovery, before any informer starts.
      if (namesChecked) return;
      namesChecked = true;
      checkResourceNames(selection, log);
      checkRedactRuleNames(settings.redaction.rules, selection, log);
    },
  });
  // After the watch stopped: what waits for its audit record goes on to the sinks, which then drain.
  if (auditJoin) lifecycle.defer(() => auditJoin.close());
  for (const cluster of clusters) {
    owners.attach(cluster.name || undefined, (group, kind, namespace, name) =>
      cluster.findObject(group, kind, namespace, name),
    );
  }
  lifecycle.defer(async () => {
    await Promise.all(clusters.map((cluster) => cluster.stop()));
  });
  // Stop requested: not ready any more (a kubelet stops routing; a standby may prepare).
  lifecycle.defer(() => service.stopping());

  for (const cluster of clusters) {
    const recorder = cluster.recorder;
    if (!recorder) continue;
    recorder.attach(
      sinkProgress(() => router.sinks),
      () => cluster.allInformers(),
    );
    const clusterLog = several ? clusterLogger(log, cluster.label) : log;
    clusterLog.info(
      recorder.hasPreviousState
        ? `catching up from ${recorder.label}: changes made while kubediff was not running are reported offline.`
        : `recording state in ${recorder.label}: the next start will catch up on what it missed.`,
    );
  }
  // A stop (SIGINT/SIGTERM, or stdout gone) is honoured at any moment, the initial sync included: a
  // sync paused by a stalled stdout reader, or a LIST the API server never answers, would otherwise
  // hold it off until the kubelet's SIGKILL.
  const stop = Promise.race([runtime.stopRequested, outputClosed]);
  const allInformers = () => clusters.flatMap((cluster) => cluster.allInformers());
  if (several) {
    watchSeveral(clusters, { service, log, wiringOf, allInformers, progress });
  } else {
    try {
      progress.start(() => [{ name: undefined, informers: allInformers() }]);
      const starting = first.start(wiringOf(first));
      const started = await Promise.race([
        starting.then(() => ({ synced: true })),
        stop.then((reason) => ({ reason })),
      ]);
      if ('reason' in started) {
        // watcher.stop() (at close) ends the sync; what it throws then is the stop, not an error.
        starting.catch(() => undefined);
        logStop(log, started.reason, settings.delivery.shutdownTimeoutMs, ' during the initial sync');
        return;
      }
    } catch (error) {
      throw explainConnectionFailure(error, first.identity);
    } finally {
      progress.stop();
    }
    service.synced(allInformers);
    logWatching(log, first);
  }
  logStop(log, await stop, settings.delivery.shutdownTimeoutMs, '');
}

/**
 * Several clusters, each on its own: it syncs and reports as soon as it can, whatever the others do. One
 * that cannot start (unreachable, forbidden) says so in one sentence and is retried in the background;
 * /readyz names every context not synced yet.
 */
function watchSeveral(
  clusters: readonly WatchedCluster[],
  deps: {
    service: ServiceRuntime;
    log: Logger;
    wiringOf: (cluster: WatchedCluster) => ClusterWiring;
    allInformers: () => Informer[];
    progress: SyncProgress;
  },
): void {
  const { service, log, progress } = deps;
  // /readyz waits for every cluster but those `optional: true` in clusters:.
  const awaited = clusters.filter((cluster) => !cluster.optional);
  for (const cluster of awaited) service.clusterDown(cluster.label, undefined);
  service.synced(deps.allInformers);
  // The terminal's progress line names each cluster still in its first attempt; it ends once each has
  // synced or said why it cannot start (then it is retried quietly, and events may be printing).
  const syncing = new Set(clusters);
  progress.start(() =>
    [...syncing].map((cluster) => ({ name: cluster.name, informers: cluster.allInformers() })),
  );
  const settled = (cluster: WatchedCluster) => {
    syncing.delete(cluster);
    if (syncing.size === 0) progress.stop();
  };
  for (const cluster of clusters) {
    const synced = () => {
      service.clusterSynced(cluster.label);
      logWatching(log, cluster);
    };
    cluster.start(deps.wiringOf(cluster)).then(
      (selection) => {
        settled(cluster);
        // undefined: stopped during the sync.
        if (selection) synced();
      },
      (error: unknown) => {
        settled(cluster);
        if (cluster.stopping) return;
        const explained = errorMessage(explainConnectionFailure(error, cluster.identity)).replace(/\.$/, '');
        // The sentence names the context; a cluster named otherwise in clusters: is named too.
        const named = cluster.name === cluster.identity.contextName ? '' : `${cluster.label}: `;
        log.warn(
          `${named}${explained}; retried in the background${cluster.optional ? ' (optional: /readyz does not wait for it)' : ''}.`,
        );
        if (!cluster.optional) service.clusterDown(cluster.label, error);
        cluster.retryInBackground(deps.wiringOf(cluster), (selection) => {
          if (selection) synced();
        });
      },
    );
  }
}

/** "watching N resource types on … (context …)": said of each cluster once it synced. */
function logWatching(log: Logger, cluster: WatchedCluster): void {
  const informers = cluster.allInformers();
  const count = new Set(informers.map((informer) => informer.type)).size;
  const failing = new Set(
    informers.filter((informer) => !informer.hasSynced).map((informer) => informer.type),
  ).size;
  log.info(
    `watching ${count} resource type${count === 1 ? '' : 's'} on ${cluster.where}` +
      (failing > 0 ? `; ${failing} of them failing, retried in the background (see above)` : ''),
  );
}

/** stdout (unless `-o none`), then the Slack and webhook sinks. */
function sinkSpecs(settings: WatchSettings): SinkSpec[] {
  return [
    ...(settings.output === 'none'
      ? []
      : [
          {
            type: 'stdout' as const,
            format: settings.output,
            color: process.stdout.isTTY === true && !process.env.NO_COLOR,
            // --stories: the terminal tells stories (README, "Stories"); JSON stays one event per line.
            ...(settings.stories.terminal && settings.output === 'pretty'
              ? { stories: settings.stories.options }
              : {}),
          },
        ]),
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
