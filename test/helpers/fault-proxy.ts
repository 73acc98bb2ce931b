// A fault-injecting TCP proxy for network-failure tests.
//
// kubediff talks TLS to the API server; this proxy works at the TCP level, so TLS passes through untouched
// and the client still verifies the server's certificate. Put it between kubediff and the API server (point the
// kubeconfig's `server:` at `proxy.url()`) and break the network on demand:
//
//   cutAll()        every open connection is reset at once (both sides see ECONNRESET), like a network reset.
//   blackhole(on)   a dead link: connections stay open, but no byte, FIN or reset crosses the proxy in either
//                   direction. What arrives meanwhile is held, in order, and delivered when the link comes back,
//                   as TCP retransmission would; a client that gives up on the link simply closes its socket.
//   setDelay(ms)    every chunk, in both directions, is delivered `ms` later; order is preserved.
//   refuse(on)      new connections are reset as soon as they are accepted.
//
// Each accepted connection is a pair of sockets: `client` (the side that connected to the proxy) and `upstream`
// (the proxy's connection to the target). Both are half-open capable so that a FIN is forwarded as a FIN.

import net from 'node:net';
import { performance } from 'node:perf_hooks';

export interface FaultProxyOptions {
  /** Where connections are forwarded to. */
  target: { host: string; port: number };
  /** Interface to listen on; also the host of `url()`. Default 127.0.0.1. */
  host?: string;
  /** Port to listen on. Default 0: any free port. */
  port?: number;
}

export interface FaultProxy {
  /** The port the proxy listens on. */
  readonly port: number;
  /** `${scheme}://host:port`; scheme defaults to https. */
  url(scheme?: string): string;
  /** Client connections open now (a client that sent FIN, reset or closed no longer counts). */
  readonly connections: number;
  /** Client connections accepted since the start, refused ones excluded. */
  readonly totalConnections: number;
  /** The most client connections open at once since the start (counted as `connections` is). */
  readonly peakConnections: number;
  /**
   * How many times, outside a black hole, a client sent something and the server sent nothing back for at least
   * `minMs` (until its next byte, or until the connection closed): a silence the proxy saw on a healthy link, so
   * that a test can tell a client's "went silent" that was real (a starved server) from one that was not.
   */
  unansweredStretches(minMs: number): number;
  /** Reset every open connection on both sides, immediately. */
  cutAll(): void;
  /** While on, nothing crosses the proxy in either direction; turning it off delivers what was held. */
  blackhole(on: boolean): void;
  /** Deliver every chunk `ms` milliseconds after it arrived, in both directions, in order. 0 turns it off. */
  setDelay(ms: number): void;
  /** While on, new connections are reset as soon as they are accepted. */
  refuse(on: boolean): void;
  /** Resolves once at least `n` client connections are open; rejects after `timeoutMs` (default 5000). */
  waitForConnections(n: number, timeoutMs?: number): Promise<void>;
  /** Resolves once no client connection is open (e.g. after the client stopped); rejects after `timeoutMs`. */
  waitForIdle(timeoutMs?: number): Promise<void>;
  /** Resolves once at least `n` connections have been accepted in total; rejects after `timeoutMs`. */
  waitForTotalConnections(n: number, timeoutMs?: number): Promise<void>;
  /** Stops listening, resets every connection, clears every timer and waits until every socket has closed. */
  close(): Promise<void>;
}

/** One chunk (or the end of the stream, `chunk: null`) waiting to be delivered. */
interface Pending {
  due: number;
  chunk: Buffer | null;
}

/** One direction of a connection pair. */
interface Direction {
  from: net.Socket;
  to: net.Socket;
  queue: Pending[];
  timer: NodeJS.Timeout | undefined;
}

interface Pair {
  client: net.Socket;
  upstream: net.Socket;
  toUpstream: Direction;
  toClient: Direction;
  /** Counted in `connections`. */
  counted: boolean;
  /** Reset; nothing more is forwarded. */
  torn: boolean;
  /** One side failed while the link was black-holed: reset the other when the link comes back. */
  resetWhenLinkReturns: boolean;
  /** When the client sent its first byte since the server's last one, on a healthy link. */
  awaitingSince: number | undefined;
}

