// src/kube/http2-pool.ts against a real HTTP/2 server on loopback (node:http2, TLS with a throwaway
// CA), for what the API server does not do on demand: a graceful GOAWAY while a watch runs, and a
// stream refused unprocessed. The API server itself is in test/integration/watch-connection.test.ts.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import { after, test } from 'node:test';
import { Http2Pool } from '../../../src/kube/http2-pool.ts';
import { readBody, type TransportRequest } from '../../../src/kube/transport.ts';
import { waitFor } from '../../helpers/kube-admin.ts';
import { makeTestPki } from '../../helpers/pki.ts';

const pki = makeTestPki();

interface TestServer {
  url: URL;
  sessions: http2.ServerHttp2Session[];
  /** Open streams by path. */
  streams: Map<string, http2.ServerHttp2Stream>;
  refuseNext: boolean;
  close(): Promise<void>;
}

async function startServer(): Promise<TestServer> {
  const server = http2.createSecureServer({
    key: pki.serverKey,
    cert: pki.serverCert,
    ALPNProtocols: ['h2'],
  });
  const result: TestServer = {
    url: new URL('https://127.0.0.1'),
    sessions: [],
    streams: new Map(),
    refuseNext: false,
    close: async () => {
      for (const session of result.sessions) session.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  server.on('session', (session) => result.sessions.push(session));
  server.on('stream', (stream, headers) => {
    const path = String(headers[':path']);
    // A refused stream ends in an error on this side too.
    stream.on('error', () => {});
    if (result.refuseNext) {
      result.refuseNext = false;
      stream.close(http2.constants.NGHTTP2_REFUSED_STREAM);
      return;
    }
    stream.respond({ ':status': 200, 'content-type': 'application/json' });
    if (path === '/watch') {
      result.streams.set(path, stream);
      stream.write('{"n":1}\n');
    } else {
      stream.end(JSON.stringify({ path }));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const address = server.address();
  assert.ok(address && typeof address === 'object');
  result.url = new URL(`https://127.0.0.1:${address.port}`);
  return result;
}

function pool(server: TestServer): Http2Pool {
  return new Http2Pool({
    server: server.url,
    tls: async () => ({ ca: pki.caPem }),
    connectTimeoutMs: 5_000,
    readIdleMs: 30_000,
    pingTimeoutMs: 15_000,
    maxConnections: 8,
  });
}

const get = (path: string, longLived = false): TransportRequest => ({
  method: 'GET',
  path,
  headers: {},
  headersTimeoutMs: 5_000,
  longLived,
});

const servers: TestServer[] = [];
after(async () => {
  for (const server of servers) await server.close();
});

test('a GOAWAY lets the running watch finish on its connection while new requests open one new connection', async () => {
  const server = await startServer();
  servers.push(server);
  const client = pool(server);
  try {
    const watch = await client.request(get('/watch', true));
    watch.body.setEncoding('utf8');
    const lines: string[] = [];
    watch.body.on('data', (text: string) => lines.push(text));
    await waitFor(() => lines.length === 1, { what: 'the first watch line' });
    const first = (
      await readBody(
        (
          await client.request(get('/a'))
        ).body,
        { maxBytes: 1024, idleMs: 5_000 },
        {
          server: 'test',
          path: '/a',
        },
      )
    ).toString();
    assert.deepEqual(JSON.parse(first), { path: '/a' });
    assert.equal(client.stats().open, 1, 'one connection carries the watch and the request');

    server.sessions[0]?.goaway(http2.constants.NGHTTP2_NO_ERROR);
    await waitFor(() => client.stats().lost.goaway === 1, { what: 'the client to see the GOAWAY' });
    const after = await client.request(get('/b'));
    await readBody(after.body, { maxBytes: 1024, idleMs: 5_000 }, { server: 'test', path: '/b' });
    assert.equal(server.sessions.length, 2, 'the request after the GOAWAY went to a new connection');
    assert.equal(client.stats().open, 2, 'two connections while one replaces the other');

    server.streams.get('/watch')?.write('{"n":2}\n');
    await waitFor(() => lines.length === 2, { what: 'the watch to go on over the old connection' });
    server.streams.get('/watch')?.end();
    await waitFor(() => client.stats().open === 1, {
      what: 'the old connection to close after its last stream',
    });
    assert.equal(client.stats().opened, 2);
  } finally {
    await client.close();
  }
});

test('a stream refused unprocessed is sent again on a new connection', async () => {
  const server = await startServer();
  servers.push(server);
  const client = pool(server);
  try {
    await readBody(
      (await client.request(get('/warm'))).body,
      { maxBytes: 1024, idleMs: 5_000 },
      {
        server: 'test',
        path: '/warm',
      },
    );
    server.refuseNext = true;
    const response = await client.request(get('/retried'));
    const body = await readBody(
      response.body,
      { maxBytes: 1024, idleMs: 5_000 },
      { server: 'test', path: '/retried' },
    );
    assert.deepEqual(JSON.parse(body.toString()), { path: '/retried' });
    assert.equal(server.sessions.length, 2);
  } finally {
    await client.close();
  }
});
