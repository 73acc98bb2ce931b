// What every listener kubediff opens (--listen, the UI, --audit-listen, --admission-listen) owes the watch
// beside it: a connection's errors stay with it (counted, the first per listener logged, the connection
// closed: never an exception that ends the process); connections are capped, in all and per address. At a
// cap a new one replaces one of the address holding the most: the oldest that has sent nothing, else one
// mid-handshake, else the longest idle (closed at once when all are busy); handshakes, first headers and
// kept-alive connections time out. Counted in kubediff_listener_connections_closed_total{listener,reason}.
import type { Server as HttpServer, IncomingMessage, ServerResponse } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import { errorMessage } from './errors.ts';
import type { Logger } from './log.ts';

export type ListenerName = 'ui' | 'health' | 'audit' | 'admission';

export const LISTENER_CLOSE_REASONS = ['error', 'limit', 'address_limit', 'handshake_timeout'] as const;
export type ListenerCloseReason = (typeof LISTENER_CLOSE_REASONS)[number];

/** Documented in docs/ui.md and docs/audit.md ("Limits"). */
export interface ListenerLimits {
  maxConnections: number;
  /** Connections from one remote address at most (none: only maxConnections). */
  maxConnectionsPerAddress?: number;
  /** The complete headers of a request, from the connection's start (or its previous request's end). */
  headersTimeoutMs: number;
  /** A whole request, body included. */
  requestTimeoutMs: number;
  /** A kept-alive connection between requests. */
  keepAliveTimeoutMs: number;
  /** TLS listeners: the handshake. */
  handshakeTimeoutMs?: number;
}

/** How often Node looks for requests past their headers or request timeout (its default is 30 s). */
export const CONNECTION_CHECK_INTERVAL_MS = 1_000;

/** The options of a server created for a guard (they cannot be set after creation). */
export function guardedServerOptions(limits: ListenerLimits): {
  connectionsCheckingInterval: number;
  handshakeTimeout?: number;
} {
  return {
    connectionsCheckingInterval: CONNECTION_CHECK_INTERVAL_MS,
    ...(limits.handshakeTimeoutMs !== undefined ? { handshakeTimeout: limits.handshakeTimeoutMs } : {}),
  };
}

interface Tracked {
  socket: Socket;
  /** Its remote address (the socket's is gone once it is destroyed). */
  address: string;
  /** Sent a request (a TLS handshake alone costs a flood little, so it proves nothing). */
  proven: boolean;
  /** Requests being answered on it now. */
  busy: number;
  /** When it last accepted or ended a request (performance.now()): the one idle longest gives way. */
  active: number;
}

export class ListenerGuard {
  readonly listener: ListenerName;
  private readonly log: Logger;
  private readonly limits: ListenerLimits;
  private readonly tls: boolean;
  private readonly counts = new Map<ListenerCloseReason, number>();
  /** Reasons already logged (once each). */
  private readonly logged = new Set<ListenerCloseReason>();
  /** Open connections, oldest first, by remote address and port (the same for a raw and a TLS socket). */
  private readonly open = new Map<string, Tracked>();

  private constructor(listener: ListenerName, limits: ListenerLimits, log: Logger, tls: boolean) {
    this.listener = listener;
    this.limits = limits;
    this.log = log;
    this.tls = tls;
  }

