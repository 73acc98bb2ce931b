// --leader-elect with two and three replicas against the real API server: one delivers, the others
// stand by; when the leader dies (SIGKILL) a standby takes over within the lease duration and reports
// the changes made during the handover exactly once, without re-sending what the old leader
// delivered; on a clean stop (SIGTERM) the Lease is released and a standby takes over at once.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type KubediffProcess, runKubediff } from '../helpers/cli.ts';
import { testCluster } from '../helpers/cluster-env.ts';
import { startFaultProxy } from '../helpers/fault-proxy.ts';
import { ADMIN_FIELD_MANAGER, adminClient, type KubeObject, waitFor } from '../helpers/kube-admin.ts';
import { SERVING, scrapeMetrics } from '../helpers/metrics.ts';

const admin = adminClient();
const LEASE_MS = 4_000;

describe('leader election', () => {
  let namespace: string;
  let kubeconfig: string;
  const processes: KubediffProcess[] = [];

  before(async () => {
    namespace = await admin.createNamespace('leader');
    kubeconfig = await admin.writeKubeconfig();
  });
  after(async () => {
    for (const kd of processes) if (!kd.exitResult) await kd.kill();
    await admin.deleteNamespace(namespace).catch(() => {});
  });

  const replica = (
    identity: string,
    lease: string,
    through = kubeconfig,
    ...extra: string[]
  ): KubediffProcess => {
    const kd = runKubediff(
      [
        'watch',
        '--kubeconfig',
        through,
        '-o',
        'json',
        '-n',
        namespace,
        '-r',
        'configmaps',
        '--leader-elect',
        '--leader-election-namespace',
        namespace,
        '--leader-election-id',
        lease,
        '--leader-election-identity',
        identity,
        '--leader-election-lease-duration',
        `${LEASE_MS / 1000}s`,
        '--leader-election-renew-deadline',
        '3s',
        '--leader-election-retry-period',
        '1s',
        ...extra,
      ],
      { timeoutMs: 60_000, checkEvents: true },
    );
    processes.push(kd);
    return kd;
  };

  const cmPath = (name = '') => `/api/v1/namespaces/${namespace}/configmaps${name ? `/${name}` : ''}`;
  const createCM = (name: string, data: Record<string, string>) =>
    admin.create(cmPath(), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data });
  const readLease = async (name: string) =>
    (await admin.get(`/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/${name}`)) as KubeObject & {
      spec: { holderIdentity?: string; leaseTransitions?: number };
    };
  const ids = (kd: KubediffProcess) => kd.events.map((event) => event.id);
  const about = (name: string) => (kd: KubediffProcess) =>
    kd.events.filter((event) => event.object.name === name);

  test('the leader dies (SIGKILL): a standby reports the handover changes once, and nothing twice', async () => {
    const a = replica('replica-a', 'handover-kill');
    await a.waitForStderr(/became the leader/);
    const b = replica('replica-b', 'handover-kill');
    await b.waitForStderr(/replica-a leads; standing by/);

    await createCM('one', { v: '1' });
    await a.waitForEvent((event) => event.type === 'ADDED' && event.object.name === 'one');
    await admin.patch(cmPath('one'), { data: { v: '2' } });
    const updated = await a.waitForEvent((event) => event.type === 'UPDATED' && event.object.name === 'one');
    // The standby sees them too, but delivers nothing (its events are checked at the end).
    // The leader's checkpoint (written on each renewal) has passed the update.
    await waitFor(
      async () => {
        const text = (await readLease('handover-kill')).metadata.annotations?.['kubediff.io/checkpoint'];
        const rv = text ? (JSON.parse(text) as { rv: Record<string, string> }).rv.configmaps : undefined;
        return rv !== undefined && BigInt(rv) >= BigInt(updated.object.resourceVersion);
      },
      { timeoutMs: 10_000, what: 'the checkpoint in the Lease to pass the update' },
    );

    await a.kill();
    // Changes while nobody leads.
    await admin.patch(cmPath('one'), { data: { v: '3' } });
    await createCM('two', { v: '1' });

    // How soon (within the lease duration, by the standby's own clock) is test/unit/kube/leader-election.test.ts's.
    await b.waitForStderr(/became the leader/, 3 * LEASE_MS);
    const v3 = await b.waitForEvent((event) => event.type === 'UPDATED' && event.object.name === 'one');
    assert.deepEqual(v3.changes, [
      { op: 'replace', path: '/data/v', from: '2', to: '3', manager: ADMIN_FIELD_MANAGER },
    ]);
    await b.waitForEvent((event) => event.type === 'ADDED' && event.object.name === 'two');

    // After the takeover, live changes as usual.
    await admin.patch(cmPath('two'), { data: { v: '2' } });
    await b.waitForEvent((event) => event.type === 'UPDATED' && event.object.name === 'two');
    // A later change on the same watch: everything before it has been reported by now.
    await createCM('sentinel-kill', {});
    await b.waitForEvent((event) => event.object.name === 'sentinel-kill');

    // Exactly once: nothing the old leader delivered is sent again, nothing is sent twice.
    assert.deepEqual(
      about('one')(b).map((event) => event.type),
      ['UPDATED'],
      'the standby reports only the change the old leader never saw',
    );
    assert.deepEqual(
      about('two')(b).map((event) => event.type),
      ['ADDED', 'UPDATED'],
    );
    assert.equal(new Set(ids(b)).size, ids(b).length, 'no event twice');
    assert.deepEqual(
      ids(b).filter((id) => ids(a).includes(id)),
      [],
      'no event the old leader delivered',
    );
    const lease = await readLease('handover-kill');
    assert.equal(lease.spec.holderIdentity, 'replica-b');
    const result = await b.stop('SIGTERM');
    assert.equal(result.code, 0, result.stderr);
  });

  test('a clean stop (SIGTERM) releases the Lease: a standby takes over at once, with no gap and no repeat', async () => {
    const a = replica('replica-c', 'handover-term');
    await a.waitForStderr(/became the leader/);
    const b = replica('replica-d', 'handover-term');
    await b.waitForStderr(/replica-c leads; standing by/);

    await createCM('three', { v: '1' });
    await a.waitForEvent((event) => event.type === 'ADDED' && event.object.name === 'three');
    await admin.patch(cmPath('three'), { data: { v: '2' } });
    await a.waitForEvent((event) => event.type === 'UPDATED' && event.object.name === 'three');

    // Stopped right after a change, before its next renewal: the release carries the final checkpoint.
    const result = await a.stop('SIGTERM');
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stderr, /released the lease/);
    await admin.patch(cmPath('three'), { data: { v: '3' } });

    await b.waitForStderr(/became the leader/, 3 * LEASE_MS);
    const v3 = await b.waitForEvent((event) => event.type === 'UPDATED' && event.object.name === 'three');
    assert.deepEqual(v3.changes, [
      { op: 'replace', path: '/data/v', from: '2', to: '3', manager: ADMIN_FIELD_MANAGER },
    ]);
    await createCM('sentinel-term', {});
    await b.waitForEvent((event) => event.object.name === 'sentinel-term');
    assert.deepEqual(
      about('three')(b).map((event) => event.type),
      ['UPDATED'],
    );
    const lease = await readLease('handover-term');
    assert.equal(lease.spec.holderIdentity, 'replica-d');
    assert.equal(lease.spec.leaseTransitions, 1);
    assert.equal((await b.stop('SIGTERM')).code, 0);
  });

  test('a leader cut off from the API server stops delivering before a standby takes over', async () => {
    const { hostname, port } = new URL(testCluster().server);
    const proxy = await startFaultProxy({ target: { host: hostname, port: Number(port) } });
    try {
      // --explain: a standby says on stderr what it saw, before holding it back.
      const a = replica('replica-e', 'handover-cut', await admin.writeKubeconfig(proxy.url()), '--explain');
      await a.waitForStderr(/became the leader/);
      const b = replica('replica-f', 'handover-cut');
      await b.waitForStderr(/replica-e leads; standing by/);

      proxy.blackhole(true);
      await a.waitForStderr(/lost the lease \(could not renew the lease for 3s\); standing by/, 3 * LEASE_MS);
      await b.waitForStderr(/became the leader/, 3 * LEASE_MS);
      await createCM('split', { v: '1' });
      await b.waitForEvent((event) => event.type === 'ADDED' && event.object.name === 'split');

      // Back online, the old leader sees the change too, but holds it back: one replica delivers.
      proxy.blackhole(false);
      await a.waitForStderr(/replica-f leads; standing by/, 3 * LEASE_MS);
      await a.waitForStderr(/explain: ADDED configmaps \S+\/split /, 3 * LEASE_MS);
      assert.equal((await a.stop('SIGTERM')).code, 0);
      assert.equal(about('split')(a).length, 0, 'the old leader, now standing by, never delivered it');
      assert.equal(about('split')(b).length, 1);
      assert.equal((await b.stop('SIGTERM')).code, 0);
    } finally {
      await proxy.close();
    }
  });

  test("a checkpoint someone else wrote into the Lease (a floor above the API server's resourceVersion) is refused, logged and counted", async () => {
    const a = replica('replica-g', 'handover-forged');
    await a.waitForStderr(/became the leader/);
    assert.equal((await a.stop('SIGTERM')).code, 0);
    // Whoever may update the Lease writes a floor no change will ever reach.
    const path = `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/handover-forged`;
    const lease = await readLease('handover-forged');
    lease.metadata.annotations = {
      ...lease.metadata.annotations,
      'kubediff.io/checkpoint': JSON.stringify({ v: 1, rv: { configmaps: '999999999999' } }),
    };
    await admin.send('PUT', path, { body: lease });

    const b = replica('replica-h', 'handover-forged', kubeconfig, '--listen', '127.0.0.1:0');
    const metrics = (await b.waitForStderr(SERVING))[1]!;
    await b.waitForStderr(/became the leader/, 3 * LEASE_MS);
    await b.waitForStderr(
      /took over: the previous leader's checkpoint in the Lease says configmaps was delivered up to resourceVersion 999999999999, beyond the \d+ the API server is at; refused/,
    );
    // Every change is delivered: none falls below the forged floor.
    await createCM('after-the-forgery', { v: '1' });
    await b.waitForEvent((event) => event.type === 'ADDED' && event.object.name === 'after-the-forgery');
    const scraped = await scrapeMetrics(metrics);
    assert.equal(scraped.get('kubediff_checkpoint_refused_total'), 1);
    assert.equal(scraped.get('kubediff_checkpoint_skipped_events_total'), 0);
    assert.equal((await b.stop('SIGTERM')).code, 0);
  });
});
