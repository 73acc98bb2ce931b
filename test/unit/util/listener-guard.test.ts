// src/util/listener-guard.ts on real servers on loopback: what a connection does wrong stays with that
// connection (a request Node cannot parse, a write after an answer ended, which Node throws from an
// unheard 'error' event and so ends the process), counted and logged once; the connection cap lets a
// real request in past a flood of idle sockets (they give way, oldest first; those of the address holding
// the most; those that sent nothing before one whose TLS handshake has begun); a TLS handshake that never
// starts is cut at its timeout.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { Server as HttpServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { connect, type Socket } from 'node:net';
import { after, test } from 'node:test';
import { connect as tlsConnect } from 'node:tls';
import { createServer } from '../../../src/util/http-server.ts';
import {
  guardedServerOptions,
  ListenerGuard,
  type ListenerLimits,
} from '../../../src/util/listener-guard.ts';
import type { Logger } from '../../../src/util/log.ts';
import { makeTestPki } from '../../helpers/pki.ts';

const LIMITS: ListenerLimits = {
  maxConnections: 4,
  headersTimeoutMs: 60_000,
  requestTimeoutMs: 60_000,
  keepAliveTimeoutMs: 5_000,
};

const closers: (() => Promise<void>)[] = [];
after(async () => {
  for (const close of closers.reverse()) await close();
});

function logger(): Logger & { warnings: string[] } {
  const warnings: string[] = [];
  return { warnings, info: () => {}, debug: () => {}, warn: (message) => warnings.push(message) };
}

async function listen(server: HttpServer): Promise<number> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  closers.push(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const address = server.address();
  assert.ok(address && typeof address === 'object');
  return address.port;
}

/**
 * A raw TCP connection (from `from`, a loopback address: 127.0.0.1 unless told) that sends `text` (if any)
 * and collects what comes back until it closes.
 */
async function rawConnection(
  port: number,
  text?: string,
  from = '127.0.0.1',
): Promise<{ socket: Socket; closed: Promise<string> }> {
  const socket = connect({ port, host: '127.0.0.1', localAddress: from });
  await once(socket, 'connect');
  let received = '';
  socket.on('data', (chunk: Buffer) => {
    received += chunk.toString();
  });
  socket.on('error', () => {});
  if (text !== undefined) socket.write(text);
  closers.push(async () => {
    socket.destroy();
  });
  return { socket, closed: once(socket, 'close').then(() => received) };
}

test('a request Node cannot parse is answered 400 and counted; a write after the answer ended is contained and logged once', async () => {
  const log = logger();
  const server = createServer(guardedServerOptions(LIMITS));
  const guard = ListenerGuard.attach(server, 'ui', LIMITS, log);
  // Each answer's failure, awaited: the guard listens first (it was attached first), so it has counted
  // the failure once the test sees it.
  const failed: Promise<unknown>[] = [];
  server.on('request', (_request, response) => {
    failed.push(once(response, 'error'));
    response.end('done\n');
    // What the UI's heartbeat did to a stream it had ended: without the guard, the process ends here.
    response.write('after the end');
    response.write('and again');
  });
  const port = await listen(server);

  const garbage = await rawConnection(port, 'NOT HTTP AT ALL\r\n\r\n');
  assert.match(await garbage.closed, /^HTTP\/1\.1 400 Bad Request/);

  for (let i = 0; i < 2; i++) {
    const answer = await fetch(`http://127.0.0.1:${port}/`);
    assert.equal(await answer.text(), 'done\n');
  }
  assert.equal(failed.length, 2);
  await Promise.all(failed);
  // The first write after the end fails the answer, which is then closed: the second goes nowhere.
  assert.equal(guard.stats().get('error'), 1 + 2, 'the 400, and each answer written after its end');
  const lines = log.warnings.filter((line) =>
    /kubediff_listener_connections_closed_total\{listener="ui",reason="error"\}/.test(line),
  );
  assert.equal(lines.length, 1, log.warnings.join('\n'));
  assert.match(
    lines[0]!,
    /^ui: a connection failed: .*; the connection is closed, nothing else is affected\./,
  );
});

test('at the cap, a new connection replaces the oldest idle one: a real request gets through a flood of idle sockets', async () => {
  const log = logger();
  const server = createServer(guardedServerOptions(LIMITS));
  const guard = ListenerGuard.attach(server, 'health', LIMITS, log);
  server.on('request', (_request, response) => response.end('ok\n'));
  const port = await listen(server);

  const flood = [];
  for (let i = 0; i < 10; i++) flood.push(await rawConnection(port));
  // Each connection beyond the 4th closed the oldest idle one: the first 6 are gone, in order.
  for (const idle of flood.slice(0, 6)) assert.equal(await idle.closed, '');
  const answer = await fetch(`http://127.0.0.1:${port}/`, { headers: { connection: 'close' } });
  assert.equal(await answer.text(), 'ok\n');
  assert.equal(guard.stats().get('limit'), 7, 'six of the flood, and one for the request');
  assert.equal(log.warnings.filter((line) => /reason="limit"/.test(line)).length, 1);
});

