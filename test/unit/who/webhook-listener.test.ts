// src/who/listener/webhook-listener.ts on real TLS connections on loopback: what the API server (or whoever
// reaches the port) sees when a body is too large midway, when a route has a bug, when taking a request's
// records fails; and that the port stays usable for real reviews while clients hold connections or
// send their bodies slowly.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect as netConnect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connect, type TLSSocket } from 'node:tls';
import { EventFailures } from '../../../src/util/event-failures.ts';
import type { Logger } from '../../../src/util/log.ts';
import { WebhookListener, type WebhookListenerOptions } from '../../../src/who/listener/webhook-listener.ts';
import type { WebhookRoute } from '../../../src/who/listener/webhook-route.ts';
import { reviewBody, slowBodies } from '../../helpers/admission-load.ts';
import { makeTestPki, type TestPki } from '../../helpers/pki.ts';

function logger(): Logger & { warnings: string[] } {
  const warnings: string[] = [];
  return { warnings, info: () => {}, debug: () => {}, warn: (message) => warnings.push(message) };
}

/** The request uid of a review body. */
const uidOf = (body: Buffer) => (JSON.parse(body.toString()) as { request: { uid: string } }).request.uid;

const OK: WebhookRoute = { receive: () => ({ status: 200, body: '{"ok":true}' }) };

