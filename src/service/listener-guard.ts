// What every listener kubediff opens (--listen's health and metrics, the UI, --audit-listen,
// --admission-listen) owes the watch beside it: whoever reaches the port can neither take the process
// down nor hold its connections.
//
// - Errors of a connection stay with that connection: a malformed request, a reset, a TLS failure, a
//   write to an answer that was already ended, an accept() that fails (too many open files). Each is
//   counted, the first of each listener logged, and the connection closed. Node's default for some of
//   them is to throw from an event nobody listens to, which ends the process.
// - Connections are capped. At the cap a new connection takes the place of the oldest one that has not
//   proven anything yet (a TLS handshake not done, no request sent): a flood of idle sockets cannot keep
//   a real client out. When every connection is busy, the new one is closed at once.
// - Idle sockets time out quickly: the TLS handshake (handshakeTimeoutMs), the first request's headers
//   (headersTimeoutMs, checked every second), and a kept-alive connection between requests.
//
// Counted in kubediff_listener_connections_closed_total{listener, reason}; a client that goes away
// (a reset, a broken pipe) is neither counted nor logged.
import type { Server as HttpServer, IncomingMessage, ServerResponse } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import { errorMessage } from '../util/errors.ts';
import type { Logger } from '../util/log.ts';

export type ListenerName = 'ui' | 'health' | 'audit' | 'admission';

export const LISTENER_CLOSE_REASONS = ['error', 'limit', 'handshake_timeout'] as const;
export type ListenerCloseReason = (typeof LISTENER_CLOSE_REASONS)[number];

/** Documented in docs/ui.md and docs/audit.md ("Limits"). */
export interface ListenerLimits {
  maxConnections: number;
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
  /** Sent a request (a TLS handshake alone costs a flood little, so it proves nothing). */
  proven: boolean;
  /** Requests being answered on it now. */
  busy: number;
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
    if (this.open.size >= this.limits.maxConnections && !this.evictIdle()) {
      this.count('limit', `${this.limits.maxConnections} connections are open and busy, the most served`);
      socket.destroy();
      return;
    }
    const tracked: Tracked = { socket, proven: false, busy: 0 };
    this.open.set(key, tracked);
    // A socket's own errors (a reset) end it; 'close' follows, which forgets it.
    socket.on('error', () => {});
    socket.once('close', () => {
      if (this.open.get(key) === tracked) this.open.delete(key);
    });
  }

  /** Closes the oldest connection that has proven nothing yet; false when every one has. */
  private evictIdle(): boolean {
    for (const tracked of this.open.values()) {
      if (tracked.proven || tracked.busy > 0) continue;
      this.count(
        'limit',
        `${this.limits.maxConnections} connections are open, the most served; a new one replaces the oldest that has sent nothing yet`,
      );
      this.open.delete(keyOf(tracked.socket));
      tracked.socket.destroy();
      return true;
    }
    return false;
  }

  private request(request: IncomingMessage, response: ServerResponse): void {
    const tracked = this.open.get(keyOf(request.socket));
    if (tracked) {
      tracked.proven = true;
      tracked.busy++;
      response.once('close', () => {
        tracked.busy--;
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
    case 'error':
      return 'a connection failed';
  }
}

function keyOf(socket: Socket): string {
  return `${socket.remoteAddress ?? ''}|${socket.remotePort ?? ''}`;
}
