// src/who/audit/audit-server.ts on loopback: only an authenticated sender gets its records to the join
// (client certificate from the CA, allowed name, bearer token: each one configured must pass); what is
// refused is counted; bodies are bounded; changed certificate files are loaded without a restart.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connect } from 'node:tls';
import { Agent, request } from 'undici';
import type { Logger } from '../../../src/util/log.ts';
import type { AuditRecord } from '../../../src/who/audit/audit-match.ts';
import { AuditServer, type AuditServerOptions } from '../../../src/who/audit/audit-server.ts';
import { makeTestPki, type TestPki } from '../../helpers/pki.ts';

const BODY = JSON.stringify({
  kind: 'EventList',
  apiVersion: 'audit.k8s.io/v1',
  items: [
    {
      auditID: 'a1',
      stage: 'ResponseComplete',
      verb: 'create',
      user: { username: 'alice' },
      objectRef: { resource: 'configmaps', namespace: 'shop', name: 'web' },
      responseObject: { kind: 'ConfigMap', metadata: { uid: 'u1', resourceVersion: '1' } },
      stageTimestamp: '2026-11-22T10:31:07.412Z',
    },
  ],
});

describe('the audit webhook endpoint', () => {
  let dir: string;
  let pki: TestPki;
  let rogue: TestPki;
  let files: { certFile: string; keyFile: string; clientCAFile: string };
  const servers: AuditServer[] = [];
  const agents: Agent[] = [];

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'kubediff-audit-server-'));
    pki = makeTestPki();
    rogue = makeTestPki();
    const file = async (name: string, content: string) => {
      const at = path.join(dir, name);
      await writeFile(at, content);
      return at;
    };
    files = {
      certFile: await file('tls.crt', pki.serverCert),
      keyFile: await file('tls.key', pki.serverKey),
      clientCAFile: await file('ca.crt', pki.caPem),
    };
  });

  after(async () => {
    await Promise.all(servers.map((server) => server.close()));
    await Promise.all(agents.map((agent) => agent.close()));
    await rm(dir, { recursive: true, force: true });
  });

  async function start(options: Partial<AuditServerOptions> = {}, log?: Logger) {
    const received: AuditRecord[] = [];
    const server = await AuditServer.start({
      listen: '127.0.0.1:0',
      ...files,
      maxRequestBytes: 64 * 1024,
      onRecords: (records) => received.push(...records),
      log: log ?? { info: () => {}, warn: () => {}, debug: () => {} },
      ...options,
    });
    servers.push(server);
    const post = async (
      credentials: { client?: TestPki; token?: string; ca?: string },
      init: { method?: 'POST' | 'GET'; body?: string } = {},
    ) => {
      const agent = new Agent({
        connect: {
          ca: credentials.ca ?? pki.caPem,
          ...(credentials.client
            ? { cert: credentials.client.clientCert, key: credentials.client.clientKey }
            : {}),
        },
      });
      agents.push(agent);
      const response = await request(`https://${server.address}/audit`, {
        method: init.method ?? 'POST',
        dispatcher: agent,
        headers: credentials.token ? { authorization: `Bearer ${credentials.token}` } : {},
        ...(init.method === 'GET' ? {} : { body: init.body ?? BODY }),
      });
      return { status: response.statusCode, text: await response.body.text() };
    };
    return { server, received, post };
  }

  it('client certificate and token: both must pass; refusals are counted and change nothing', async () => {
    const { server, received, post } = await start({ token: 'secret-token' });
    assert.equal((await post({ client: pki, token: 'secret-token' })).status, 200);
    assert.equal(received.length, 1);
    const refused = [
      await post({ token: 'secret-token' }),
      await post({ client: rogue, token: 'secret-token' }),
      await post({ client: pki, token: 'wrong' }),
      await post({ client: pki }),
    ];
    assert.deepEqual(
      refused.map((answer) => answer.status),
      [401, 401, 401, 401],
    );
    assert.match(refused[0]?.text ?? '', /no client certificate/);
    assert.match(refused[2]?.text ?? '', /wrong bearer token/);
    assert.equal(received.length, 1);
    assert.equal(server.stats().requests.get('unauthorized'), 4);
    assert.equal(server.stats().requests.get('accepted'), 1);
  });

  it('a token alone; a certificate name outside clientNames is forbidden', async () => {
    const tokenOnly = await start({ clientCAFile: undefined, token: 't' });
    assert.equal((await tokenOnly.post({ token: 't' })).status, 200);
    const named = await start({ clientNames: ['kube-apiserver-*'] });
    const answer = await named.post({ client: pki });
    assert.equal(answer.status, 403);
    assert.match(answer.text, /kubediff-test-client/);
    const allowed = await start({ clientNames: ['kubediff-test-*'] });
    assert.equal((await allowed.post({ client: pki })).status, 200);
  });

  it('bounds and shapes: POST only, a body over the limit is refused, a body that is not an EventList too', async () => {
    const { server, received, post } = await start({ maxRequestBytes: 1024 });
    assert.equal((await post({ client: pki }, { method: 'GET' })).status, 405);
    const big = JSON.stringify({
      kind: 'EventList',
      apiVersion: 'audit.k8s.io/v1',
      items: [],
      pad: 'x'.repeat(5000),
    });
    assert.equal((await post({ client: pki }, { body: big })).status, 413);
    assert.equal((await post({ client: pki }, { body: '{"kind":"Event"}' })).status, 400);
    assert.equal(received.length, 0);
    assert.equal(server.stats().requests.get('too_large'), 1);
    assert.equal(server.stats().requests.get('bad_request'), 1);
  });

  it('a changed certificate is served without a restart; one that does not load keeps the old', async () => {
    const reloaded: string[] = [];
    let onLog: () => void = () => {};
    const log: Logger = {
      info: (message) => {
        reloaded.push(message);
        onLog();
      },
      warn: (message) => {
        reloaded.push(message);
        onLog();
      },
      debug: () => {},
    };
    const logged = (pattern: RegExp) =>
      new Promise<void>((resolve) => {
        const check = () => {
          if (reloaded.some((line) => pattern.test(line))) resolve();
        };
        onLog = check;
        check();
      });
    const own = path.join(dir, 'reload');
    const certFile = `${own}.crt`;
    const keyFile = `${own}.key`;
    await writeFile(certFile, pki.serverCert);
    await writeFile(keyFile, pki.serverKey);
    const { server } = await start({ certFile, keyFile, reloadIntervalMs: 20 }, log);
    const issuer = () =>
      new Promise<string>((resolve, reject) => {
        const [host, port] = server.address.split(':') as [string, string];
        const socket = connect({ host, port: Number(port), rejectUnauthorized: false }, () => {
          const certificate = socket.getPeerCertificate();
          socket.end();
          resolve(certificate.fingerprint256);
        });
        socket.on('error', reject);
      });
    const before = await issuer();
    await writeFile(certFile, 'not a certificate');
    await logged(/does not load/);
    assert.equal(await issuer(), before);
    await writeFile(keyFile, rogue.serverKey);
    await writeFile(certFile, rogue.serverCert);
    await logged(/reloaded/);
    assert.notEqual(await issuer(), before);
  });
});
