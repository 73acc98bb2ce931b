// `--listen <addr>`: the HTTP endpoints a kubelet and a Prometheus use.
//   GET /healthz  200 while the process runs and its event loop answers (liveness).
//   GET /readyz   200 while this replica can do its job, with the conditions of a partial failure in its
//                 body; 503 with the reason otherwise (readiness: what it means is in readiness.ts).
//   GET /startupz 200 once the initial sync is over (a startup probe), 503 before.
//   GET /metrics  Prometheus text format (src/service/metrics.ts).

import type { Server } from 'node:http';
import { boundAddress, closeServer, createServer, listenOn } from '../util/http-server.ts';
import { guardedServerOptions, ListenerGuard, type ListenerLimits } from '../util/listener-guard.ts';
import type { Logger } from '../util/log.ts';
import type { KubediffMetrics } from './metrics.ts';
import type { Readiness } from './readiness.ts';

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
    options.log.info(`serving /healthz, /readyz, /startupz and /metrics on http://${instance.address}`);
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

const PATHS = new Set(['/healthz', '/livez', '/readyz', '/startupz', '/metrics']);

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
  if (!PATHS.has(path ?? '')) {
    send(404, 'not found: try /healthz, /readyz, /startupz or /metrics\n');
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
      if (!report.ready) send(503, `not ready: ${report.reason}\n`);
      else send(200, report.degraded ? `ok; ${report.degraded}\n` : 'ok\n');
    } else if (path === '/startupz') {
      if (options.readiness.started) send(200, 'ok\n');
      else send(503, 'not started: initial sync in progress\n');
    } else {
      const { contentType, body } = await options.metrics.render();
      send(200, body, contentType);
    }
  } catch (error) {
    options.log.warn(`${path}: ${error instanceof Error ? error.message : String(error)}`);
    if (!response.headersSent) send(500, 'internal error\n');
  }
}