interface Waiter {
  ready: () => boolean;
  resolve: () => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
}

/** Resets a socket (RST) if it can, destroys it otherwise. */
function reset(socket: net.Socket): void {
  if (socket.destroyed) return;
  // A socket still connecting, or one whose end is being flushed, cannot be reset: libuv answers
  // EINVAL and Node then drops it without ever emitting 'close', which would leave close() waiting.
  if (socket.connecting || socket.writableEnded) {
    socket.destroy();
    return;
  }
  try {
    socket.resetAndDestroy();
  } catch {
    socket.destroy();
  }
}

export async function startFaultProxy(options: FaultProxyOptions): Promise<FaultProxy> {
  const host = options.host ?? '127.0.0.1';
  const pairs = new Set<Pair>();
  const sockets = new Set<net.Socket>();
  const waiters = new Set<Waiter>();
  let open = 0;
  let peak = 0;
  let total = 0;
  let delayMs = 0;
  let blackholed = false;
  let refusing = false;
  let closed = false;
  const stretches: number[] = [];

  const answered = (pair: Pair): void => {
    if (pair.awaitingSince === undefined) return;
    stretches.push(performance.now() - pair.awaitingSince);
    pair.awaitingSince = undefined;
  };

  const track = (socket: net.Socket): void => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    // Errors are expected here (resets are the point); each one ends in 'close', handled per pair.
    socket.on('error', () => {});
  };

  const settleWaiters = (): void => {
    for (const waiter of waiters) {
      if (!waiter.ready()) continue;
      waiters.delete(waiter);
      clearTimeout(waiter.timer);
      waiter.resolve();
    }
  };

  const uncount = (pair: Pair): void => {
    if (!pair.counted) return;
    pair.counted = false;
    open--;
    settleWaiters();
  };

  const stopDirection = (direction: Direction): void => {
    clearTimeout(direction.timer);
    direction.timer = undefined;
    direction.queue.length = 0;
  };

  const tear = (pair: Pair): void => {
    if (pair.torn) return;
    pair.torn = true;
    answered(pair);
    stopDirection(pair.toUpstream);
    stopDirection(pair.toClient);
    reset(pair.client);
    reset(pair.upstream);
    uncount(pair);
    pairs.delete(pair);
  };

  /** Delivers what is due in one direction, in order; schedules itself for the rest. */
  const pump = (direction: Direction): void => {
    clearTimeout(direction.timer);
    direction.timer = undefined;
    if (blackholed) return;
    const { to } = direction;
    for (;;) {
      const head = direction.queue[0];
      if (head === undefined) return;
      const wait = head.due - performance.now();
      if (wait > 0) {
        direction.timer = setTimeout(() => pump(direction), Math.max(1, Math.ceil(wait)));
        return;
      }
      direction.queue.shift();
      if (to.destroyed) continue;
      if (head.chunk === null) {
        to.end();
      } else if (!to.write(head.chunk)) {
        direction.from.pause();
      }
    }
  };

  const direction = (from: net.Socket, to: net.Socket): Direction => {
    const result: Direction = { from, to, queue: [], timer: undefined };
    const enqueue = (chunk: Buffer | null): void => {
      result.queue.push({ due: performance.now() + delayMs, chunk });
      if (result.queue.length === 1) pump(result);
    };
    from.on('data', (chunk: Buffer) => enqueue(chunk));
    from.on('end', () => enqueue(null));
    to.on('drain', () => {
      if (!from.destroyed) from.resume();
    });
    return result;
  };

  const server = net.createServer({ allowHalfOpen: true, pauseOnConnect: true }, (client) => {
    track(client);
    if (closed || refusing) {
      reset(client);
      return;
    }
    total++;
    open++;
    peak = Math.max(peak, open);
    const upstream = net.connect({
      host: options.target.host,
      port: options.target.port,
      allowHalfOpen: true,
    });
    track(upstream);
    const pair: Pair = {
      client,
      upstream,
      toUpstream: direction(client, upstream),
      toClient: direction(upstream, client),
      counted: true,
      torn: false,
      resetWhenLinkReturns: false,
      awaitingSince: undefined,
    };
    pairs.add(pair);
    client.on('data', () => {
      if (!blackholed) pair.awaitingSince ??= performance.now();
    });
    upstream.on('data', () => answered(pair));

    client.once('end', () => uncount(pair));
    // A reset on either side is forwarded as a reset, except over a dead link, which hides it until the link
    // comes back. A clean close means both FINs went through; the other side then closes on its own once its
    // queue, which ends with the FIN, has been delivered.
    const onClose = (hadError: boolean): void => {
      if (pair.torn) return;
      if (client.destroyed && upstream.destroyed && !hadError) {
        pairs.delete(pair);
        return;
      }
      if (!hadError) return;
      if (blackholed) pair.resetWhenLinkReturns = true;
      else tear(pair);
    };
    client.once('close', (hadError) => {
      answered(pair);
      uncount(pair);
      onClose(hadError);
    });
    upstream.once('close', onClose);
    client.resume();
    settleWaiters();
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('fault proxy: no TCP address');
  const { port } = address;

  const waitUntil = (ready: () => boolean, what: string, timeoutMs: number): Promise<void> => {
    if (ready()) return Promise.resolve();
    if (closed) return Promise.reject(new Error(`fault proxy closed while waiting for ${what}`));
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        ready,
        resolve,
        reject,
        timer: setTimeout(() => {
          waiters.delete(waiter);
          reject(
            new Error(
              `fault proxy: timed out after ${timeoutMs} ms waiting for ${what} ` +
                `(open now: ${open}, accepted in total: ${total})`,
            ),
          );
        }, timeoutMs),
      };
      waiters.add(waiter);
    });
  };

  let closing: Promise<void> | undefined;

  return {
    port,
    url: (scheme = 'https') => `${scheme}://${host.includes(':') ? `[${host}]` : host}:${port}`,
    get connections() {
      return open;
    },
    get totalConnections() {
      return total;
    },
    get peakConnections() {
      return peak;
    },
    unansweredStretches(minMs) {
      return stretches.filter((ms) => ms >= minMs).length;
    },
    cutAll() {
      for (const pair of [...pairs]) tear(pair);
    },
    blackhole(on) {
      if (blackholed === on) return;
      blackholed = on;
      if (on) {
        for (const pair of pairs) {
          pair.awaitingSince = undefined;
          clearTimeout(pair.toUpstream.timer);
          clearTimeout(pair.toClient.timer);
        }
        return;
      }
      for (const pair of [...pairs]) {
        if (pair.resetWhenLinkReturns) {
          tear(pair);
          continue;
        }
        pump(pair.toUpstream);
        pump(pair.toClient);
      }
    },
    setDelay(ms) {
      if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`fault proxy: invalid delay ${ms}`);
      delayMs = ms;
    },
    refuse(on) {
      refusing = on;
    },
    waitForConnections(n, timeoutMs = 5000) {
      return waitUntil(() => open >= n, `${n} open connection(s)`, timeoutMs);
    },
    waitForIdle(timeoutMs = 5000) {
      return waitUntil(() => open === 0, 'no open connection', timeoutMs);
    },
    waitForTotalConnections(n, timeoutMs = 5000) {
      return waitUntil(() => total >= n, `${n} accepted connection(s) in total`, timeoutMs);
    },
    close() {
      closing ??= (async () => {
        closed = true;
        const serverClosed = new Promise<void>((resolve) => server.close(() => resolve()));
        for (const waiter of waiters) {
          clearTimeout(waiter.timer);
          waiter.reject(new Error('fault proxy closed'));
        }
        waiters.clear();
        for (const pair of [...pairs]) tear(pair);
        const socketsClosed = [...sockets].map(
          (socket) => new Promise<void>((resolve) => socket.once('close', () => resolve())),
        );
        for (const socket of sockets) reset(socket);
        await Promise.all([serverClosed, ...socketsClosed]);
      })();
      return closing;
    },
  };
}