  /**
   * Guards `server` (created with guardedServerOptions(limits)). Call before any other 'request'
   * listener is added, so that every answer has its error handler before anything writes to it.
   */
  static attach(
    server: HttpServer | HttpsServer,
    listener: ListenerName,
    limits: ListenerLimits,
    log: Logger,
  ): ListenerGuard {
    const guard = new ListenerGuard(listener, limits, log, limits.handshakeTimeoutMs !== undefined);
    server.headersTimeout = limits.headersTimeoutMs;
    server.requestTimeout = limits.requestTimeoutMs;
    server.keepAliveTimeout = limits.keepAliveTimeoutMs;
    server.on('connection', (socket: Socket) => guard.accepted(socket));
    if (guard.tls) {
      server.on('tlsClientError', (error: NodeJS.ErrnoException, socket: Socket) => {
        guard.failed(error.code === 'ERR_TLS_HANDSHAKE_TIMEOUT' ? 'handshake_timeout' : 'error', error);
        socket.destroy();
      });
    }
    server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) =>
      guard.clientError(error, socket),
    );
    // Once listening: an accept() that fails (EMFILE) is an 'error' of the server, fatal if unheard.
    // Not before: a port that cannot be had is listen()'s own error, one sentence of its caller's.
    server.once('listening', () => server.on('error', (error) => guard.failed('error', error)));
    server.prependListener('request', (request: IncomingMessage, response: ServerResponse) =>
      guard.request(request, response),
    );
    return guard;
  }

  /** Connections closed by the guard, by reason (for /metrics). */
  stats(): ReadonlyMap<ListenerCloseReason, number> {
    return this.counts;
  }

  /** Connections open now. */
  get connections(): number {
    return this.open.size;
  }

  private accepted(socket: Socket): void {
    const key = keyOf(socket);
    const perAddress = this.limits.maxConnectionsPerAddress;
    const address = socket.remoteAddress ?? '';
    if (perAddress !== undefined) {
      const own = [...this.open.values()].filter((tracked) => tracked.address === address);
      if (own.length >= perAddress && !this.evict(own, 'address_limit')) {
        this.count(
          'address_limit',
          `${perAddress} connections from ${address} are open and busy, the most served to one address`,
        );
        socket.destroy();
        return;
      }
    }
    if (this.open.size >= this.limits.maxConnections && !this.evictFromTheMost()) {
      this.count('limit', `${this.limits.maxConnections} connections are open and busy, the most served`);
      socket.destroy();
      return;
    }
    const tracked: Tracked = { socket, address, proven: false, busy: 0, active: performance.now() };
    this.open.set(key, tracked);
    // A socket's own errors (a reset) end it; 'close' follows, which forgets it.
    socket.on('error', () => {});
    socket.once('close', () => {
      if (this.open.get(key) === tracked) this.open.delete(key);
    });
  }

  /**
   * At the cap of all connections: closes one of the address holding the most (evict()), else of the
   * next; false when every connection is busy.
   */
  private evictFromTheMost(): boolean {
    const byAddress = new Map<string, Tracked[]>();
    for (const tracked of this.open.values()) {
      const own = byAddress.get(tracked.address);
      if (own) own.push(tracked);
      else byAddress.set(tracked.address, [tracked]);
    }
    const most = [...byAddress.values()].sort((a, b) => b.length - a.length);
    return most.some((own) => this.evict(own, 'limit'));
  }

  /**
   * Closes, of `candidates` (oldest first), the oldest that has sent nothing at all, else the oldest that
   * has sent bytes but no request, else the one idle longest; false when every one has a request in flight.
   */
  private evict(candidates: Iterable<Tracked>, reason: 'limit' | 'address_limit'): boolean {
    let silent: Tracked | undefined;
    let unproven: Tracked | undefined;
    let idlest: Tracked | undefined;
    for (const tracked of candidates) {
      if (tracked.busy > 0) continue;
      if (!tracked.proven) {
        // Read from the raw socket: what a TLS handshake has read counts.
        if (tracked.socket.bytesRead === 0) {
          silent = tracked;
          break;
        }
        unproven ??= tracked;
      } else if (!idlest || tracked.active < idlest.active) {
        idlest = tracked;
      }
    }
    const victim = silent ?? unproven ?? idlest;
    if (!victim) return false;
    const limit =
      reason === 'limit'
        ? `${this.limits.maxConnections} connections are open, the most served`
        : `${this.limits.maxConnectionsPerAddress} connections from ${victim.address} are open, the most served to one address`;
    this.count(
      reason,
      `${limit}; a new one replaces ${reason === 'limit' ? 'one of the address holding the most: ' : ''}the oldest that has sent nothing yet, else the one idle longest`,
    );
    this.open.delete(keyOf(victim.socket));
    victim.socket.destroy();
    return true;
  }

  private request(request: IncomingMessage, response: ServerResponse): void {
    const tracked = this.open.get(keyOf(request.socket));
    if (tracked) {
      tracked.proven = true;
      tracked.busy++;
      tracked.active = performance.now();
      response.once('close', () => {
        tracked.busy--;
        tracked.active = performance.now();
      });
    }
    request.on('error', () => {});
    response.on('error', (error) => {
      this.failed('error', error);
      response.destroy();
    });
  }

  /** Node's own answer to a request it cannot parse (400, 408, 431), then the connection closes. */
  private clientError(error: NodeJS.ErrnoException, socket: Socket): void {
    // A TLS failure reaches both events; 'tlsClientError' counts it.
    if (!(this.tls && /^ERR_(TLS|SSL)_/.test(error.code ?? ''))) this.failed('error', error);
    if (socket.writable && socket.bytesWritten === 0) {
      const status =
        error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? '408 Request Timeout'
          : error.code === 'HPE_HEADER_OVERFLOW'
            ? '431 Request Header Fields Too Large'
            : '400 Bad Request';
      socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\n\r\n`);
    }
    socket.destroy();
  }

  private failed(reason: ListenerCloseReason, error: Error): void {
    // A client that went away (a reset, a broken pipe, one the guard closed at the cap) closed it.
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ECONNRESET' || code === 'EPIPE') return;
    this.count(reason, `${describeReason(reason)}: ${errorMessage(error)}`);
  }

  private count(reason: ListenerCloseReason, line: string): void {
    const seen = this.counts.get(reason) ?? 0;
    this.counts.set(reason, seen + 1);
    if (this.logged.has(reason)) return;
    this.logged.add(reason);
    this.log.warn(
      `${LABELS[this.listener]}: ${line}; the connection is closed, nothing else is affected. ` +
        `Counted in kubediff_listener_connections_closed_total{listener="${this.listener}",reason="${reason}"}; logged once.`,
    );
  }
}

const LABELS: Record<ListenerName, string> = {
  ui: 'ui',
  health: 'health and metrics (--listen)',
  audit: 'audit webhook',
  admission: 'admission webhook',
};

function describeReason(reason: ListenerCloseReason): string {
  switch (reason) {
    case 'handshake_timeout':
      return 'a connection did not complete its TLS handshake in time';
    case 'limit':
      return 'too many connections';
    case 'address_limit':
      return 'too many connections from one address';
    case 'error':
      return 'a connection failed';
  }
}

function keyOf(socket: Socket): string {
  return `${socket.remoteAddress ?? ''}|${socket.remotePort ?? ''}`;
}
