// `kubediff watch`: connect, discover, sync, then report every change until
// SIGINT or SIGTERM. Data flows one way: informers → event builder →
// event filter → router → sinks (stdout, Slack, webhooks), each with its own
// queue. On stop: stop watching, let the sinks deliver what is queued within
// --shutdown-timeout, report what they could not, exit 0.

import { redactionSignature, redactPathsFor } from '../config/redaction.ts';
import { describeSinkSpec } from '../config/sink-settings.ts';
import type { WatchSettings } from '../config/watch-settings.ts';
import { PathMatcher } from '../diff/ignore.ts';
import { Normalizer } from '../diff/normalize.ts';
import { Redactor } from '../diff/redact.ts';
import type { ChangeEvent } from '../events/event.ts';
import { EventBuilder } from '../events/event-builder.ts';
import { DiscoveryResolver, eventGate } from '../events/gate.ts';
import { ClusterWatcher } from '../informer/cluster-watcher.ts';
import type { ReflectorTiming } from '../informer/reflector.ts';
import { type HttpSettings, KubeClient } from '../kube/client.ts';
import { explainConnectionFailure } from '../kube/connection-errors.ts';
import { Discovery } from '../kube/discovery.ts';
import { loadKubeconfig } from '../kube/kubeconfig.ts';
import { SyncProgress } from '../service/progress.ts';
import { type ServiceOptions, ServiceRuntime } from '../service/service.ts';
import { logShutdownReport } from '../sinks/router.ts';
import { createSinks, type SinkSet, type SinkSpec } from '../sinks/setup.ts';
import { StateDatabase } from '../state/database.ts';
import { StateRecorder, selectionSignature, sinkProgress } from '../state/recorder.ts';
import { formatDuration } from '../util/duration.ts';
import { EventFailures } from '../util/event-failures.ts';
import type { Logger } from '../util/log.ts';
import { checkRedactRuleNames, checkResourceNames } from './resource-name-check.ts';

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
}