test("at the cap, a flood from another address never closes a real client's connection, however late it sends its request", async () => {
  const log = logger();
  const server = createServer(guardedServerOptions(LIMITS));
  const guard = ListenerGuard.attach(server, 'health', LIMITS, log);
  server.on('request', (_request, response) => response.end('ok\n'));
  const port = await listen(server);
  // The real client connects first and has sent nothing yet: the oldest connection that proved nothing.
  const real = await rawConnection(port);
  const flood = [];
  for (let i = 0; i < 10; i++) flood.push(await rawConnection(port, undefined, '127.0.0.2'));
  // Each connection beyond the 4th closed one: the server has taken all 10.
  while ((guard.stats().get('limit') ?? 0) < 7) await new Promise((resolve) => setImmediate(resolve));
  real.socket.write('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
  assert.match(await real.closed, /200 OK[\s\S]*ok\n$/);
  // The address holding the most gave way instead, oldest first: the first 7 of the flood are gone.
  for (const idle of flood.slice(0, 7)) assert.equal(await idle.closed, '');
  assert.equal(guard.stats().get('limit'), 7);
  assert.match(
    log.warnings.join('\n'),
    /^health and metrics \(--listen\): 4 connections are open, the most served; a new one replaces one of the address holding the most: /m,
  );
});

test('at the cap of one address, a connection that has started its TLS handshake outlasts those that sent nothing', async () => {
  const log = logger();
  const pki = makeTestPki();
  const limits: ListenerLimits = {
    ...LIMITS,
    maxConnections: 64,
    maxConnectionsPerAddress: 4,
    handshakeTimeoutMs: 60_000,
  };
  const server = createHttpsServer({
    ...guardedServerOptions(limits),
    cert: pki.serverCert,
    key: pki.serverKey,
  });
  const guard = ListenerGuard.attach(server, 'audit', limits, log);
  server.on('request', (_request, response) => response.end('ok\n'));
  const port = await listen(server);
  // A real client, its handshake done (so its bytes were read), and no request sent yet: as the API server
  // is when a flood from its own address arrives while it is still connecting.
  const real = tlsConnect({ port, host: '127.0.0.1', ca: pki.caPem, servername: 'localhost' });
  closers.push(async () => {
    real.destroy();
  });
  await once(real, 'secureConnect');
  let received = '';
  real.on('data', (chunk: Buffer) => {
    received += chunk.toString();
  });
  real.on('error', () => {});
  const closed = once(real, 'close');
  const flood = [];
  for (let i = 0; i < 10; i++) flood.push(await rawConnection(port));
  while ((guard.stats().get('address_limit') ?? 0) < 7) {
    await new Promise((resolve) => setImmediate(resolve));
  }
  real.write('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
  await closed;
  assert.match(received, /200 OK[\s\S]*ok\n$/);
  // Its own address's silent connections gave way instead, oldest first: the first 7 of the flood.
  for (const idle of flood.slice(0, 7)) assert.equal(await idle.closed, '');
  assert.equal(guard.stats().get('address_limit'), 7);
});

test('at the cap with every connection busy, a new connection is closed at once', async () => {
  const log = logger();
  const server = createServer(guardedServerOptions(LIMITS));
  const guard = ListenerGuard.attach(server, 'ui', LIMITS, log);
  const held: (() => void)[] = [];
  server.on('request', (_request, response) => {
    held.push(() => response.end('ok\n'));
  });
  const port = await listen(server);
  const busy = [];
  for (let i = 0; i < LIMITS.maxConnections; i++) {
    busy.push(await rawConnection(port, 'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'));
  }
  while (held.length < LIMITS.maxConnections) await new Promise((resolve) => setImmediate(resolve));
  const refused = await rawConnection(port);
  assert.equal(await refused.closed, '');
  assert.equal(guard.stats().get('limit'), 1);
  for (const release of held) release();
  for (const connection of busy) assert.match(await connection.closed, /200 OK[\s\S]*ok\n$/);
});

test('a TLS connection that never sends a ClientHello is closed at the handshake timeout, counted', async () => {
  const log = logger();
  const pki = makeTestPki();
  const limits = { ...LIMITS, handshakeTimeoutMs: 200 };
  const server = createHttpsServer({
    ...guardedServerOptions(limits),
    cert: pki.serverCert,
    key: pki.serverKey,
  });
  const guard = ListenerGuard.attach(server, 'audit', limits, log);
  server.on('request', (_request, response) => response.end('ok\n'));
  const port = await listen(server);
  const silent = await rawConnection(port);
  assert.equal(await silent.closed, '');
  assert.equal(guard.stats().get('handshake_timeout'), 1);
  // Forgotten once its server side closes too.
  while (guard.connections > 0) await new Promise((resolve) => setImmediate(resolve));
  assert.match(
    log.warnings.join('\n'),
    /^audit webhook: a connection did not complete its TLS handshake in time/m,
  );
});
