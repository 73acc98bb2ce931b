// Every request of one cluster identity multiplexed over one HTTP/2 connection, as client-go does
// (node:http2, the TLS socket read through a stream of our own so that a reset always fails every
// stream on it: pipeThroughJs). A link silent for readIdleMs is PINGed and ended when no answer comes
// within pingTimeoutMs, so a watch fails at most readIdle + pingTimeout after its last byte and resumes.
// Flow control is per stream: a paused reader stops its own stream (STREAM_WINDOW at most), never the
// others. A second connection only replaces one going away (GOAWAY) or adds streams past the server's
// limit, up to maxConnections. Proved through the fault proxy: test/integration/watch-connection.test.ts.
import http2 from 'node:http2';
import { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import type { Logger } from '../util/log.ts';
import { monotonicMs } from '../util/timestamp.ts';
import { connectTls, type TlsSettings } from './credentials.ts';
import { errorFromTransport, KubeError } from './errors.ts';
import {
  type ConnectionLoss,
  type ConnectionStats,
  noLosses,
  type Transport,
  type TransportRequest,
  type TransportResponse,
} from './transport.ts';

/** Bytes a stream may receive before its reader consumes them: what a paused watch holds at most. */
export const STREAM_WINDOW = 1024 * 1024;
/** The connection's window: never the limit, since node:http2 returns it as data arrives. */
const CONNECTION_WINDOW = 64 * 1024 * 1024;
/** Tries of a request that the server refused unprocessed (REFUSED_STREAM, GOAWAY). */
const MAX_ATTEMPTS = 3;
const REFUSED_STREAM = http2.constants.NGHTTP2_REFUSED_STREAM;

export interface Http2PoolOptions {
  server: URL;
  /** TLS material for each new connection. */
  tls: () => Promise<TlsSettings>;
  connectTimeoutMs: number;
  /** Nothing read on a connection for this long: send a PING. */
  readIdleMs: number;
  /** A PING unanswered for this long: the connection is dead. */
  pingTimeoutMs: number;
  maxConnections: number;
  /** Debug lines: each connection opened and given up. */
  log?: Logger | undefined;
}

/** The server chose another protocol than h2 in ALPN (or none): the caller falls back to HTTP/1.1. */
export class Http2Unavailable extends Error {
  readonly negotiated: string;
  constructor(negotiated: string) {
    super(`the API server does not offer HTTP/2 (ALPN: ${negotiated})`);
    this.negotiated = negotiated;
  }
}

interface Connection {
  session: http2.ClientHttp2Session;
  socket: TLSSocket;
  /** Streams open (or queued) on it. */
  streams: number;
  /** The server's SETTINGS_MAX_CONCURRENT_STREAMS. */
  capacity: number;
  /** GOAWAY received, or closing: no new stream goes there. */
  draining: boolean;
  /** Why it died: every stream still on it fails with this. */
  dead: KubeError | undefined;
  bytesRead: number;
  /** When bytesRead was last seen to change (monotonicMs()). */
  lastReadAt: number;
  pingTimer: NodeJS.Timeout | undefined;
}

export class Http2Pool implements Transport {
  readonly protocol = 'h2' as const;
  private readonly options: Http2PoolOptions;
  private readonly origin: string;
  private readonly connections = new Set<Connection>();
  private connecting: Promise<Connection> | undefined;
  private healthTimer: NodeJS.Timeout | undefined;
  private readonly tickMs: number;
  private opened = 0;
  private readonly lost = noLosses();
  private queued = 0;
  private closed = false;
  /** Ends a connection attempt still under way when the pool closes (a server that never answers). */
  private readonly closing = new AbortController();

  constructor(options: Http2PoolOptions) {
    this.options = options;
    this.origin = options.server.origin;
    // Reads are checked every tick: a PING goes out between readIdle - 2 ticks and readIdle after the last read.
    this.tickMs = Math.max(20, Math.min(1_000, Math.floor(options.readIdleMs / 10)));
  }

  stats(): ConnectionStats {
    return {
      protocol: 'h2',
      open: this.connections.size,
      opened: this.opened,
      lost: { ...this.lost },
      waiting: this.queued,
    };
  }

  async request(request: TransportRequest): Promise<TransportResponse> {
    // A request the server did not process, because its connection was going away (GOAWAY: the API
    // server sends one after a 401, or to rebalance), is sent again on another connection.
    for (let attempt = 1; ; attempt++) {
      const connection = await this.acquire(request.signal);
      let stream: http2.ClientHttp2Stream | undefined;
      try {
        stream = connection.session.request(
          { ':method': request.method, ':path': request.path, ...request.headers },
          { endStream: request.body === undefined, ...(request.signal ? { signal: request.signal } : {}) },
        );
        return await this.exchange(connection, stream, request);
      } catch (error) {
        if (request.signal?.aborted) throw request.signal.reason ?? error;
        if (!unprocessed(error, stream) || attempt >= MAX_ATTEMPTS)
          throw this.failure(connection, error, request.path);
        this.drain(connection, `the server refused ${request.path} unprocessed`);
      }
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.closing.abort();
    clearInterval(this.healthTimer);
    this.healthTimer = undefined;
    await Promise.all([...this.connections].map((connection) => this.shut(connection)));
  }

  /** Sends the request's body and waits for the response headers. */
  private exchange(
    connection: Connection,
    stream: http2.ClientHttp2Stream,
    request: TransportRequest,
  ): Promise<TransportResponse> {
    connection.streams++;
    const queued = connection.streams > connection.capacity;
    if (queued) this.queued++;
    stream.once('close', () => {
      connection.streams--;
      if (queued) this.queued--;
    });
    // Errors after the response reach whoever reads the body; this keeps an unread one from crashing.
    stream.on('error', () => {});
    if (request.body !== undefined) stream.end(request.body);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        stream.destroy();
        // No answer in time: maybe the connection is dead. A PING tells, for every stream on it.
        this.ping(connection);
        reject(
          new KubeError(
            'network',
            `cannot reach the API server at ${this.origin}: no response within the timeout`,
            {
              path: request.path,
            },
          ),
        );
      }, request.headersTimeoutMs);
      stream.once('response', (headers) => {
        clearTimeout(timer);
        stream.off('error', onError);
        resolve({ status: Number(headers[':status']), headers: flatten(headers), body: stream });
      });
      const onError = (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      };
      stream.once('error', onError);
    });
  }

  private failure(connection: Connection, error: unknown, path: string): KubeError {
    if (connection.dead) return connection.dead;
    if (error instanceof KubeError) return error;
    return errorFromTransport(error, this.origin, path);
  }

  /** A connection with room for one more stream, opening one if needed. */
  private async acquire(signal: AbortSignal | undefined): Promise<Connection> {
    for (;;) {
      if (this.closed)
        throw new KubeError('network', `the client of ${this.origin} is closed`, { path: '/' });
      const usable = [...this.connections].filter((connection) => !connection.draining && !connection.dead);
      const roomy = usable.find((connection) => connection.streams < connection.capacity);
      if (roomy) return roomy;
      if (!this.connecting && usable.length >= this.options.maxConnections) {
        // At the bound: nghttp2 queues the stream until one on that connection ends.
        return usable.reduce((least, connection) =>
          connection.streams < least.streams ? connection : least,
        );
      }
      this.connecting ??= this.connect().finally(() => {
        this.connecting = undefined;
      });
      await abortable(this.connecting, signal);
    }
  }

  private async connect(): Promise<Connection> {
    const socket = await connectTls({
      server: this.options.server,
      settings: await this.options.tls(),
      alpn: ['h2', 'http/1.1'],
      timeoutMs: this.options.connectTimeoutMs,
      signal: this.closing.signal,
    });
    if (socket.alpnProtocol !== 'h2') {
      socket.destroy();
      throw new Http2Unavailable(socket.alpnProtocol || 'none');
    }
    const session = http2.connect(this.origin, {
      createConnection: () => pipeThroughJs(socket),
      settings: { enablePush: false, initialWindowSize: STREAM_WINDOW },
    });
    const connection: Connection = {
      session,
      socket,
      streams: 0,
      capacity: 100,
      draining: false,
      dead: undefined,
      bytesRead: socket.bytesRead,
      lastReadAt: monotonicMs(),
      pingTimer: undefined,
    };
    this.watch(connection);
    // Closed while the server's SETTINGS are awaited: the session ends now, not after connectTimeoutMs.
    const abandon = () => session.destroy();
    this.closing.signal.addEventListener('abort', abandon, { once: true });
    try {
      await this.settled(connection);
    } catch (error) {
      session.destroy();
      throw this.failure(connection, error, '/');
    } finally {
      this.closing.signal.removeEventListener('abort', abandon);
    }
    session.setLocalWindowSize(CONNECTION_WINDOW);
    if (this.closed) {
      session.destroy();
      throw new KubeError('network', `the client of ${this.origin} is closed`, { path: '/' });
    }
    this.connections.add(connection);
    this.opened++;
    this.options.log?.debug(
      `opened an HTTP/2 connection to ${this.origin} (${this.connections.size} open, up to ${connection.capacity} streams each)`,
    );
    this.healthTimer ??= setInterval(() => this.checkHealth(), this.tickMs).unref();
    return connection;
  }

  /** Resolves once the server's SETTINGS arrived (its stream limit is known). */
  private settled(connection: Connection): Promise<void> {
    const { session } = connection;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(
          new KubeError('network', `cannot reach the API server at ${this.origin}: connection timed out`, {
            path: '/',
          }),
        );
      }, this.options.connectTimeoutMs);
      const done = (error?: unknown) => {
        clearTimeout(timer);
        session.off('remoteSettings', onSettings);
        session.off('close', onClose);
        if (error) reject(error);
        else resolve();
      };
      const onSettings = (settings: http2.Settings) => {
        connection.capacity = settings.maxConcurrentStreams ?? connection.capacity;
        done();
      };
      const onClose = () =>
        done(connection.dead ?? new Error('the connection closed during the HTTP/2 handshake'));
      session.once('remoteSettings', onSettings);
      session.once('close', onClose);
    });
  }

  /** Every way a connection ends, each turned into one KubeError that all its streams fail with. */
  private watch(connection: Connection): void {
    const { session, socket } = connection;
    // Before node:http2's own handlers: streams are then destroyed with our error, which names the
    // connection rather than one request.
    socket.prependListener('error', (error: Error) => {
      const cause = errorFromTransport(error, this.origin, '/');
      this.lose(
        connection,
        'reset',
        `the connection to the API server at ${this.origin} broke: ${stripPrefix(cause.message, this.origin)}`,
        error,
      );
    });
    socket.prependListener('end', () => {
      this.lose(connection, 'closed', `the API server at ${this.origin} closed the connection`);
    });
    session.on('remoteSettings', (settings) => {
      connection.capacity = settings.maxConcurrentStreams ?? connection.capacity;
    });
    session.on('goaway', () => {
      // The server is going away gracefully: streams it accepted finish, new ones go to a new connection.
      if (!connection.draining && !connection.dead) this.lost.goaway++;
      this.drain(connection, 'the server sent GOAWAY');
    });
    session.on('error', (error) => {
      this.lose(
        connection,
        'reset',
        `the connection to the API server at ${this.origin} failed: ${error.message}`,
        error,
      );
    });
    session.on('close', () => {
      clearTimeout(connection.pingTimer);
      this.connections.delete(connection);
      if (this.connections.size === 0) {
        clearInterval(this.healthTimer);
        this.healthTimer = undefined;
      }
    });
  }

  /** No new stream goes to this connection; it closes once its last stream ends (a graceful close). */
  private drain(connection: Connection, reason: string): void {
    if (!connection.draining)
      this.options.log?.debug(
        `closing an HTTP/2 connection once its ${connection.streams} streams end: ${reason}`,
      );
    connection.draining = true;
    const { session } = connection;
    if (!session.closed && !session.destroyed) session.close();
  }

  private lose(connection: Connection, reason: ConnectionLoss, message: string, cause?: unknown): void {
    if (connection.dead) return;
    connection.dead = new KubeError('network', message, { path: '/', cause });
    if (!this.closed)
      this.options.log?.debug(
        `gave up an HTTP/2 connection (${connection.streams} streams on it): ${message}`,
      );
    // A connection closing after a GOAWAY was already counted as replaced.
    if (!this.closed && !connection.draining && this.connections.has(connection)) this.lost[reason]++;
    this.connections.delete(connection);
    clearTimeout(connection.pingTimer);
    connection.session.destroy(connection.dead);
  }

  /** Every tick: a connection that read nothing for about readIdleMs is sent a PING. */
  private checkHealth(): void {
    const now = monotonicMs();
    for (const connection of this.connections) {
      const read = connection.socket.bytesRead;
      if (read !== connection.bytesRead) {
        connection.bytesRead = read;
        connection.lastReadAt = now;
      } else if (now - connection.lastReadAt >= this.options.readIdleMs - 2 * this.tickMs) {
        this.ping(connection);
      }
    }
  }

  private ping(connection: Connection): void {
    if (connection.pingTimer || connection.dead || connection.session.destroyed) return;
    const seconds = this.options.pingTimeoutMs / 1000;
    const timer = setTimeout(() => {
      // Timers run before the event loop reads its sockets: after a stall of this process, the answer
      // may be waiting in the socket. setImmediate runs after that read; the answer clears pingTimer.
      setImmediate(() => {
        if (connection.pingTimer !== timer) return;
        this.lose(
          connection,
          'ping-timeout',
          `the connection to the API server at ${this.origin} went silent: no answer to a PING within ${seconds}s`,
        );
      });
    }, this.options.pingTimeoutMs);
    connection.pingTimer = timer;
    const sent = connection.session.ping((error) => {
      clearTimeout(connection.pingTimer);
      connection.pingTimer = undefined;
      if (error) return;
      connection.bytesRead = connection.socket.bytesRead;
      connection.lastReadAt = monotonicMs();
    });
    if (!sent) {
      clearTimeout(connection.pingTimer);
      connection.pingTimer = undefined;
    }
  }

  private async shut(connection: Connection): Promise<void> {
    const { session } = connection;
    if (session.destroyed) return;
    await new Promise<void>((resolve) => {
      // A graceful close lets the last frames out; a session that does not close in time is destroyed.
      const timer = setTimeout(() => {
        session.destroy();
        resolve();
      }, 1_000);
      session.once('close', () => {
        clearTimeout(timer);
        resolve();
      });
      session.close();
    });
  }
}