export async function runWatch(settings: WatchSettings, runtime: WatchRuntime): Promise<void> {
  // One exception while processing one change costs that change at that stage, never the watch.
  const failures = new EventFailures(runtime.log);
  // --state (docs/state.md): opened first, so that a damaged or foreign file stops kubediff at once.
  const recorder = settings.state
    ? new StateRecorder({
        database: StateDatabase.open(settings.state.path),
        log: runtime.log,
        signature: selectionSignature({ ...settings, redaction: redactionSignature(settings.redaction) }),
        retention: settings.state.retention,
        failures,
        ...(runtime.limits?.stateMaxBacklogBytes !== undefined
          ? { maxBacklogBytes: runtime.limits.stateMaxBacklogBytes }
          : {}),
      })
    : undefined;
  const identity = loadKubeconfig({ kubeconfig: settings.kubeconfig, context: settings.context });
  const client = await KubeClient.create(identity, { http: runtime.http, log: runtime.log });
  const discovery = new Discovery(client);
  const service = await ServiceRuntime.start(runtime.service, {
    client,
    log: runtime.log,
    version: runtime.version ?? 'dev',
    standbyMaxBufferBytes: runtime.limits?.standbyMaxBufferBytes,
  }).catch(async (error: unknown) => {
    await client.close();
    throw error;
  });

  let stopOutput: (reason: string) => void = () => {};
  const outputClosed = new Promise<string>((resolve) => {
    stopOutput = resolve;
  });
  const specs: SinkSpec[] = [
    ...(settings.output === 'none'
      ? []
      : [
          {
            type: 'stdout' as const,
            format: settings.output,
            color: process.stdout.isTTY === true && !process.env.NO_COLOR,
          },
        ]),
    ...settings.delivery.sinks,
  ];
  let sinks: SinkSet;
  try {
    sinks = createSinks(specs, {
      log: runtime.log,
      stdout: process.stdout,
      onStdoutClosed: (error) =>
        stopOutput(error.code === 'EPIPE' ? 'stdout closed' : `stdout failed: ${error.message}`),
      deadLetterFile: settings.delivery.deadLetterFile,
      deadLetterLimits: settings.delivery.deadLetterLimits,
      failures,
      ...(runtime.userAgent ? { userAgent: runtime.userAgent } : {}),
    });
  } catch (error) {
    await service.stop();
    await client.close();
    throw error;
  }
  const { router } = sinks;
  const deadLetterFiles = sinks.deadLetterFiles;
  service.connect(router, {
    failures,
    deadLetterFiles: () => deadLetterFiles,
    ...(recorder ? { state: recorder } : {}),
  });
  if (settings.delivery.sinks.length > 0) {
    runtime.log.info(`delivering to ${settings.delivery.sinks.map(describeSinkSpec).join(', ')}`);
  }

  // Event types, the config file's global rules and --explain (src/events/gate.ts).
  const resolver = new DiscoveryResolver();
  const gate = eventGate(settings, { router, log: runtime.log, resolver, failures });
  const emit = (event: ChangeEvent) => {
    const passed = gate(event);
    if (passed) {
      service.emit(passed);
      recorder?.recordEvent(passed);
    }
  };
  // Secrets (decided by resource type), `redact:` rules and ignored paths, before anything is stored.
  const normalizer = new Normalizer({
    ignore: new PathMatcher(settings.ignoredPaths),
    redactor: new Redactor(settings.redaction.key),
    redactPaths: redactPathsFor(settings.redaction.rules, resolver.resolve),
  });
  const builder = new EventBuilder({ cluster: settings.clusterName ?? identity.contextName, emit, failures });

  const handler = recorder ? recorder.handler(service.handler(builder)) : service.handler(builder);
  let namesChecked = false;
  const watcher = new ClusterWatcher({
    client,
    discovery,
    selection: {
      include: settings.resources,
      exclude: settings.excludeResources,
      namespaceScoped: settings.namespaces.length > 0 || (settings.filter?.namespaces?.length ?? 0) > 0,
    },
    namespaces: settings.namespaces,
    excludeNamespaces: settings.excludeNamespaces,
    labelSelector: settings.labelSelector,
    normalize: (type, object) => normalizer.normalize(type, object),
    initial: settings.initial,
    handler,
    ...(recorder ? { planInformer: recorder.plan.bind(recorder) } : {}),
    log: runtime.log,
    timing: runtime.timing,
    rediscoveryIntervalMs: runtime.rediscoveryIntervalMs,
    flowControl: sinks.flowControl,
    failures,
    onSelection: (selection) => {
      recorder?.noteSelection(selection);
      resolver.update([...selection.watched, ...selection.skipped.map((skipped) => skipped.type)]);
      // Checked on the first discovery, before any informer starts.
      if (namesChecked) return;
      namesChecked = true;
      checkResourceNames(selection, runtime.log);
      checkRedactRuleNames(settings.redaction.rules, selection, runtime.log);
    },
  });

  if (recorder) {
    recorder.attach(
      sinkProgress(() => router.sinks),
      () => watcher.allInformers(),
    );
    runtime.log.info(
      recorder.hasPreviousState
        ? `catching up from ${settings.state?.path}: changes made while kubediff was not running are reported offline.`
        : `recording state in ${settings.state?.path}: the next start will catch up on what it missed.`,
    );
  }
  // A stop (SIGINT/SIGTERM, or stdout gone) is honoured at any moment, the initial sync included: a
  // sync paused by a stalled stdout reader, or a LIST the API server never answers, would otherwise
  // hold it off until the kubelet's SIGKILL.
  const stop = Promise.race([runtime.stopRequested, outputClosed]);
  const progress = new SyncProgress(process.stderr);
  try {
    progress.start(() => watcher.allInformers());
    try {
      const starting = watcher.start();
      const first = await Promise.race([
        starting.then((selection) => ({ selection })),
        stop.then((reason) => ({ reason })),
      ]);
      if ('reason' in first) {
        // watcher.stop() (below) ends the sync; what it throws then is the stop, not an error.
        starting.catch(() => undefined);
        logStop(runtime.log, first.reason, settings.delivery.shutdownTimeoutMs, ' during the initial sync');
        return;
      }
      if (first.selection) recorder?.reportVanishedTypes(first.selection, handler);
    } catch (error) {
      throw explainConnectionFailure(error, identity);
    } finally {
      progress.stop();
    }
    service.synced(watcher);
    const informers = watcher.allInformers();
    const count = new Set(informers.map((informer) => informer.type)).size;
    const failing = new Set(
      informers.filter((informer) => !informer.hasSynced).map((informer) => informer.type),
    ).size;
    runtime.log.info(
      `watching ${count} resource type${count === 1 ? '' : 's'} on ${identity.server} (context "${identity.contextName}")` +
        (failing > 0 ? `; ${failing} of them failing, retried in the background (see above)` : ''),
    );
    logStop(runtime.log, await stop, settings.delivery.shutdownTimeoutMs, '');
  } finally {
    service.stopping();
    await watcher.stop();
    const reports = await router.close(settings.delivery.shutdownTimeoutMs);
    // After the sinks finished: everything they were given is recorded as reported.
    recorder?.close();
    for (const file of sinks.deadLetterFiles) file.close();
    logShutdownReport(reports, runtime.log);
    // After the sinks drained: a leader's last checkpoint covers what they delivered.
    await service.stop();
    await client.close();
  }
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
