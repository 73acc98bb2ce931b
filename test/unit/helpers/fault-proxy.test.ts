import assert from 'node:assert/strict';
import { once } from 'node:events';
import net from 'node:net';
import { afterEach, beforeEach, describe, mock, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type FaultProxy, startFaultProxy } from '../../helpers/fault-proxy.ts';

/** A TCP echo server that closes its side when the client closes its own. */
interface EchoServer {
  port: number;
  /** Sockets accepted and not closed yet. */
  sockets: Set<net.Socket>;
  /** Resolves once every socket accepted so far has closed. */
  allClosed(): Promise<void>;
  close(): Promise<void>;
}

async function startEchoServer(): Promise<EchoServer> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    socket.once('close', () => sockets.delete(socket));
    socket.pipe(socket);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  assert.ok(address !== null && typeof address !== 'string');
  return {
    port: address.port,
    sockets,
    allClosed: async () => {
      await Promise.all([...sockets].map((socket) => closeOf(socket)));
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Resolves when a socket has closed (unlike `once`, an 'error' before the close does not reject). */
function closeOf(socket: net.Socket): Promise<void> {
  return new Promise((resolve) => socket.once('close', () => resolve()));
}

/** A client socket that records what it receives and how it ended. */
interface Client {
  socket: net.Socket;
  received(): string;
  /** Resolves once the received text includes `text`. */
  waitFor(text: string): Promise<void>;
  /** Resolves with the error (if any) once the socket has closed. */
  closed: Promise<Error | undefined>;
}

const clients = new Set<net.Socket>();

async function connect(port: number): Promise<Client> {
  const socket = net.connect({ host: '127.0.0.1', port });
  clients.add(socket);
  let data = '';
  let error: Error | undefined;
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    data += chunk;
    socket.emit('received');
  });
  socket.on('error', (err) => {
    error = err;
  });
  const closed = new Promise<Error | undefined>((resolve) => {
    socket.once('close', () => {
      clients.delete(socket);
      resolve(error);
    });
  });
  await once(socket, 'connect');
  return {
    socket,
    received: () => data,
    closed,
    waitFor: (text) =>
      new Promise<void>((resolve, reject) => {
        const check = (): void => {
          if (!data.includes(text)) return;
          socket.off('received', check);
          socket.off('close', onClose);
          resolve();
        };
        const onClose = (): void => {
          socket.off('received', check);
          reject(
            new Error(`socket closed before receiving ${JSON.stringify(text)}; got ${JSON.stringify(data)}`),
          );
        };
        socket.on('received', check);
        socket.once('close', onClose);
        check();
      }),
  };
}

/** Whether a socket error is what a client sees when the connection is reset. */
function isReset(error: Error | undefined): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ECONNRESET' || code === 'EPIPE';
}

