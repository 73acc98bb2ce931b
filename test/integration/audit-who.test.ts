// Who made each change, end to end: a real kube-apiserver with an audit policy and an audit webhook
// (batch mode, client certificate and bearer token) pointed at kubediff's --audit-listen, through a
// fault-injecting proxy. Two identities with edit rights (a token user and a ServiceAccount) and the
// admin change objects: every event names the right user, exactly (level RequestResponse) or by name
// and time (podtemplates are audited at level Metadata). Forged audit requests without the right
// credentials are refused and change nothing. A Secret's values, which the audit events carry in full,
// reach no output and not the state file. --ignore-user and `history --user` work on the names. With the
// webhook cut off, events still go out, without user. Then the webhook's blocking mode, with a bearer
// token alone.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:https';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Agent, request } from 'undici';
import {
  type AuditedApiserver,
  needsSharedEtcd,
  startAuditedApiserver,
} from '../helpers/audited-apiserver.ts';
import { type KubediffProcess, killAll, runKubediff, runKubediffToCompletion } from '../helpers/cli.ts';
import type { TestEvent } from '../helpers/events.ts';
import { type FaultProxy, startFaultProxy } from '../helpers/fault-proxy.ts';
import { KubeAdmin, waitFor } from '../helpers/kube-admin.ts';
import { assertNoLeaks, CANARY, fileSource, secretValue } from '../helpers/leak-check.ts';
import { SERVING, scrapeMetrics } from '../helpers/metrics.ts';
import { makeTestPki, type TestPki } from '../helpers/pki.ts';
import { freePorts } from '../helpers/processes.ts';
import { seededRandom } from '../helpers/random-json.ts';

const READY = /watching \d+ resource types?/;
const TOKEN = randomBytes(16).toString('hex');

