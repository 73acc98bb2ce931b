// Two leader-elected replicas, each with the webhook and --peers naming the other, sharing one serving
// certificate (as two pods mount one Secret): the API server calls the standby, and the leader's events
// still name the user, exactly, because the standby posts what it receives to the leader. Then the
// leader stops and the other takes over: attribution goes on. Once with the admission webhook, run as on
// a managed cluster (the API server presents no credentials: --admission-allow-unauthenticated), once
// with the audit webhook (the same gap, closed the same way).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  type AdmissionApiserver,
  admissionWebhookConfiguration,
  needsSharedEtcd,
  registerWebhook,
  startAdmissionApiserver,
} from '../helpers/admission-apiserver.ts';
import { type AuditedApiserver, startAuditedApiserver } from '../helpers/audited-apiserver.ts';
import { type KubediffProcess, killAll, runKubediff } from '../helpers/cli.ts';
import type { TestEvent } from '../helpers/events.ts';
import { KubeAdmin } from '../helpers/kube-admin.ts';
import { SERVING, scrapeMetrics } from '../helpers/metrics.ts';
import { makeTestPki, type TestPki } from '../helpers/pki.ts';
import { freePorts } from '../helpers/processes.ts';

const READY = /watching \d+ resource types?/;
const TOKEN = randomBytes(16).toString('hex');

/** Two replicas of one leader election; `webhookArgs(port)` are each one's webhook flags. */
async function startPair(options: {
  kubeconfig: string;
  namespace: string;
  ports: [number, number];
  webhookArgs: (port: number) => string[];
}): Promise<{
  leader: KubediffProcess;
  standby: KubediffProcess;
  metrics: (kd: KubediffProcess) => Promise<Map<string, number>>;
}> {
  const bases = new Map<KubediffProcess, string>();
  const start = (name: string, own: number, other: number) => {
    const kd = runKubediff(
      [
        'watch',
        '--kubeconfig',
        options.kubeconfig,
        '-o',
        'json',
        '-n',
        options.namespace,
        '-r',
        'configmaps',
        '--leader-elect',
        '--leader-election-namespace',
        options.namespace,
        '--leader-election-id',
        'who',
        '--leader-election-identity',
        name,
        '--leader-election-lease-duration',
        '4s',
        '--leader-election-renew-deadline',
        '3s',
        '--leader-election-retry-period',
        '1s',
        '--listen',
        '127.0.0.1:0',
        ...options.webhookArgs(own),
        '--peers',
        `127.0.0.1:${other}`,
      ],
      { env: { KUBEDIFF_AUDIT_TOKEN: TOKEN }, timeoutMs: 30_000, checkEvents: true },
    );
    return kd;
  };
  const [a, b] = options.ports;
  const leader = start('replica-a', a, b);
  await leader.waitForStderr(/became the leader/);
  bases.set(leader, (await leader.waitForStderr(SERVING))[1] as string);
  const standby = start('replica-b', b, a);
  await standby.waitForStderr(/replica-a leads; standing by/);
  await standby.waitForStderr(READY);
  bases.set(standby, (await standby.waitForStderr(SERVING))[1] as string);
  return { leader, standby, metrics: (kd) => scrapeMetrics(bases.get(kd) as string) };
}

function certificateFiles(dir: string, pki: TestPki): Promise<{ cert: string; key: string; ca: string }> {
  const write = async (name: string, content: string) => {
    const at = path.join(dir, name);
    await writeFile(at, content, { mode: 0o600 });
    return at;
  };
  return Promise.all([
    write('tls.crt', pki.serverCert),
    write('tls.key', pki.serverKey),
    write('ca.crt', pki.caPem),
  ]).then(([cert, key, ca]) => ({ cert, key, ca }));
}

/** A Role of its own: the `edit` and `admin` ClusterRoles are aggregated by a controller manager these API servers run without. */
async function grantConfigMaps(admin: KubeAdmin, namespace: string, users: string[]): Promise<void> {
  const rbac = `/apis/rbac.authorization.k8s.io/v1/namespaces/${namespace}`;
  await admin.create(`${rbac}/roles`, {
    metadata: { name: 'configmaps' },
    rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['*'] }],
  });
  await admin.create(`${rbac}/rolebindings`, {
    metadata: { name: 'configmaps' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'configmaps' },
    subjects: users.map((name) => ({ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name })),
  });
}

const eventOf = (kd: KubediffProcess, type: TestEvent['type'], name: string, since = 0) =>
  kd.waitForEvent((event) => event.type === type && event.object.name === name, {
    since,
    description: `${type} ${name}`,
  });

