// `--listen <addr>`: the HTTP endpoints a kubelet and a Prometheus use.
//   GET /healthz  200 while the process runs and its event loop answers (liveness).
//   GET /readyz   200 once the initial sync is done and no watch has been failing for longer than
//                 --ready-failure-threshold; 503 with the reason otherwise (readiness).
//   GET /metrics  Prometheus text format (src/service/metrics.ts).
// Readiness counts failures that concern the connection or the server (network, TLS, 401, 5xx, 429);
// a resource that is forbidden (403) or gone (404) is a lasting configuration matter, reported in the
// logs and in kubediff_watch_failures_total, and does not make the replica unready forever.
// Whoever can reach the port reads /readyz: its reasons name the resource and the kind of failure,
// never the error's own message, which carries the API server's URL and addresses (those are logged).

import type { Server } from 'node:http';
import type { Informer } from '../informer/informer.ts';
import type { ReflectorState } from '../informer/reflector.ts';
import { KubeError, type KubeFailureKind } from '../kube/errors.ts';
import { qualifiedName } from '../kube/types.ts';
import { boundAddress, closeServer, createServer, listenOn } from '../util/http-server.ts';
import type { Logger } from '../util/log.ts';
import { guardedServerOptions, ListenerGuard, type ListenerLimits } from './listener-guard.ts';
import type { KubediffMetrics } from './metrics.ts';

export interface ReadinessReport {
  ready: boolean;
  reason: string;
}

/** Tracks what /readyz answers. */
export class Readiness {
  private readonly thresholdMs: number;
  private readonly now: () => number;
  private synced = false;
  private stopping = false;
  /** Informers failing now, and since when (the first failure of the episode). */
  private readonly failingSince = new Map<Informer, { since: number; reason: string }>();
  /**
   * Several clusters: those not synced yet, by label (`context "a"`, `cluster "eu"`), with why (no
   * address: /readyz is unauthenticated).
   */
  private readonly clustersDown = new Map<string, string>();

  constructor(options: { thresholdMs: number; now?: () => number }) {
    this.thresholdMs = options.thresholdMs;
    this.now = options.now ?? Date.now;
  }

  /** The initial sync is over (every informer listed, or reported why it cannot). */
  markSynced(): void {
    this.synced = true;
  }

  /** A cluster of several could not start (unreachable, forbidden): not ready until clusterSynced. */
  markClusterDown(cluster: string, reason: string): void {
    this.clustersDown.set(cluster, reason);
  }

  clusterSynced(cluster: string): void {
    this.clustersDown.delete(cluster);
  }

  /** Shutting down: no longer ready. */
  markStopping(): void {
    this.stopping = true;
  }

  /** InformerHandler.onState. */
  observeState(informer: Informer, state: ReflectorState): void {
    if (state.phase === 'failing') {
      if (state.slow) {
        // 403/404: a lasting condition of one resource, not an outage (see the header).
        this.failingSince.delete(informer);
        return;
      }
      const known = this.failingSince.get(informer);
      const reason = `${qualifiedName(informer.type)}: ${READINESS_REASONS[state.error.kind]}`;
      this.failingSince.set(informer, { since: known?.since ?? this.now(), reason });
    } else if (state.phase === 'watching' || state.phase === 'stopped') {
      this.failingSince.delete(informer);
    }
  }

  report(): ReadinessReport {
    if (this.stopping) return { ready: false, reason: 'shutting down' };
    if (!this.synced) return { ready: false, reason: 'initial sync in progress' };
    if (this.clustersDown.size > 0) {
      const down = [...this.clustersDown].map(([cluster, reason]) => `${cluster}: ${reason}`);
      return { ready: false, reason: `not synced yet: ${down.join('; ')}` };
    }
    const now = this.now();
    let failing = 0;
    let example: string | undefined;
    let longest = 0;
    for (const { since, reason } of this.failingSince.values()) {
      const ms = now - since;
      if (ms <= this.thresholdMs) continue;
      failing++;
      if (ms >= longest) {
        longest = ms;
        example = reason;
      }
    }
    if (failing > 0) {
      return {
        ready: false,
        reason: `${failing} watch${failing === 1 ? '' : 'es'} failing for more than ${Math.round(this.thresholdMs / 1000)}s (${example}; details in the log)`,
      };
    }
    return { ready: true, reason: 'ok' };
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

export interface HealthServerOptions {
  readiness: Readiness;
  metrics: KubediffMetrics;
  log: Logger;
}

/** Documented in docs/deploy.md: a kubelet's probes and a Prometheus need few connections. */
export const HEALTH_LISTENER_LIMITS: ListenerLimits = {
  maxConnections: 32,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
};

export class HealthServer {
  private readonly server: Server;
  /** Its connections' guard (limits, contained errors), read by the metrics. */
  readonly listener: ListenerGuard;

  private constructor(server: Server, listener: ListenerGuard) {
    this.server = server;
    this.listener = listener;
  }

  /** Listens on `address`; rejects with a UsageError when the port cannot be had. */
  static async start(address: string, options: HealthServerOptions): Promise<HealthServer> {
    const server = createServer(guardedServerOptions(HEALTH_LISTENER_LIMITS));
    const listener = ListenerGuard.attach(server, 'health', HEALTH_LISTENER_LIMITS, options.log);
    server.on('request', (request, response) => {
      void handle(options, request.method ?? 'GET', request.url ?? '/', response);
    });
    await listenOn(server, address, '--listen');
    const instance = new HealthServer(server, listener);
    options.metrics.observeListener(listener);
    options.log.info(`serving /healthz, /readyz and /metrics on http://${instance.address}`);
    return instance;
  }

  /** host:port actually bound (the port is known even with :0). */
  get address(): string {
    return boundAddress(this.server);
  }

  close(): Promise<void> {
    return closeServer(this.server);
  }
}

async function handle(
  options: HealthServerOptions,
  method: string,
  url: string,
  response: import('node:http').ServerResponse,
): Promise<void> {
  const path = url.split('?')[0];
  const send = (status: number, body: string, contentType = 'text/plain; charset=utf-8') => {
    response.writeHead(status, { 'content-type': contentType, 'cache-control': 'no-store' });
    response.end(method === 'HEAD' ? undefined : body);
  };
  if (path !== '/healthz' && path !== '/livez' && path !== '/readyz' && path !== '/metrics') {
    send(404, 'not found: try /healthz, /readyz or /metrics\n');
    return;
  }
  if (method !== 'GET' && method !== 'HEAD') {
    response.setHeader('allow', 'GET, HEAD');
    send(405, 'method not allowed\n');
    return;
  }
  try {
    if (path === '/healthz' || path === '/livez') {
      send(200, 'ok\n');
    } else if (path === '/readyz') {
      const report = options.readiness.report();
      send(report.ready ? 200 : 503, `${report.ready ? 'ok' : `not ready: ${report.reason}`}\n`);
    } else {
      const { contentType, body } = await options.metrics.render();
      send(200, body, contentType);
    }
  } catch (error) {
    options.log.warn(`${path}: ${error instanceof Error ? error.message : String(error)}`);
    if (!response.headersSent) send(500, 'internal error\n');
  }
}
