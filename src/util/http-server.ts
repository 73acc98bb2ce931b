// The HTTP servers kubediff serves (--listen, --audit-listen, the UI): node:http's createServer, and how
// a server listens on an address given by a flag, says where it is bound, and closes.
import type { Server } from 'node:http';
import type { AddressInfo, Server as NetServer } from 'node:net';
import { UsageError } from './errors.ts';

// node:http's createServer, taken without an ES module import. Node builds the namespace of an imported
// built-in module by reading every export, and node:http's WebSocket, CloseEvent and MessageEvent
// exports are getters that load Node's bundled fetch and WebSocket client (undici): an `import … from
// 'node:http'` costs every kubediff that serves an endpoint resident memory for code it never runs
// (measured: BENCHMARKS.md, "Where the time goes now"). process.getBuiltinModule returns the module
// itself, getters unread.
export const { createServer } = process.getBuiltinModule('node:http');

export interface ListenAddress {
  host: string | undefined;
  port: number;
}

/** What --listen and every listen address say of an address that is not one (after `invalid --flag "…": `). */
const LISTEN_ADDRESS_PROBLEM = 'use [host]:port, e.g. :8080 (every interface) or 127.0.0.1:8080';

/** `:8080`, `8080`, `0.0.0.0:8080`, `127.0.0.1:0`, `[::1]:8080`, `localhost:8080`; undefined otherwise. */
function listenAddressOf(text: string): ListenAddress | undefined {
  const value = text.trim();
  let host: string | undefined;
  let portText: string;
  const bracketed = /^\[([^\]]+)\]:(\d+)$/.exec(value);
  if (bracketed) {
    host = bracketed[1];
    portText = bracketed[2] ?? '';
  } else if (/^\d+$/.test(value)) {
    portText = value;
  } else {
    const colon = value.lastIndexOf(':');
    host = colon > 0 ? value.slice(0, colon) : undefined;
    portText = colon >= 0 ? value.slice(colon + 1) : '';
    if (host?.includes(':')) portText = '';
  }
  const port = /^\d{1,5}$/.test(portText) ? Number(portText) : Number.NaN;
  return port >= 0 && port <= 65_535 ? { host, port } : undefined;
}

/** Why `text` is not a listen address, a phrase; undefined when it is one. */
export function listenAddressProblem(text: string): string | undefined {
  return listenAddressOf(text) ? undefined : LISTEN_ADDRESS_PROBLEM;
}

/** A listen address given by `flag`; a UsageError naming it otherwise. */
export function parseListenAddress(text: string, flag = '--listen'): ListenAddress {
  const address = listenAddressOf(text);
  if (!address) throw new UsageError(`invalid ${flag} "${text}": ${LISTEN_ADDRESS_PROBLEM}.`);
  return address;
}

/**
 * The kernel's queue of connections not yet accepted (Linux caps it at net.core.somaxconn): long, so
 * that a burst of connections is accepted and then closed by the listener's guard
 * (src/util/listener-guard.ts) rather than left half-open where neither side sees it (Node's default
 * is 511).
 */
const LISTEN_BACKLOG = 4096;

/** Listens on `address` (as `flag` gives it); rejects with a UsageError when the port cannot be had. */
export async function listenOn(server: NetServer, address: string, flag: string): Promise<void> {
  const { host, port } = parseListenAddress(address, flag);
  await new Promise<void>((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      reject(
        new UsageError(
          `cannot listen on ${address} (${flag}): ${error.code === 'EADDRINUSE' ? 'the port is in use' : error.message}; choose another address.`,
          { cause: error },
        ),
      );
    };
    server.once('error', onError);
    server.listen({ port, backlog: LISTEN_BACKLOG, ...(host ? { host } : {}) }, () => {
      server.off('error', onError);
      resolve();
    });
  });
}

/** host:port a listening server actually bound (the port is known even with :0). */
export function boundAddress(server: NetServer): string {
  const info = server.address() as AddressInfo;
  const host = info.family === 'IPv6' ? `[${info.address}]` : info.address;
  return `${host}:${info.port}`;
}

/** Stops listening and ends every connection, idle or not (a stop must not wait for keep-alives). */
export function closeServer(server: Server | (NetServer & { closeAllConnections(): void })): Promise<void> {
  return new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