/**
 * Whether the server certainly did not process the request (RFC 9113, 8.7): it refused the stream,
 * or the request could not be sent because its connection was going away.
 */
function unprocessed(error: unknown, stream: http2.ClientHttp2Stream | undefined): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return (
    code === 'ERR_HTTP2_GOAWAY_SESSION' ||
    code === 'ERR_HTTP2_INVALID_SESSION' ||
    stream?.rstCode === REFUSED_STREAM
  );
}

/**
 * A stream that passes bytes to and from `socket`, so that node:http2 does not read the TLS socket
 * natively and every failure of it reaches JavaScript as an event (see the top of this file).
 */
function pipeThroughJs(socket: TLSSocket): Duplex {
  const pipe = new Duplex({
    read() {
      socket.resume();
    },
    write(chunk: Buffer, _encoding, callback) {
      socket.write(chunk, callback);
    },
    final(callback) {
      socket.end(callback);
    },
    destroy(error, callback) {
      socket.destroy(error ?? undefined);
      callback(error);
    },
  });
  socket.on('data', (chunk: Buffer) => {
    if (!pipe.push(chunk)) socket.pause();
  });
  socket.on('end', () => pipe.push(null));
  socket.on('error', (error) => pipe.destroy(error));
  socket.on('close', () => pipe.destroy());
  return pipe;
}

/** Response headers without the pseudo-headers, each as one string. */
function flatten(headers: http2.IncomingHttpHeaders): Record<string, string | undefined> {
  const result: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (name.startsWith(':')) continue;
    result[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return result;
}

/** "cannot reach the API server at X: connection reset" → "connection reset". */
function stripPrefix(message: string, origin: string): string {
  const prefix = `cannot reach the API server at ${origin}: `;
  return message.startsWith(prefix) ? message.slice(prefix.length) : message;
}

/** `promise`, or the signal's reason as soon as it aborts. */
function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
