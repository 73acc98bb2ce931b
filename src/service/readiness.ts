// What /readyz and /startupz answer (src/service/health-server.ts serves them; docs/deploy.md, "Health and
// metrics").
//
// Ready means "this replica can do its job": its initial sync is over, it is not shutting down, and it can
// read every cluster it waits for. A cluster cannot be read when every watch of a type the API server serves
// itself (the core group, /api/v1: never a CRD's conversion webhook nor an aggregated API) has been failing
// for longer than --ready-failure-threshold; when no core type is watched (-r), every watch. Those fail
// together when the connection, the credentials or the API server itself fail.
// A part of a cluster failing (a CRD whose conversion webhook does not answer, an aggregated API that is
// down, one type too large to read) fails every replica alike and is no replica's fault: unready, all of them
// would leave the admission webhook's Service and hold up node drains and rollouts, and nothing would get
// better. It is a condition: named in the body of a 200 (`ok; 1 watch failing …`), and in the metric
// kubediff_watch_failing. Forbidden (403) and no longer served (404) are lasting matters of configuration,
// logged and counted, and neither judged nor named here.
// Sinks do not count: a receiver that fails, fails for every replica, and a standby delivers nothing. Nor
// does the Lease: a standby is ready (it watches, and takes over at once).
//
// Started (/startupz, for a startup probe): the initial sync is over; with several clusters, each awaited one
// has synced or said why it cannot start (it is then retried in the background: killing the container would
// not help it).
//
// Whoever can reach the port reads the answers: they name the resource and the kind of failure, never the
// error's own message, which carries the API server's URL and addresses (the log has those).

import type { Informer } from '../informer/informer.ts';
import type { ReflectorState } from '../informer/reflector.ts';
import { KubeError, type KubeFailureKind } from '../kube/errors.ts';
import { qualifiedName } from '../kube/types.ts';
import { groupedCount } from '../util/count-text.ts';

export interface ReadinessReport {
  ready: boolean;
  /** Why not ready; 'ok' when ready. */
  reason: string;
  /** Ready, and part of a cluster failing for longer than the threshold: what, for the body of /readyz. */
  degraded?: string;
}

/** One informer as readiness follows it. */
interface Followed {
  /** Its cluster's name ('' for a single unnamed one). */
  cluster: string;
  /** Of the core group: served by the API server itself. */
  core: boolean;
  /** 403/404 now: left out of every judgement. */
  slow: boolean;
  /** Failing now (not 403/404): since when (the episode's first failure), and what /readyz says of it. */
  failing: { since: number; reason: string } | undefined;
}

/** Tracks what /readyz and /startupz answer. */
export class Readiness {
  private readonly thresholdMs: number;
  private readonly now: () => number;
  private synced = false;
  private stopping = false;
  private readonly informers = new Map<Informer, Followed>();
  /**
   * Several clusters: those not synced yet, by label (`context "a"`, `cluster "eu"`), with why (no
   * address: /readyz is unauthenticated); `syncing` are still in their first attempt.
   */
  private readonly clustersDown = new Map<string, string>();
  private readonly syncing = new Set<string>();

  constructor(options: { thresholdMs: number; now?: () => number }) {
    this.thresholdMs = options.thresholdMs;
    this.now = options.now ?? Date.now;
  }

  /** The initial sync is over (every informer listed, or reported why it cannot). */
  markSynced(): void {
    this.synced = true;
  }

  /**
   * A cluster of several is not synced: `reason` undefined while its first attempt runs, else why it could
   * not start. Not ready until clusterSynced.
   */
  markClusterDown(cluster: string, reason: string | undefined): void {
    this.clustersDown.set(cluster, reason ?? 'initial sync in progress');
    if (reason === undefined) this.syncing.add(cluster);
    else this.syncing.delete(cluster);
  }

  clusterSynced(cluster: string): void {
    this.clustersDown.delete(cluster);
    this.syncing.delete(cluster);
  }

  /** Shutting down: no longer ready. */
  markStopping(): void {
    this.stopping = true;
  }