describe('the webhook listener', () => {
  let dir: string;
  let pki: TestPki;
  let files: { certFile: string; keyFile: string };
  const listeners: WebhookListener[] = [];
  const sockets: TLSSocket[] = [];

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'kubediff-webhook-listener-'));
    pki = makeTestPki();
    files = {
      certFile: path.join(dir, 'tls.crt'),
      keyFile: path.join(dir, 'tls.key'),
    };
    await writeFile(files.certFile, pki.serverCert);
    await writeFile(files.keyFile, pki.serverKey);
  });

  after(async () => {
    for (const socket of sockets) socket.destroy();
    await Promise.all(listeners.map((listener) => listener.close()));
    await rm(dir, { recursive: true, force: true });
  });

  const start = async (options: Partial<WebhookListenerOptions> = {}) => {
    const log = logger();
    const listener = await WebhookListener.start({
      name: 'admission webhook',
      settingsKey: 'admission',
      listener: 'admission',
      flag: '--admission-listen',
      requestsMetric: 'kubediff_admission_reviews_total',
      listen: '127.0.0.1:0',
      ...files,
      maxRequestBytes: 1024,
      maxConcurrentRequests: 8,
      route: OK,
      log,
      ...options,
    });
    listeners.push(listener);
    return { listener, log };
  };

  /**
   * A TLS connection (from `from`, another loopback address) that writes `text` (if any) and collects
   * what comes back until it closes.
   */
  const open = async (port: number, text?: string, from = '127.0.0.1') => {
    const tcp = netConnect({ port, host: '127.0.0.1', localAddress: from });
    tcp.on('error', () => {});
    const socket = connect({ socket: tcp, host: '127.0.0.1', ca: pki.caPem });
    sockets.push(socket);
    socket.on('error', () => {});
    let received = '';
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString();
    });
    const closed = new Promise<string>((resolve) => socket.once('close', () => resolve(received)));
    // A connection the listener closes at once never completes its handshake.
    await Promise.race([new Promise((resolve) => socket.once('secureConnect', resolve)), closed]);
    if (text !== undefined) socket.write(text);
    return { socket, closed, received: () => received };
  };

  /** One POST on a connection of its own; its status line and body. */
  const post = async (port: number, body = '{}') => {
    const { closed } = await open(
      port,
      `POST /review HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
    return closed;
  };

  it("a route's plan keeps the first bytes of a body, decided from its length; a body cut lets its plan go", async () => {
    const plans: { declared: number; kept?: string; abandoned: boolean }[] = [];
    const route: WebhookRoute = {
      receive: () => ({ status: 500, body: '', why: 'the whole body, not the plan' }),
      plan: (declared) => {
        const plan: (typeof plans)[number] = { declared, abandoned: false };
        plans.push(plan);
        return {
          keepBytes: 10,
          receive: (kept) => {
            plan.kept = kept.toString();
            return { status: 200, body: '{}' };
          },
          abandon: () => {
            plan.abandoned = true;
          },
        };
      },
    };
    const { listener } = await start({ route, bodyTimeoutMs: 300 });
    const body = `0123456789${'x'.repeat(890)}`;
    assert.match(await post(listener.port, body), /^HTTP\/1\.1 200 /);
    // A body that never arrives whole: cut at its deadline, its plan let go.
    const { closed } = await open(
      listener.port,
      'POST /review HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n0123456789',
    );
    assert.match(await closed, /^HTTP\/1\.1 408 /);
    // Without a Content-Length: planned for the most it may be, its first bytes kept as they come.
    const chunked = await open(
      listener.port,
      'POST /review HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n4\r\n0123\r\n',
    );
    chunked.socket.write(`c8\r\n456789${'y'.repeat(194)}\r\n0\r\n\r\n`);
    assert.match(await chunked.closed, /^HTTP\/1\.1 200 /);
    assert.deepEqual(plans, [
      { declared: 900, kept: '0123456789', abandoned: false },
      { declared: 500, abandoned: true },
      { declared: 1024, kept: '0123456789', abandoned: false },
    ]);
  });

  it('a body found too large midway gets its 413 before the connection closes', async () => {
    const { listener } = await start();
    const { socket, closed } = await open(
      listener.port,
      'POST /review HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n',
    );
    // No Content-Length: the bound is found while reading. The client goes on sending, as a large
    // body does: bytes still arriving when the server closes make it a reset, which loses the answer.
    for (let i = 0; i < 64; i++) socket.write(`4000\r\n${'x'.repeat(0x4000)}\r\n`);
    const answer = await closed;
    assert.match(answer, /^HTTP\/1\.1 413 /);
    assert.match(answer, /the body is larger than 1 KiB \(admission\.maxRequestSize\)/);
    assert.equal(listener.stats().requests.get('too_large'), 1);
  });

  it('a route with a bug: 500, counted as internal_error, not bad_request', async () => {
    const { listener, log } = await start({
      route: {
        receive: () => {
          throw new TypeError('a bug');
        },
      },
    });
    assert.match(await post(listener.port), /^HTTP\/1\.1 500 /);
    assert.deepEqual(Object.fromEntries(listener.stats().requests), { internal_error: 1 });
    assert.match(log.warnings.join('\n'), /outcome="internal_error"/);
  });

  it('taking the records of a request fails: reported under handler, the next request is answered', async () => {
    const log = logger();
    const failures = new EventFailures(log);
    let calls = 0;
    const { listener } = await start({
      failures,
      route: {
        receive: () => ({
          status: 200,
          body: '{}',
          after: () => {
            // What the join's offer does in the request's 'end' handler: unheard, it would end the process.
            if (calls++ === 0) throw new RangeError('the join has a bug');
          },
        }),
      },
    });
    assert.match(await post(listener.port), /^HTTP\/1\.1 200 /);
    assert.match(await post(listener.port), /^HTTP\/1\.1 200 /);
    assert.equal(calls, 2);
    assert.equal(failures.count('handler'), 1);
    assert.deepEqual(log.warnings, [
      'taking the records of a request failed for the admission webhook: RangeError: the join has a bug; its records are dropped. Further failures of this kind are only counted (--debug shows each one).',
    ]);
  });

  /** What a client that keeps its connection writes: one request, kept alive. */
  const keptAlive = (body = '{}') =>
    `POST /review HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;

  it('64 connections that each sent a review and are held alive do not keep a new review out', async () => {
    const { listener, log } = await start();
    const held = [];
    // Four addresses of 16 (the most one address may hold): the whole cap of 64.
    for (const from of ['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5']) {
      for (let i = 0; i < 16; i++) {
        const connection = await open(listener.port, keptAlive(), from);
        while (!/\{"ok":true\}\r\n0\r\n\r\n$/.test(connection.received()))
          await new Promise((resolve) => setImmediate(resolve));
        held.push(connection);
      }
    }
    assert.equal(listener.guard.connections, 64);
    // The API server's review, on a new connection: the connection idle longest gives way.
    assert.match(await post(listener.port), /^HTTP\/1\.1 200 [\s\S]*\{"ok":true\}/);
    assert.equal(await held[0]?.closed, held[0]?.received(), 'the first held connection was closed');
    assert.equal(listener.guard.stats().get('limit'), 1);
    assert.match(
      log.warnings.join('\n'),
      /^admission webhook: 64 connections are open, the most served; a new one replaces one of the address holding the most: the oldest that has sent nothing yet, else the one idle longest; the connection is closed/m,
    );
  });

  it('one address holds at most 16 connections: its 17th takes the place of its own idlest', async () => {
    const { listener } = await start();
    const held = [];
    for (let i = 0; i < 17; i++) {
      const connection = await open(listener.port, keptAlive(), '127.0.0.6');
      while (!/\{"ok":true\}\r\n0\r\n\r\n$/.test(connection.received()))
        await new Promise((resolve) => setImmediate(resolve));
      held.push(connection);
    }
    await held[0]?.closed;
    assert.equal(listener.guard.connections, 16);
    assert.equal(listener.guard.stats().get('address_limit'), 1);
    // Another address is not affected.
    assert.match(await post(listener.port), /^HTTP\/1\.1 200 /);
  });

  it('bodies sent slowly are cut at the body deadline (408), and reviews are answered again', async () => {
    const { listener } = await start({ bodyTimeoutMs: 300, maxConcurrentRequests: 8 });
    const slow = [];
    for (let i = 0; i < 8; i++) {
      // A body announced as 100 bytes, of which one is sent: it holds one of the 8 reads.
      slow.push(
        await open(listener.port, 'POST /review HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{'),
      );
    }
    // Every read is held: a review is refused at once (503, the API server lets the write through).
    let answer = await post(listener.port);
    while (/^HTTP\/1\.1 503 /.test(answer)) answer = await post(listener.port);
    assert.match(answer, /^HTTP\/1\.1 200 /);
    for (const connection of slow) {
      assert.match(await connection.closed, /^HTTP\/1\.1 408 [\s\S]*the body did not arrive within 300ms\n/);
    }
    assert.equal(listener.stats().requests.get('timeout'), 8);
  });

  it('slow bodies from two addresses holding every read, each under the slow-body cut: every real review is answered', async () => {
    // What admission-server.ts sets (8 reads, 5 s, 1 s), and issue 36's attack: 8 keep-alive connections
    // from each of two addresses, each finishing a body and starting the next every 950 ms.
    const { listener } = await start({
      route: { receive: (body) => ({ status: 200, body: `{"uid":${JSON.stringify(uidOf(body))}}` }) },
      maxRequestBytes: 64 * 1024,
      bodyTimeoutMs: 5_000,
      slowBodyMs: 1_000,
    });
    const attack = slowBodies({
      port: listener.port,
      ca: pki.caPem,
      addresses: ['127.0.0.2', '127.0.0.3'],
      perAddress: 8,
      cycleMs: 950,
    });
    try {
      // Every read taken: the attack's own surplus requests are refused.
      while (!attack.statuses.has(503)) await new Promise((resolve) => setTimeout(resolve, 10));
      const answers: string[] = [];
      for (let i = 0; i < 20; i++) {
        const uid = `real-${i}`;
        const answer = await post(listener.port, reviewBody(uid));
        answers.push(
          answer.startsWith('HTTP/1.1 200 ') && answer.includes(`{"uid":"${uid}"}`) ? 'ok' : answer,
        );
      }
      assert.deepEqual(answers, Array(20).fill('ok'));
    } finally {
      await attack.stop();
    }
  });

  it('a 503 carries a Retry-After only when asked to (the audit webhook); the API server waits out an admission one', async () => {
    const answers = [];
    for (const busyRetryAfterSeconds of [undefined, 1]) {
      const { listener } = await start({
        maxConcurrentRequests: 1,
        bodyTimeoutMs: 3_600_000,
        ...(busyRetryAfterSeconds ? { busyRetryAfterSeconds } : {}),
      });
      await open(listener.port, 'POST /review HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{');
      answers.push(await post(listener.port));
    }
    assert.match(answers[0] ?? '', /^HTTP\/1\.1 503 /);
    assert.doesNotMatch(answers[0] ?? '', /retry-after/i);
    assert.match(answers[1] ?? '', /^HTTP\/1\.1 503 [\s\S]*\r\nretry-after: 1\r\n/i);
  });

  it('with every read held by a slow body, a new review takes the place of the one waiting longest (408)', async () => {
    const { listener } = await start({ bodyTimeoutMs: 3_600_000, slowBodyMs: 100, maxConcurrentRequests: 8 });
    const slow = [];
    for (let i = 0; i < 8; i++) {
      slow.push(
        await open(listener.port, 'POST /review HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{'),
      );
    }
    // Refused (503) only while the held reads are younger than slowBodyMs; then answered, long before
    // the body deadline.
    let answer = await post(listener.port);
    while (/^HTTP\/1\.1 503 /.test(answer)) answer = await post(listener.port);
    assert.match(answer, /^HTTP\/1\.1 200 /);
    assert.match(
      await (slow[0] as { closed: Promise<string> }).closed,
      /^HTTP\/1\.1 408 [\s\S]*the body was still arriving after 100ms while other requests waited\n/,
    );
    assert.equal(listener.stats().requests.get('timeout'), 1);
  });
});