describe('who made it: the audit webhook', { skip: needsSharedEtcd() }, () => {
  let dir: string;
  let pki: TestPki;
  let kubediffPort: number;
  let proxy: FaultProxy;
  let api: AuditedApiserver;
  let admin: KubeAdmin;
  let alice: KubeAdmin;
  let robot: KubeAdmin;
  let muted: KubeAdmin;
  let ns: string;
  let kd: KubediffProcess;
  let metricsBase: string;
  let stateFile: string;

  const cm = (name: string) => `/api/v1/namespaces/${ns}/configmaps/${name}`;
  const configmaps = () => `/api/v1/namespaces/${ns}/configmaps`;
  const robotName = () => `system:serviceaccount:${ns}:robot`;
  const eventOf = (type: TestEvent['type'], name: string, since = 0) =>
    kd.waitForEvent((event) => event.type === type && event.object.name === name, {
      since,
      description: `${type} ${name}`,
    });

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'kubediff-audit-'));
    pki = makeTestPki();
    const file = async (name: string, content: string) => {
      const at = path.join(dir, name);
      await writeFile(at, content, { mode: 0o600 });
      return at;
    };
    const certFile = await file('tls.crt', pki.serverCert);
    const keyFile = await file('tls.key', pki.serverKey);
    const caFile = await file('ca.crt', pki.caPem);
    stateFile = path.join(dir, 'state.db');
    // The port kubediff will listen on, reserved before the API server is told where to send.
    [kubediffPort] = (await freePorts(1)) as [number];
    proxy = await startFaultProxy({ target: { host: '127.0.0.1', port: kubediffPort } });
    api = await startAuditedApiserver({
      webhook: {
        url: `https://127.0.0.1:${proxy.port}/audit`,
        caPem: pki.caPem,
        clientCert: pki.clientCert,
        clientKey: pki.clientKey,
        token: TOKEN,
      },
      metadataOnly: ['podtemplates'],
    });
    admin = new KubeAdmin(api);
    ns = await admin.createNamespace('audit');
    // A Role of its own: the `edit` ClusterRole is aggregated by the controller manager, which this API
    // server runs without.
    const rbac = `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}`;
    await admin.create(`${rbac}/roles`, {
      metadata: { name: 'editor' },
      rules: [{ apiGroups: [''], resources: ['configmaps', 'secrets', 'podtemplates'], verbs: ['*'] }],
    });
    const bind = (name: string, subject: Record<string, string>) =>
      admin.create(`${rbac}/rolebindings`, {
        metadata: { name },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'editor' },
        subjects: [subject],
      });
    await bind('alice-edit', { kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'alice' });
    await admin.create(`/api/v1/namespaces/${ns}/serviceaccounts`, { metadata: { name: 'robot' } });
    await bind('robot-edit', { kind: 'ServiceAccount', name: 'robot', namespace: ns });
    await bind('nobody-edit', { kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'nobody' });
    const review = (await admin.create(`/api/v1/namespaces/${ns}/serviceaccounts/robot/token`, {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: { expirationSeconds: 3600 },
    })) as unknown as { status: { token: string } };
    alice = admin.as(api.aliceToken);
    robot = admin.as(review.status.token);
    muted = admin.as(api.nobodyToken as string);

    kd = runKubediff(
      [
        'watch',
        '--kubeconfig',
        api.kubeconfigPath,
        '-o',
        'json',
        '-n',
        ns,
        '-r',
        'configmaps',
        '-r',
        'secrets',
        '-r',
        'podtemplates',
        '--audit-listen',
        `127.0.0.1:${kubediffPort}`,
        '--audit-cert',
        certFile,
        '--audit-key',
        keyFile,
        '--audit-client-ca',
        caFile,
        // Long enough that a loaded machine's audit batch is never late for the identity checks; the
        // webhook-down case waits it out once.
        '--audit-wait',
        '5s',
        '--state',
        stateFile,
        '--listen',
        '127.0.0.1:0',
        '--ignore-user',
        'nob*',
      ],
      { env: { KUBEDIFF_AUDIT_TOKEN: TOKEN }, timeoutMs: 30_000, checkEvents: true },
    );
    await kd.waitForStderr(READY);
    metricsBase = (await kd.waitForStderr(SERVING))[1] as string;
  });

  after(async () => {
    await kd?.stop().catch(() => {});
    await killAll();
    await Promise.all([alice?.close(), robot?.close(), muted?.close(), admin?.close()]);
    await api?.stop();
    await proxy?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('names the token user, the ServiceAccount and the admin, each exactly', async () => {
    await alice.create(configmaps(), { metadata: { name: 'shared' }, data: { a: '1' } });
    const added = await eventOf('ADDED', 'shared');
    await robot.patch(cm('shared'), { data: { a: '2' } });
    const updated = await eventOf('UPDATED', 'shared');
    await admin.delete(cm('shared'));
    const deleted = await eventOf('DELETED', 'shared');

    assert.equal(added.by?.user?.username, 'alice');
    assert.ok(added.by?.user?.groups?.includes('devs'), JSON.stringify(added.by));
    assert.equal(updated.by?.user?.username, robotName());
    assert.equal(deleted.by?.user?.username, 'admin');
    for (const event of [added, updated, deleted]) {
      assert.equal(event.by?.match, 'exact', JSON.stringify(event));
      assert.match(event.by?.auditID ?? '', /^[0-9a-f-]{36}$/);
      assert.ok((event.by?.sourceIPs ?? []).includes('127.0.0.1'), JSON.stringify(event.by));
    }
  });

  it('a flood of 2,000 idle sockets at the audit port: they are closed, the API server is served meanwhile', async () => {
    // Connections that never send a ClientHello, as fast as they can be opened, from addresses that are not
    // the API server's (hostile pods'): the first 1,000 from one, which reaches its cap of 16; the rest from 7
    // others in turn, which together reach the cap of 64, where the addresses holding the most give way,
    // never the API server's connection, however long its handshake takes. (From the API server's own
    // address, a connection accepted before its first bytes are read cannot be told from the flood's.)
    const flood: Promise<void>[] = [];
    for (let i = 0; i < 2_000; i++) {
      const socket = connect({
        port: kubediffPort,
        host: '127.0.0.1',
        localAddress: i < 1_000 ? '127.0.0.2' : `127.0.0.${3 + (i % 7)}`,
      });
      socket.on('error', () => {});
      flood.push(once(socket, 'close').then(() => {}));
    }
    const closedFor = (metrics: Map<string, number>, reason: string) =>
      metrics.get(`kubediff_listener_connections_closed_total{listener="audit",reason="${reason}"}`) ?? 0;
    const closedAll = (metrics: Map<string, number>) =>
      closedFor(metrics, 'address_limit') +
      closedFor(metrics, 'limit') +
      closedFor(metrics, 'handshake_timeout');
    // kubediff has taken the whole flood: all but the 64 it holds at its cap are closed. Awaited, not raced:
    // on a loaded machine taking 2,000 sockets lasts longer than a change waits for its record (--audit-wait),
    // which would test the machine's speed.
    await waitFor(async () => closedAll(await scrapeMetrics(metricsBase)) >= 2_000 - 64, {
      timeoutMs: 240_000,
      what: 'kubediff to take the 2,000 sockets of the flood',
    });
    // The API server's own connection is cut: it must connect again, into the idle sockets still held.
    proxy.cutAll();
    await alice.create(configmaps(), { metadata: { name: 'during-the-flood' }, data: { a: '1' } });
    const added = await eventOf('ADDED', 'during-the-flood');
    assert.equal(added.by?.user?.username, 'alice', JSON.stringify(added.by));
    assert.equal(added.by?.match, 'exact');
    // Every socket of the flood is closed by kubediff: replaced by newer ones at the cap of their address or
    // of all connections, or at the TLS handshake's timeout.
    await Promise.all(flood);
    const metrics = await scrapeMetrics(metricsBase);
    const closed = (reason: string) =>
      metrics.get(`kubediff_listener_connections_closed_total{listener="audit",reason="${reason}"}`) ?? 0;
    assert.ok(closed('address_limit') > 0, `closed at the cap: ${closed('address_limit')}`);
    assert.ok(closed('limit') > 0, `closed at the cap of all: ${closed('limit')}`);
    assert.ok(closed('handshake_timeout') > 0, `timed out: ${closed('handshake_timeout')}`);
    assert.ok(closed('address_limit') + closed('limit') + closed('handshake_timeout') >= 2_000);
    assert.equal(
      kd.stderr.match(/audit webhook: a connection did not complete its TLS handshake/g)?.length,
      1,
    );
    assert.equal(
      kd.stderr.match(
        /audit webhook: 16 connections from 127\.0\.0\.\d are open, the most served to one address/g,
      )?.length,
      1,
    );
    // And after it, as before.
    const since = kd.events.length;
    await alice.patch(cm('during-the-flood'), { data: { a: '2' } });
    const updated = await eventOf('UPDATED', 'during-the-flood', since);
    assert.equal(updated.by?.user?.username, 'alice');
  });

  it('joins what is audited without response objects by name and time: nearest', async () => {
    const templates = `/api/v1/namespaces/${ns}/podtemplates`;
    await robot.create(templates, {
      metadata: { name: 'tpl' },
      template: { spec: { containers: [{ name: 'c', image: 'busybox:1' }] } },
    });
    const added = await eventOf('ADDED', 'tpl');
    await alice.patch(`${templates}/tpl`, { metadata: { labels: { tier: 'web' } } });
    const updated = await eventOf('UPDATED', 'tpl');
    assert.deepEqual(
      [added.by?.user?.username, added.by?.match, updated.by?.user?.username, updated.by?.match],
      [robotName(), 'nearest', 'alice', 'nearest'],
    );
  });

  it('refuses audit requests without the right credentials, and they change nothing', async () => {
    await admin.create(configmaps(), { metadata: { name: 'target' }, data: { a: '1' } });
    await eventOf('ADDED', 'target');
    const forged = JSON.stringify({
      kind: 'EventList',
      apiVersion: 'audit.k8s.io/v1',
      items: [
        {
          auditID: '00000000-0000-0000-0000-000000000000',
          stage: 'ResponseComplete',
          verb: 'patch',
          user: { username: 'mallory' },
          objectRef: { resource: 'configmaps', namespace: ns, name: 'target', apiVersion: 'v1' },
          responseStatus: { code: 200 },
          stageTimestamp: new Date(Date.now() + 1_000).toISOString(),
        },
      ],
    });
    const rogue = makeTestPki();
    const attempts: [string, { cert?: string; key?: string; token?: string }][] = [
      ['no client certificate', { token: TOKEN }],
      ['a certificate of another CA', { cert: rogue.clientCert, key: rogue.clientKey, token: TOKEN }],
      ['a wrong token', { cert: pki.clientCert, key: pki.clientKey, token: 'not-the-token' }],
      ['no token', { cert: pki.clientCert, key: pki.clientKey }],
    ];
    for (const [what, credentials] of attempts) {
      const agent = new Agent({
        connect: {
          ca: pki.caPem,
          ...(credentials.cert ? { cert: credentials.cert, key: credentials.key } : {}),
        },
      });
      try {
        const response = await request(`https://127.0.0.1:${kubediffPort}/audit`, {
          method: 'POST',
          dispatcher: agent,
          headers: {
            'content-type': 'application/json',
            ...(credentials.token ? { authorization: `Bearer ${credentials.token}` } : {}),
          },
          body: forged,
        });
        await response.body.text();
        assert.equal(response.statusCode, 401, what);
      } finally {
        await agent.close();
      }
    }
    await alice.patch(cm('target'), { data: { a: '2' } });
    const updated = await eventOf('UPDATED', 'target');
    assert.equal(updated.by?.user?.username, 'alice');
    assert.equal(updated.by?.match, 'exact');
    assert.deepEqual(
      kd.events.filter((event) => event.by?.user?.username === 'mallory'),
      [],
      'a refused request names nobody',
    );
    const metrics = await scrapeMetrics(metricsBase);
    assert.ok((metrics.get('kubediff_audit_requests_total{outcome="unauthorized"}') ?? 0) >= attempts.length);
    assert.ok((metrics.get('kubediff_audit_requests_total{outcome="accepted"}') ?? 0) > 0);
  });

  it('a Secret changed through the audited API: its values reach no output and not the state file', async () => {
    const random = seededRandom(15);
    const first = secretValue(random, 40);
    const second = secretValue(random, 40);
    const secrets = `/api/v1/namespaces/${ns}/secrets`;
    await alice.create(secrets, {
      metadata: { name: 'creds', annotations: { note: secretValue(random, 20) } },
      stringData: { password: first },
    });
    await eventOf('ADDED', 'creds');
    await robot.patch(`${secrets}/creds`, { stringData: { password: second } });
    const updated = await eventOf('UPDATED', 'creds');
    assert.equal(updated.by?.user?.username, robotName());
    await alice.delete(`${secrets}/creds`);
    const deleted = await eventOf('DELETED', 'creds');
    assert.equal(deleted.by?.user?.username, 'alice');
    await assertNoLeaks([
      { name: 'stdout', read: () => kd.stdout, expect: /<redacted sha256:/ },
      { name: 'stderr', read: () => kd.stderr, expect: 'receiving audit events' },
      fileSource('state file', stateFile),
      fileSource('state file -wal', `${stateFile}-wal`),
    ]);
    assert.ok(!kd.stdout.includes(CANARY));
  });

  it('--ignore-user: changes by that user are not reported', async () => {
    const since = kd.events.length;
    await muted.create(configmaps(), { metadata: { name: 'muted' }, data: { a: '1' } });
    await alice.create(configmaps(), { metadata: { name: 'sentinel' }, data: { a: '1' } });
    const sentinel = await eventOf('ADDED', 'sentinel', since);
    assert.equal(sentinel.by?.user?.username, 'alice');
    assert.deepEqual(
      kd.events.slice(since).filter((event) => event.object.name === 'muted'),
      [],
      'a change by an ignored user, made before the sentinel',
    );
  });

  it('history --user lists what a user changed, from the state file', async () => {
    // The events of the tests above are in the state file by now: each was recorded when it went out.
    const run = await runKubediffToCompletion([
      'history',
      '--state',
      stateFile,
      '--user',
      'system:serviceaccount:*:robot',
      '-o',
      'json',
    ]);
    assert.equal(run.code, 0, run.stderr);
    const events = run.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as TestEvent);
    assert.ok(events.length >= 2, run.stdout);
    assert.deepEqual([...new Set(events.map((event) => event.by?.user?.username))], [robotName()]);
    assert.ok(events.some((event) => event.type === 'UPDATED' && event.object.name === 'shared'));
  });

  it('the webhook cut off: events still go out, without user; back on, with user again', async () => {
    await admin.create(configmaps(), { metadata: { name: 'cut' }, data: { a: '1' } });
    await eventOf('ADDED', 'cut');
    proxy.blackhole(true);
    try {
      await alice.patch(cm('cut'), { data: { a: '2' } });
      const alone = await eventOf('UPDATED', 'cut');
      // The field manager is still known (from managedFields); the user is not.
      assert.equal(alone.by?.user, undefined, JSON.stringify(alone));
      assert.equal(alone.by?.auditID, undefined, JSON.stringify(alone));
    } finally {
      proxy.blackhole(false);
    }
    const since = kd.events.length;
    await alice.patch(cm('cut'), { data: { a: '3' } });
    const again = await eventOf('UPDATED', 'cut', since);
    assert.equal(again.by?.user?.username, 'alice');
  });
});