  /** InformerHandler.onState, with the informer's cluster. */
  observeState(informer: Informer, state: ReflectorState, cluster = ''): void {
    if (state.phase === 'stopped') {
      this.informers.delete(informer);
      return;
    }
    let followed = this.informers.get(informer);
    if (!followed) {
      followed = { cluster, core: informer.type.group === '', slow: false, failing: undefined };
      this.informers.set(informer, followed);
    }
    if (state.phase === 'failing') {
      followed.slow = state.slow;
      followed.failing = state.slow
        ? undefined
        : {
            since: followed.failing?.since ?? this.now(),
            reason: `${qualifiedName(informer.type)}: ${READINESS_REASONS[state.error.kind]}`,
          };
    } else if (state.phase === 'watching') {
      followed.slow = false;
      followed.failing = undefined;
    }
  }

  /** /startupz: the initial sync is over (see the header). */
  get started(): boolean {
    return this.synced && this.syncing.size === 0;
  }

  report(): ReadinessReport {
    if (this.stopping) return { ready: false, reason: 'shutting down' };
    if (!this.synced) return { ready: false, reason: 'initial sync in progress' };
    if (this.clustersDown.size > 0) {
      const down = [...this.clustersDown].map(([cluster, reason]) => `${cluster}: ${reason}`);
      return { ready: false, reason: `not synced yet: ${down.join('; ')}` };
    }
    const now = this.now();
    const longFailing = (followed: Followed) =>
      followed.failing !== undefined && now - followed.failing.since > this.thresholdMs;
    const unreadable: Followed[] = [];
    for (const judged of this.judgedByCluster().values()) {
      if (judged.length > 0 && judged.every(longFailing)) unreadable.push(...judged);
    }
    if (unreadable.length > 0) return { ready: false, reason: this.describe(unreadable, now) };
    const partial = [...this.informers.values()].filter(longFailing);
    if (partial.length > 0) return { ready: true, reason: 'ok', degraded: this.describe(partial, now) };
    return { ready: true, reason: 'ok' };
  }

  /** Per cluster, the watches whose failure says the cluster cannot be read (see the header). */
  private judgedByCluster(): Map<string, Followed[]> {
    const byCluster = new Map<string, { core: Followed[]; all: Followed[] }>();
    for (const followed of this.informers.values()) {
      if (followed.slow) continue;
      let entry = byCluster.get(followed.cluster);
      if (!entry) {
        entry = { core: [], all: [] };
        byCluster.set(followed.cluster, entry);
      }
      entry.all.push(followed);
      if (followed.core) entry.core.push(followed);
    }
    return new Map([...byCluster].map(([cluster, { core, all }]) => [cluster, core.length > 0 ? core : all]));
  }

  /** `2 watches failing for more than 60s (pods: cannot reach the API server; details in the log)`. */
  private describe(failing: readonly Followed[], now: number): string {
    let example = '';
    let longest = -1;
    for (const { failing: episode } of failing) {
      if (episode && now - episode.since > longest) {
        longest = now - episode.since;
        example = episode.reason;
      }
    }
    const watches = `${groupedCount(failing.length)} watch${failing.length === 1 ? '' : 'es'}`;
    return `${watches} failing for more than ${Math.round(this.thresholdMs / 1000)}s (${example}; details in the log)`;
  }
}

/** What /readyz says of a cluster that could not start: its kind of failure, never its address. */
export function readinessReasonOf(error: unknown): string {
  return error instanceof KubeError ? READINESS_REASONS[error.kind] : 'cannot start (details in the log)';
}

/** What /readyz says of each kind of failure: no URL, no address (the log has the details). */
const READINESS_REASONS: Record<KubeFailureKind, string> = {
  network: 'cannot reach the API server',
  tls: 'the TLS handshake with the API server fails',
  unauthorized: 'the API server rejects the credentials (401)',
  forbidden: 'forbidden (403)',
  'not-found': 'no longer served (404)',
  gone: 'its resourceVersion expired (410)',
  throttled: 'the API server asks to slow down (429)',
  server: 'the API server fails (5xx)',
  request: 'the API server refuses the request (4xx)',
  'too-large': 'an object is larger than kubediff reads at once',
};