describe('two replicas: the admission review sent to the standby names the user on the leader', {
  skip: needsSharedEtcd(),
}, () => {
  let dir: string;
  let api: AdmissionApiserver;
  let admin: KubeAdmin;
  let alice: KubeAdmin;
  let bob: KubeAdmin;
  let pair: Awaited<ReturnType<typeof startPair>>;
  let unregister: () => Promise<void>;
  let namespace: string;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'kubediff-who-replicas-'));
    const pki = makeTestPki();
    const files = await certificateFiles(dir, pki);
    // As EKS, GKE and AKS: the API server presents no credentials to webhooks.
    api = await startAdmissionApiserver();
    admin = new KubeAdmin(api);
    namespace = await admin.createNamespace('replicas');
    await grantConfigMaps(admin, namespace, ['alice', 'bob']);
    alice = admin.as(api.tokens.alice);
    bob = admin.as(api.tokens.bob);
    const ports = (await freePorts(2)) as [number, number];
    pair = await startPair({
      kubeconfig: api.kubeconfigPath,
      namespace,
      ports,
      webhookArgs: (port) => [
        '--admission-listen',
        `127.0.0.1:${port}`,
        '--admission-cert',
        files.cert,
        '--admission-key',
        files.key,
        '--admission-allow-unauthenticated',
      ],
    });
    // The API server calls the standby only.
    unregister = await registerWebhook(
      admin,
      await admissionWebhookConfiguration({
        name: `kubediff-who-${namespace}`,
        url: `https://127.0.0.1:${ports[1]}/review`,
        caPem: pki.caPem,
      }),
    );
    for (let attempt = 0; ; attempt++) {
      assert.ok(attempt < 100, 'the webhook was never called');
      const name = `probe-${attempt}`;
      await alice.create(`/api/v1/namespaces/${namespace}/configmaps`, { metadata: { name } });
      if ((await eventOf(pair.leader, 'ADDED', name)).by?.user) break;
    }
  });

  after(async () => {
    await pair?.leader.stop().catch(() => {});
    await pair?.standby.stop().catch(() => {});
    await killAll();
    await unregister?.().catch(() => {});
    await Promise.all([alice?.close(), bob?.close(), admin?.close()]);
    await api?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("the leader's events name each user exactly; after a takeover the new leader's do too", async () => {
    const cms = `/api/v1/namespaces/${namespace}/configmaps`;
    await alice.create(cms, { metadata: { name: 'shared' }, data: { a: '1' } });
    const added = await eventOf(pair.leader, 'ADDED', 'shared');
    await bob.patch(`${cms}/shared`, { data: { a: '2' } });
    const updated = await eventOf(pair.leader, 'UPDATED', 'shared');
    assert.deepEqual(
      [added, updated].map((event) => [event.by?.user?.username, event.by?.match]),
      [
        ['alice', 'exact'],
        ['bob', 'exact'],
      ],
    );
    const standbyMetrics = await pair.metrics(pair.standby);
    assert.ok((standbyMetrics.get('kubediff_peer_records_total{outcome="sent"}') ?? 0) >= 2);
    const leaderMetrics = await pair.metrics(pair.leader);
    assert.ok((leaderMetrics.get('kubediff_peer_requests_total{outcome="accepted"}') ?? 0) >= 1);
    assert.deepEqual(pair.standby.events, [], 'the standby delivers nothing');

    const stopped = await pair.leader.stop('SIGTERM');
    assert.equal(stopped.code, 0, stopped.stderr);
    await pair.standby.waitForStderr(/became the leader/);
    await bob.patch(`${cms}/shared`, { data: { a: '3' } });
    const taken = await pair.standby.waitForEvent(
      (event) => event.type === 'UPDATED' && event.object.name === 'shared' && event.changes?.[0]?.to === '3',
    );
    assert.deepEqual([taken.by?.user?.username, taken.by?.match], ['bob', 'exact']);
  });
});

describe('two replicas: the audit batch sent to the standby names the user on the leader', {
  skip: needsSharedEtcd(),
}, () => {
  let dir: string;
  let api: AuditedApiserver;
  let admin: KubeAdmin;
  let alice: KubeAdmin;
  let pair: Awaited<ReturnType<typeof startPair>>;
  let namespace: string;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'kubediff-who-replicas-audit-'));
    const pki = makeTestPki();
    const files = await certificateFiles(dir, pki);
    const ports = (await freePorts(2)) as [number, number];
    api = await startAuditedApiserver({
      webhook: {
        url: `https://127.0.0.1:${ports[1]}/audit`,
        caPem: pki.caPem,
        clientCert: pki.clientCert,
        clientKey: pki.clientKey,
        token: TOKEN,
      },
    });
    admin = new KubeAdmin(api);
    namespace = await admin.createNamespace('replicas-audit');
    await grantConfigMaps(admin, namespace, ['alice']);
    alice = admin.as(api.aliceToken);
    pair = await startPair({
      kubeconfig: api.kubeconfigPath,
      namespace,
      ports,
      webhookArgs: (port) => [
        '--audit-listen',
        `127.0.0.1:${port}`,
        '--audit-cert',
        files.cert,
        '--audit-key',
        files.key,
        '--audit-client-ca',
        files.ca,
        '--audit-wait',
        '5s',
      ],
    });
  });

  after(async () => {
    await pair?.leader.stop().catch(() => {});
    await pair?.standby.stop().catch(() => {});
    await killAll();
    await Promise.all([alice?.close(), admin?.close()]);
    await api?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("the leader's event names the user exactly, from the record the standby received", async () => {
    await alice.create(`/api/v1/namespaces/${namespace}/configmaps`, { metadata: { name: 'audited' } });
    const added = await eventOf(pair.leader, 'ADDED', 'audited');
    assert.deepEqual([added.by?.user?.username, added.by?.match], ['alice', 'exact']);
    const standbyMetrics = await pair.metrics(pair.standby);
    assert.ok((standbyMetrics.get('kubediff_peer_records_total{outcome="sent"}') ?? 0) >= 1);
  });
});