describe('who made it: the audit webhook in blocking mode, a bearer token alone', {
  skip: needsSharedEtcd(),
}, () => {
  let dir: string;
  let api: AuditedApiserver;
  let admin: KubeAdmin;
  let kd: KubediffProcess;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'kubediff-audit-blocking-'));
    const pki = makeTestPki();
    const certFile = path.join(dir, 'tls.crt');
    const keyFile = path.join(dir, 'tls.key');
    await writeFile(certFile, pki.serverCert, { mode: 0o600 });
    await writeFile(keyFile, pki.serverKey, { mode: 0o600 });
    const [port] = (await freePorts(1)) as [number];
    // In blocking mode every write of the API server waits for the webhook, its own start-up writes
    // too, retrying while nothing answers: a stand-in takes them until kubediff (which needs the API
    // server to start) listens on the port.
    const standIn = createServer({ cert: pki.serverCert, key: pki.serverKey }, (request, response) => {
      request.resume();
      response.end('{}');
    });
    // Every socket, handshakes in progress too (closeAllConnections() knows only HTTP connections).
    const sockets = new Set<Socket>();
    standIn.on('connection', (socket: Socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve) => standIn.listen(port, '127.0.0.1', resolve));
    api = await startAuditedApiserver({
      mode: 'blocking',
      // The API server's client certificate is not trusted by this kubediff: only the token counts.
      webhook: {
        url: `https://127.0.0.1:${port}/`,
        caPem: pki.caPem,
        clientCert: pki.clientCert,
        clientKey: pki.clientKey,
        token: TOKEN,
      },
    });
    admin = new KubeAdmin(api);
    await new Promise<void>((resolve) => {
      standIn.close(() => resolve());
      standIn.closeAllConnections();
      for (const socket of sockets) socket.destroy();
    });
    kd = runKubediff(
      [
        'watch',
        '--kubeconfig',
        api.kubeconfigPath,
        '-o',
        'json',
        '-r',
        'configmaps',
        '-n',
        'default',
        '--audit-listen',
        `127.0.0.1:${port}`,
        '--audit-cert',
        certFile,
        '--audit-key',
        keyFile,
        '--audit-wait',
        '5s',
      ],
      { env: { KUBEDIFF_AUDIT_TOKEN: TOKEN }, timeoutMs: 30_000, checkEvents: true },
    );
    await kd.waitForStderr(READY).catch((error: unknown) => {
      throw new Error(`${String(error)}\n${kd.stderr}`);
    });
  });

  after(async () => {
    await kd?.stop().catch(() => {});
    await killAll();
    await admin?.close();
    await api?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('each write is posted alone, before its answer: the change names its user exactly', async () => {
    const alice = admin.as(api.aliceToken);
    try {
      await admin.create('/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles', {
        metadata: { name: 'cm-editor' },
        rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['*'] }],
      });
      await admin.create('/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings', {
        metadata: { name: 'alice-cm' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'cm-editor' },
        subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'alice' }],
      });
      await alice.create('/api/v1/namespaces/default/configmaps', {
        metadata: { name: 'blocking' },
        data: { a: '1' },
      });
      await alice.patch('/api/v1/namespaces/default/configmaps/blocking', { data: { a: '2' } });
      const updated = await kd.waitForEvent(
        (event) => event.type === 'UPDATED' && event.object.name === 'blocking',
      );
      assert.equal(updated.by?.user?.username, 'alice');
      assert.equal(updated.by?.match, 'exact');
    } finally {
      await alice.close();
    }
  });
});