describe('the webhook listener with a certificate source (a certificate kubediff manages)', () => {
  it('serves what the source holds, the next one when told, and takes a peer presenting the next one', async () => {
    const { makeCertificateSet } = await import('../../../src/who/certificate/self-signed-ca.ts');
    const { X509Certificate } = await import('node:crypto');
    const made = () =>
      makeCertificateSet({
        dnsNames: ['kd-admission.kd.svc'],
        caName: 'kd admission CA',
        notBefore: new Date(Date.now() - 60_000),
        notAfter: new Date(Date.now() + 3600_000),
      });
    const [first, second] = [await made(), await made()];
    const changed: ((served: { cert: Buffer; key: Buffer }) => void)[] = [];
    const source = {
      current: { cert: Buffer.from(first.certPem), key: Buffer.from(first.keyPem) },
      next: undefined as Buffer | undefined,
      onChange: (listener: (served: { cert: Buffer; key: Buffer }) => void) => changed.push(listener),
    };
    const listener = await WebhookListener.start({
      name: 'admission webhook',
      settingsKey: 'admission',
      listener: 'admission',
      flag: '--admission-listen',
      requestsMetric: 'kubediff_admission_reviews_total',
      listen: '127.0.0.1:0',
      certificate: source,
      maxRequestBytes: 1024,
      maxConcurrentRequests: 8,
      route: OK,
      log: logger(),
    });
    try {
      const presented = () =>
        new Promise<string>((resolve, reject) => {
          const socket = connect(
            {
              host: '127.0.0.1',
              port: listener.port,
              servername: 'kd-admission.kd.svc',
              ca: first.caPem + second.caPem,
            },
            () => {
              resolve(socket.getPeerCertificate().fingerprint256);
              socket.end();
            },
          );
          socket.once('error', reject);
        });
      const fingerprint = (pem: string) => new X509Certificate(pem).fingerprint256;
      assert.equal(await presented(), fingerprint(first.certPem));
      // A rotation under way: the other replica may present the next certificate first.
      source.next = Buffer.from(second.certPem);
      assert.deepEqual(listener.peerFingerprints, [fingerprint(first.certPem), fingerprint(second.certPem)]);
      // The source switches: served from the next handshake on; the previous one still taken from a peer.
      source.current = { cert: Buffer.from(second.certPem), key: Buffer.from(second.keyPem) };
      source.next = undefined;
      for (const notify of changed) notify(source.current);
      assert.equal(await presented(), fingerprint(second.certPem));
      assert.deepEqual(listener.peerFingerprints, [fingerprint(second.certPem), fingerprint(first.certPem)]);
    } finally {
      await listener.close();
    }
  });
});
