// src/who/peers/peer-forwarder.ts and the peer route of webhook-listener.ts on loopback: the records one
// replica receives reach the other, both sides authenticated by the serving certificate the replicas share
// (another certificate is refused either way); a replica does not send to itself; the queue is bounded.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { type AddressInfo, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Agent, request } from 'undici';
import type { Logger } from '../../../src/util/log.ts';
import type { AdmissionRecord } from '../../../src/who/admission/admission-match.ts';
import type { AuditRecord } from '../../../src/who/audit/audit-match.ts';
import { PEER_PATH, WebhookListener } from '../../../src/who/listener/webhook-listener.ts';
import { PeerForwarder } from '../../../src/who/peers/peer-forwarder.ts';
import { encodePeerRecords, type PeerRecords, readPeerRecords } from '../../../src/who/peers/peer-records.ts';
import { makeTestPki } from '../../helpers/pki.ts';

const quiet: Logger = { info: () => {}, debug: () => {}, warn: () => {} };

const admissionRecord: AdmissionRecord = {
  reviewUID: 'r1',
  operation: 'UPDATE',
  group: 'apps',
  resource: 'deployments',
  subresource: 'scale',
  namespace: 'shop',
  name: 'web',
  uid: 'u1',
  oldResourceVersion: '4',
  replicas: 3,
  user: { username: 'bob', groups: ['devs'], uid: 'bob-uid' },
  time: 1_700_000_000_000,
};
/** A DELETE's review: checked by the digest of its old object (admission-match.ts). */
const deleteRecord: AdmissionRecord = {
  ...admissionRecord,
  reviewUID: 'r2',
  operation: 'DELETE',
  subresource: undefined,
  replicas: undefined,
  oldDigest: 'Zm9vYmFyYmF6cXV4cXV1eA',
};
const auditRecord: AuditRecord = {
  auditID: 'a1',
  verb: 'patch',
  group: '',
  resource: 'configmaps',
  namespace: 'shop',
  name: 'cm',
  uid: 'u2',
  resourceVersion: '7',
  user: { username: 'alice' },
  impersonatedUser: { username: 'bob' },
  userAgent: 'kubectl',
  sourceIPs: ['10.0.0.1'],
  time: 1_700_000_000_001,
};

