// HTTP/1.1 to the API server, for servers and proxies that do not offer HTTP/2 (and plain http://
// servers). HTTP/1.1 cannot multiplex: each watch holds a connection of its own for as long as it
// runs. The count stays bounded: at most `maxConnections` (undici's pool), of which RESERVED are
// never taken by watches, so discovery, LISTs and the Lease always get through. A watch beyond that
// waits for a free connection (a watch ends every 5 to 10 minutes, and resumes where it was); the
// first wait is logged once, and waiting requests are counted (kubediff_api_requests_waiting).
// A dead connection is found by the watch idle timeout (90 s): HTTP/1.1 has no PING.
import { Agent, type Dispatcher, request } from 'undici';
import { connectTls, type TlsSettings } from './credentials.ts';
import { errorFromTransport, KubeError } from './errors.ts';
import {
  type ConnectionStats,
  noLosses,
  type Transport,
  type TransportRequest,
  type TransportResponse,
} from './transport.ts';

/** Connections kept free of watches, for the requests that end at once. */
const RESERVED = 4;

export interface Http1PoolOptions {
  server: URL;
  tls: () => Promise<TlsSettings>;
  connectTimeoutMs: number;
  maxConnections: number;
  /** Told once, when a watch first has to wait for a connection. */
  onSaturated?: (message: string) => void;
}

export class Http1Pool implements Transport {
  readonly protocol = 'http/1.1' as const;
  private readonly options: Http1PoolOptions;
  private readonly agent: Agent;
  private readonly watchSlots: Slots;
  private opened = 0;
  private open = 0;
  private saturationReported = false;

  constructor(options: Http1PoolOptions) {
    this.options = options;
    this.watchSlots = new Slots(Math.max(1, options.maxConnections - RESERVED));
    const server = options.server;
    this.agent = new Agent({
      connections: options.maxConnections,
      keepAliveTimeout: 30_000,
      // The reader times out a silent body (readBody, the reflector's idle timeout): a watch whose
      // reader pauses is not silent.
      bodyTimeout: 0,
      allowH2: false,
      connect:
        server.protocol === 'https:'
          ? (_connectOptions, callback) => {
              options
                .tls()
                .then((settings) =>
                  connectTls({ server, settings, alpn: ['http/1.1'], timeoutMs: options.connectTimeoutMs }),
                )
                .then(
                  (socket) => callback(null, socket),
                  (error: Error) => callback(error, null),
                );
            }
          : { timeout: options.connectTimeoutMs, keepAlive: true, keepAliveInitialDelay: 30_000 },
    });
    this.agent.on('connect', () => {
      this.opened++;
      this.open++;
    });
    this.agent.on('disconnect', () => this.open--);
  }

  stats(): ConnectionStats {
    return {
      protocol: 'http/1.1',
      open: this.open,
      opened: this.opened,
      lost: noLosses(),
      waiting: this.watchSlots.waiting,
    };
  }

  async request(req: TransportRequest): Promise<TransportResponse> {
    let release: (() => void) | undefined;
    if (req.longLived) {
      if (this.watchSlots.full && !this.saturationReported) {
        this.saturationReported = true;
        this.options.onSaturated?.(
          `every HTTP/1.1 connection kubediff may open to ${this.options.server.origin} for watches (${this.options.maxConnections - RESERVED} of ${this.options.maxConnections}) is busy: further watches wait for one to end (a watch ends every 5 to 10 minutes and resumes where it was); raise KUBEDIFF_MAX_CONNECTIONS or let the server offer HTTP/2`,
        );
      }
      release = await this.watchSlots.acquire(req.signal);
    }
    let response: Dispatcher.ResponseData;
    try {
      response = await request(this.options.server.origin + req.path, {
        dispatcher: this.agent,
        method: req.method,
        headers: req.headers,
        ...(req.body !== undefined ? { body: req.body } : {}),
        signal: req.signal ?? null,
        headersTimeout: req.headersTimeoutMs,
      });
    } catch (error) {
      release?.();
      if (req.signal?.aborted) throw req.signal.reason ?? error;
      throw error instanceof KubeError
        ? error
        : errorFromTransport(error, this.options.server.origin, req.path);
    }
    if (release) response.body.once('close', release);
    const headers: Record<string, string | undefined> = {};
    for (const [name, value] of Object.entries(response.headers)) {
      headers[name] = Array.isArray(value) ? value.join(', ') : value;
    }
    return { status: response.statusCode, headers, body: response.body };
  }

  async close(): Promise<void> {
    await this.agent.destroy();
  }
}

/** A counting semaphore whose waits end when their signal aborts. */
class Slots {
  private free: number;
  private readonly waiters = new Set<() => void>();

  constructor(count: number) {
    this.free = count;
  }

  get full(): boolean {
    return this.free === 0;
  }

  get waiting(): number {
    return this.waiters.size;
  }

  acquire(signal: AbortSignal | undefined): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      const [next] = this.waiters;
      if (next) {
        this.waiters.delete(next);
        next();
      } else {
        this.free++;
      }
    };
    if (this.free > 0) {
      this.free--;
      return Promise.resolve(release);
    }
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        this.waiters.delete(grant);
        reject(signal?.reason);
      };
      const grant = () => {
        signal?.removeEventListener('abort', onAbort);
        resolve(release);
      };
      this.waiters.add(grant);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}