describe('fault proxy', () => {
  let echo: EchoServer;
  let proxy: FaultProxy;

  beforeEach(async () => {
    echo = await startEchoServer();
    proxy = await startFaultProxy({ target: { host: '127.0.0.1', port: echo.port } });
  });

  afterEach(async () => {
    for (const socket of clients) socket.destroy();
    await proxy.close();
    await echo.close();
  });

  test('forwards bytes both ways and counts connections', async () => {
    assert.equal(proxy.url(), `https://127.0.0.1:${proxy.port}`);
    assert.equal(proxy.url('http'), `http://127.0.0.1:${proxy.port}`);
    const a = await connect(proxy.port);
    const b = await connect(proxy.port);
    await proxy.waitForConnections(2, 2000);
    a.socket.write('hello ');
    a.socket.write('world');
    b.socket.write('other');
    await a.waitFor('hello world');
    await b.waitFor('other');
    assert.equal(a.received(), 'hello world');
    assert.equal(proxy.connections, 2);
    assert.equal(proxy.totalConnections, 2);
  });

  test('forwards a FIN and stops counting the connection', async () => {
    const client = await connect(proxy.port);
    await proxy.waitForConnections(1, 2000);
    client.socket.end('bye');
    // The echo server echoes, then ends its side when it sees the FIN; the client then sees the end.
    await once(client.socket, 'end');
    assert.equal(client.received(), 'bye');
    assert.equal(await client.closed, undefined);
    assert.equal(proxy.connections, 0);
  });

  test('cutAll resets every open connection, and new connections work afterwards', async () => {
    const a = await connect(proxy.port);
    const b = await connect(proxy.port);
    a.socket.write('ping');
    await a.waitFor('ping');
    await proxy.waitForConnections(2, 2000);

    proxy.cutAll();
    const [errorA, errorB] = await Promise.all([a.closed, b.closed]);
    assert.ok(isReset(errorA), `expected a reset, got ${String(errorA)}`);
    assert.ok(isReset(errorB), `expected a reset, got ${String(errorB)}`);
    assert.equal(proxy.connections, 0);

    const again = await connect(proxy.port);
    await proxy.waitForConnections(1, 2000);
    again.socket.write('pong');
    await again.waitFor('pong');
    assert.equal(proxy.totalConnections, 3);
  });

  test('a reset from the upstream reaches the client as a reset', async () => {
    const client = await connect(proxy.port);
    client.socket.write('x');
    await client.waitFor('x');
    for (const socket of echo.sockets) socket.resetAndDestroy();
    assert.ok(isReset(await client.closed));
  });

  test('an unreachable target looks like a reset to the client', async () => {
    const down = await startFaultProxy({ target: { host: '127.0.0.1', port: await freePort() } });
    try {
      const client = await connect(down.port);
      assert.ok(isReset(await client.closed));
      assert.equal(down.connections, 0);
    } finally {
      await down.close();
    }
  });

  test('blackhole holds all traffic, for open and new connections, until the link comes back', async () => {
    const old = await connect(proxy.port);
    old.socket.write('before;');
    await old.waitFor('before;');

    proxy.blackhole(true);
    old.socket.write('during;');
    const fresh = await connect(proxy.port);
    fresh.socket.write('fresh;');
    await proxy.waitForConnections(2, 2000);
    // An absence can only be checked over a bounded window.
    await sleep(200);
    assert.equal(old.received(), 'before;');
    assert.equal(fresh.received(), '');
    assert.equal(old.socket.destroyed, false);
    assert.equal(fresh.socket.destroyed, false);

    proxy.blackhole(false);
    await old.waitFor('during;');
    await fresh.waitFor('fresh;');
    assert.equal(old.received(), 'before;during;');
    old.socket.write('after;');
    await old.waitFor('after;');
  });

  test('blackhole hides an upstream reset until the link comes back', async () => {
    const client = await connect(proxy.port);
    client.socket.write('x');
    await client.waitFor('x');
    proxy.blackhole(true);
    for (const socket of echo.sockets) socket.resetAndDestroy();
    await sleep(100);
    assert.equal(client.socket.destroyed, false);
    proxy.blackhole(false);
    assert.ok(isReset(await client.closed));
  });

  test('a client giving up on a black-holed connection is no longer counted', async () => {
    const client = await connect(proxy.port);
    await proxy.waitForConnections(1, 2000);
    proxy.blackhole(true);
    client.socket.destroy();
    await client.closed;
    await proxy.waitForIdle(2000);
    assert.equal(proxy.totalConnections, 1);
  });

  test('unansweredStretches: how long the client waited for the server (black holes: watch-connection.test.ts)', async () => {
    const client = await connect(proxy.port);
    client.socket.write('a;');
    await client.waitFor('a;');
    assert.equal(proxy.unansweredStretches(0), 1, 'answered: one stretch');

    // The server's answer leaves the proxy 100 ms after the question: a stretch of at least that.
    proxy.setDelay(100);
    client.socket.write('slow;');
    await client.waitFor('slow;');
    assert.equal(proxy.unansweredStretches(100), 1);
    assert.equal(proxy.unansweredStretches(0), 2);
  });

  test('setDelay delays every chunk in both directions and keeps the order', async () => {
    const client = await connect(proxy.port);
    client.socket.write('warm;');
    await client.waitFor('warm;');

    proxy.setDelay(150);
    const started = performance.now();
    for (const part of ['a', 'b', 'c', 'd']) {
      client.socket.write(part);
      await new Promise((resolve) => setImmediate(resolve));
    }
    await client.waitFor('abcd');
    const elapsed = performance.now() - started;
    assert.equal(client.received(), 'warm;abcd');
    // 150 ms on the way to the echo server, 150 ms on the way back.
    assert.ok(elapsed >= 290, `echo took ${elapsed} ms, expected at least 300`);

    // Delay 0 forwards at once: with the timers frozen, the chunk still makes the round trip.
    proxy.setDelay(0);
    mock.timers.enable({ apis: ['setTimeout'] });
    try {
      client.socket.write('quick');
      await client.waitFor('quick');
    } finally {
      mock.timers.reset();
    }
    assert.equal(client.received(), 'warm;abcdquick');
    assert.throws(() => proxy.setDelay(-1), RangeError);
  });

  test('refuse resets new connections but keeps open ones', async () => {
    const open = await connect(proxy.port);
    proxy.refuse(true);
    // Depending on timing the reset fails the connect itself or arrives right after it.
    const refused = net.connect({ host: '127.0.0.1', port: proxy.port });
    let error: Error | undefined;
    refused.on('error', (err) => {
      error = err;
    });
    refused.on('data', () => assert.fail('a refused connection received data'));
    await closeOf(refused);
    assert.ok(error === undefined || isReset(error), `unexpected ${String(error)}`);
    assert.equal(proxy.totalConnections, 1);
    assert.equal(proxy.connections, 1);

    open.socket.write('still here');
    await open.waitFor('still here');

    proxy.refuse(false);
    const accepted = await connect(proxy.port);
    accepted.socket.write('ok');
    await accepted.waitFor('ok');
    assert.equal(proxy.totalConnections, 2);
  });

  test('waitForConnections resolves on a connection and rejects on timeout', async () => {
    await proxy.waitForConnections(0, 10);
    const waiting = proxy.waitForConnections(1, 2000);
    const total = proxy.waitForTotalConnections(1, 2000);
    await connect(proxy.port);
    await Promise.all([waiting, total]);
    await assert.rejects(
      proxy.waitForConnections(2, 50),
      /timed out after 50 ms waiting for 2 open connection/,
    );
  });

  test('close resets everything and leaves no sockets, servers or timers behind', async () => {
    // A closed handle is still listed until libuv runs its close callback, on the next turn of the loop.
    const handles = async (): Promise<string[]> => {
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setImmediate(resolve));
      return process
        .getActiveResourcesInfo()
        .filter((name) => name === 'TCPSocketWrap' || name === 'TCPServerWrap' || name === 'Timeout')
        .sort();
    };
    // The echo server and the proxy are listening.
    const baseline = await handles();
    assert.deepEqual(baseline, ['TCPServerWrap', 'TCPServerWrap']);

    const a = await connect(proxy.port);
    const b = await connect(proxy.port);
    a.socket.write('x');
    await a.waitFor('x');
    proxy.setDelay(10_000);
    a.socket.write('held in a timer');
    // The proxy reads the chunk on a later turn of the loop and schedules its delivery; nothing reports that but
    // the timer itself.
    for (let turn = 0; !process.getActiveResourcesInfo().includes('Timeout'); turn++) {
      assert.ok(turn < 10_000, 'the proxy never scheduled the delayed chunk');
      await new Promise((resolve) => setImmediate(resolve));
    }
    b.socket.write('in flight');
    const pending = assert.rejects(proxy.waitForConnections(10, 60_000), /fault proxy closed/);
    const echoClosed = echo.allClosed();

    await proxy.close();
    await pending;
    assert.ok(isReset(await a.closed));
    assert.ok(isReset(await b.closed));
    await echoClosed;
    // Only the echo server is left.
    assert.deepEqual(await handles(), ['TCPServerWrap']);
    await assert.rejects(connect(proxy.port), /ECONNREFUSED/);
    await proxy.close();
  });
});

/** A port nothing listens on. */
async function freePort(): Promise<number> {
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  assert.ok(address !== null && typeof address !== 'string');
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return address.port;
}