describe('records posted to the other replicas', () => {
  let dir: string;
  const shared = makeTestPki();
  const other = makeTestPki();
  const files: Record<'shared' | 'other', { certFile: string; keyFile: string }> = {} as never;
  const closers: (() => Promise<void>)[] = [];

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'kubediff-peers-'));
    for (const [name, pki] of [
      ['shared', shared],
      ['other', other],
    ] as const) {
      const certFile = path.join(dir, `${name}.crt`);
      const keyFile = path.join(dir, `${name}.key`);
      await writeFile(certFile, pki.serverCert);
      await writeFile(keyFile, pki.serverKey);
      files[name] = { certFile, keyFile };
    }
  });
  after(async () => {
    for (const close of closers.reverse()) await close();
    await rm(dir, { recursive: true, force: true });
  });

  /** A replica's listener; what peers post to it is collected. */
  const replica = async (certificate: 'shared' | 'other') => {
    const received: PeerRecords[] = [];
    let notify: () => void = () => {};
    const listener = await WebhookListener.start({
      name: 'admission webhook',
      settingsKey: 'admission',
      listener: 'admission',
      flag: '--admission-listen',
      requestsMetric: 'kubediff_admission_reviews_total',
      listen: '127.0.0.1:0',
      ...files[certificate],
      maxRequestBytes: 1024 * 1024,
      maxConcurrentRequests: 4,
      route: { receive: () => ({ status: 200, body: '{}' }) },
      peerRoute: {
        receive: (body) => {
          received.push(readPeerRecords(body.toString('utf8')));
          notify();
          return { status: 200, body: '{}' };
        },
      },
      log: quiet,
    });
    closers.push(() => listener.close());
    const next = () =>
      new Promise<void>((resolve) => {
        notify = resolve;
      });
    return { listener, received, next };
  };
  const forwarder = async (from: WebhookListener, address: string, options: { maxQueued?: number } = {}) => {
    const made = new PeerForwarder({ address, listener: from, log: quiet, ...options });
    closers.push(() => made.close());
    await made.start();
    return made;
  };
  /** Resolves once the forwarder has no request in flight (the next stats() are final). */
  const settled = async (made: PeerForwarder, count: number) => {
    for (;;) {
      const stats = made.stats().records;
      const done = (stats.get('sent') ?? 0) + (stats.get('failed') ?? 0) + (stats.get('dropped') ?? 0);
      if (done >= count) return stats;
      await new Promise((resolve) => setImmediate(resolve));
    }
  };

  it('reach the other replica, field for field, with the shared certificate both ways', async () => {
    const a = await replica('shared');
    const b = await replica('shared');
    const fromA = await forwarder(a.listener, `127.0.0.1:${b.listener.port}`);
    const arrived = b.next();
    fromA.forward({ admission: [admissionRecord, deleteRecord], audit: [auditRecord] });
    await arrived;
    const { subresource: _subresource, replicas: _replicas, ...deleted } = deleteRecord;
    assert.deepEqual(b.received, [{ audit: [auditRecord], admission: [admissionRecord, deleted] }]);
    assert.equal(fromA.stats().peers, 1);
    assert.equal((await settled(fromA, 3)).get('sent'), 3);
    assert.equal(b.listener.stats().peerRequests.get('accepted'), 1);
  });

  it('a client with another certificate, or none, is refused; a peer with another is not sent to', async () => {
    const b = await replica('shared');
    const post = async (client?: { cert: string; key: string }) => {
      const agent = new Agent({ connect: { rejectUnauthorized: false, ...client } });
      try {
        const response = await request(`https://127.0.0.1:${b.listener.port}${PEER_PATH}`, {
          method: 'POST',
          dispatcher: agent,
          body: encodePeerRecords({ audit: [], admission: [admissionRecord] }),
        });
        await response.body.text();
        return response.statusCode;
      } finally {
        await agent.close();
      }
    };
    assert.equal(await post({ cert: other.serverCert, key: other.serverKey }), 401);
    assert.equal(await post(), 401);
    assert.equal(await post({ cert: shared.serverCert, key: shared.serverKey }), 200);
    assert.equal(b.listener.stats().peerRequests.get('unauthorized'), 2);
    assert.equal(b.received.length, 1);
    const rogue = await replica('other');
    const toRogue = await forwarder(b.listener, `127.0.0.1:${rogue.listener.port}`);
    toRogue.forward({ admission: [admissionRecord] });
    assert.equal((await settled(toRogue, 1)).get('failed'), 1);
    assert.deepEqual(rogue.received, [], "the server's certificate is checked before anything is sent");
    assert.equal(rogue.listener.stats().peerRequests.size, 0);
  });

  it('a replica does not send to itself; the queue of a peer is bounded', async () => {
    const a = await replica('shared');
    const itself = await forwarder(a.listener, `localhost:${a.listener.port}`);
    assert.equal(itself.stats().peers, 0);
    // A peer that is gone: 5 records at once into a queue of 2.
    const gone = await replica('shared');
    const port = gone.listener.port;
    await gone.listener.close();
    const toGone = await forwarder(a.listener, `127.0.0.1:${port}`, { maxQueued: 2 });
    toGone.forward({ admission: [1, 2, 3, 4, 5].map((n) => ({ ...admissionRecord, reviewUID: `r${n}` })) });
    const stats = await settled(toGone, 5);
    assert.deepEqual([stats.get('dropped'), stats.get('failed'), stats.get('sent')], [3, 2, undefined]);
  });

  it('a peer that accepts TCP and never completes TLS: the attempt fails at the connect timeout, the next one is made', async () => {
    const a = await replica('shared');
    // A port that takes connections and never says anything (a stuck replica).
    const held: Socket[] = [];
    const silent = createServer((socket) => {
      held.push(socket);
      socket.on('error', () => {});
    });
    silent.listen(0, '127.0.0.1');
    await once(silent, 'listening');
    closers.push(async () => {
      for (const socket of held) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    });
    const { port } = silent.address() as AddressInfo;
    const warnings: string[] = [];
    const log: Logger = { info: () => {}, debug: () => {}, warn: (message) => warnings.push(message) };
    const made = new PeerForwarder({
      address: `127.0.0.1:${port}`,
      listener: a.listener,
      log,
      connectTimeoutMs: 200,
    });
    closers.push(() => made.close());
    await made.start();
    made.forward({ admission: [admissionRecord] });
    assert.equal((await settled(made, 1)).get('failed'), 1);
    made.forward({ admission: [{ ...admissionRecord, reviewUID: 'r2' }] });
    assert.equal((await settled(made, 2)).get('failed'), 2);
    assert.match(
      warnings.join('\n'),
      /^peers: cannot send records to https:\/\/127\.0\.0\.1:\d+ \(no TLS connection within 200ms\)/,
    );
  });
});
