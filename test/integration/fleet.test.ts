// A fleet of replicas (issue 40, docs/fleets.md) against real API servers and a real PostgreSQL: six
// clusters (namespaces of the default test cluster and of a second API server, each its own cluster to
// kubediff) shared by replicas of `kubediff watch --fleet`, every change checked at one webhook receiver
// that deduplicates on `id` (each replica posts to a path of its own, so the test knows who delivered
// what). Ownership is read with `kubediff fleet status -o json`; nothing waits on a clock: each step
// awaits what the replicas say or what the receiver gets, and a sentinel change after each step proves
// that nothing more comes.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, afterEach, before, describe, it, type TestContext } from 'node:test';
import { type KubediffProcess, killAll, runKubediff, runKubediffToCompletion } from '../helpers/cli.ts';
import { testCluster } from '../helpers/cluster-env.ts';
import { startFaultProxy } from '../helpers/fault-proxy.ts';
import { HttpReceiver } from '../helpers/http-receiver.ts';
import { adminClient, KubeAdmin, type KubeObject, uniqueName, waitFor } from '../helpers/kube-admin.ts';
import { type PostgresInfo, startPostgres } from '../helpers/postgres.ts';
import { createTestDatabase, stateUrl, type TestDatabase } from '../helpers/postgres-env.ts';
import {
  needsSharedEtcd,
  type SideApiserver,
  severalContextsKubeconfig,
  startSideApiserver,
} from '../helpers/side-apiserver.ts';

const alphaAdmin = adminClient();
/** Short, so that takeovers come soon; every wait below is for what happens, never for this long. */
const TIMEOUT = '4s';
const ENV = { KUBEDIFF_MAX_BACKOFF: '1s' };

interface Cluster {
  name: string;
  admin: KubeAdmin;
  namespace: string;
}

/** A change the test made: what the receiver must get once (a deletion by its uid alone). */
interface Made {
  cluster: string;
  key: string;
  /** When its write was answered. */
  at: number;
}

interface Delivery {
  replica: string;
  id: string;
  type: string;
  cluster: string;
  name: string;
  offline: boolean;
  index: number;
}

interface FleetStatus {
  clusters: { cluster: string; owner?: string; synced: boolean; epoch: number }[];
  replicas: { replica: string; alive: boolean; clusters: number }[];
  moves: { at: string; cluster: string; from?: string; to: string; reason: string }[];
}

describe('a fleet of replicas', { skip: needsSharedEtcd() }, () => {
  let beta: SideApiserver;
  let betaAdmin: KubeAdmin;
  let kubeconfig: string;
  let receiver: HttpReceiver;
  const clusters: Cluster[] = [];

  before(async () => {
    beta = await startSideApiserver({
      what: 'the fleet’s second API server',
      processName: 'kube-apiserver-fleet',
    });
    betaAdmin = new KubeAdmin(beta);
    const alpha = testCluster();
    kubeconfig = path.join(beta.dir ?? '', 'fleet.kubeconfig');
    await writeFile(
      kubeconfig,
      severalContextsKubeconfig([
        { name: 'alpha', server: alpha.server, caPem: alpha.caPem, token: alpha.adminToken },
        { name: 'beta', server: beta.server, caPem: beta.caPem, token: beta.adminToken },
      ]),
      { mode: 0o600 },
    );
    for (const [prefix, admin] of [
      ['alpha', alphaAdmin],
      ['beta', betaAdmin],
    ] as const) {
      for (let i = 1; i <= 3; i++) {
        const namespace = uniqueName(`fleet-${prefix}${i}`);
        await admin.create('/api/v1/namespaces', { metadata: { name: namespace } });
        clusters.push({ name: `${prefix}-${i}`, admin, namespace });
      }
    }
    receiver = await HttpReceiver.start();
  });
  afterEach(async () => {
    await killAll();
  });
  after(async () => {
    await receiver?.close();
    for (const cluster of clusters) await cluster.admin.deleteNamespace(cluster.namespace).catch(() => {});
    await betaAdmin?.close();
    await beta?.stop();
  });

  /** One fleet of its own per test: its database, its config file, its replicas and what they delivered. */
  async function fleet(
    t: TestContext,
    label: string,
    options: { server?: PostgresInfo; timeout?: string } = {},
  ) {
    const database: TestDatabase = await createTestDatabase(label, options.server);
    t.after(() => database.drop());
    const name = uniqueName(label);
    const config = path.join(beta.dir ?? '', `${name}.yaml`);
    const entries = clusters.map(
      (cluster) =>
        `  - name: ${cluster.name}\n    context: ${cluster.name.split('-')[0]}\n    namespaces: [${cluster.namespace}]`,
    );
    await writeFile(
      config,
      [
        `kubeconfig: ${kubeconfig}`,
        'resources: [configmaps]',
        'clusters:',
        ...entries,
        `state:\n  path: ${stateUrl(database.info)}`,
        `fleet:\n  name: ${name}\n  replicaTimeout: ${options.timeout ?? TIMEOUT}`,
        '',
      ].join('\n'),
    );
    const env = { ...ENV, PGPASSWORD: database.info.password };
    const start = receiver.requests.length;
    const made: Made[] = [];
    const replicas = new Map<string, KubediffProcess>();
    return {
      database,
      /** Appended to every object's name: the tests share the namespaces, each fleet has objects of its own. */
      suffix: name.split('-').at(-1) ?? name,
      made,
      replicas,
      /** A replica; `state` is its own way to the database (a proxy), else the config file's. */
      replica(replica: string, state?: string): KubediffProcess {
        const kd = runKubediff(
          [
            'watch',
            '-c',
            config,
            '--fleet-replica',
            replica,
            '-o',
            'json',
            '--webhook',
            receiver.url(`/${name}/${replica}`),
            ...(state === undefined ? [] : ['--state', state]),
          ],
          { env, timeoutMs: 90_000, checkEvents: true },
        );
        replicas.set(replica, kd);
        return kd;
      },
      /** What this fleet's replicas posted, in arrival order. */
      deliveries(from = start): Delivery[] {
        return receiver.requests.slice(from).flatMap((request) => {
          const [, fleetName, replica] = request.path.split('/');
          if (fleetName !== name) return [];
          const event = JSON.parse(request.body) as {
            id: string;
            type: string;
            cluster: string;
            object: { name: string };
            offline?: boolean;
          };
          if (event.object.name === 'kube-root-ca.crt') return [];
          return [
            {
              replica: replica ?? '',
              id: event.id,
              type: event.type,
              cluster: event.cluster,
              name: event.object.name,
              offline: event.offline === true,
              index: request.index,
            },
          ];
        });
      },
      async status(): Promise<FleetStatus> {
        const result = await runKubediffToCompletion(
          ['fleet', 'status', '-c', config, '--moves', '1000', '-o', 'json'],
          { env, timeoutMs: 30_000 },
        );
        assert.equal(result.code, 0, result.stderr);
        return JSON.parse(result.stdout) as FleetStatus;
      },
      async statusText(): Promise<string> {
        const result = await runKubediffToCompletion(['fleet', 'status', '-c', config], {
          env,
          timeoutMs: 30_000,
        });
        assert.equal(result.code, 0, result.stderr);
        return result.stdout;
      },
    };
  }
  type Fleet = Awaited<ReturnType<typeof fleet>>;

  const cmPath = (cluster: Cluster, name = '') =>
    `/api/v1/namespaces/${cluster.namespace}/configmaps${name ? `/${name}` : ''}`;

  async function create(f: Fleet, cluster: Cluster, name: string): Promise<KubeObject> {
    const object = await cluster.admin.create(cmPath(cluster), {
      metadata: { name: `${name}-${f.suffix}` },
      data: { v: '0' },
    });
    f.made.push({
      cluster: cluster.name,
      key: `ADDED ${object.metadata.uid}:${object.metadata.resourceVersion}`,
      at: Date.now(),
    });
    return object;
  }
  async function patch(f: Fleet, cluster: Cluster, name: string, value: string): Promise<void> {
    const object = await cluster.admin.patch(cmPath(cluster, `${name}-${f.suffix}`), { data: { v: value } });
    f.made.push({
      cluster: cluster.name,
      key: `UPDATED ${object.metadata.uid}:${object.metadata.resourceVersion}`,
      at: Date.now(),
    });
  }
  async function remove(f: Fleet, cluster: Cluster, name: string): Promise<void> {
    const path = cmPath(cluster, `${name}-${f.suffix}`);
    const last = await cluster.admin.get(path);
    await cluster.admin.delete(path);
    f.made.push({ cluster: cluster.name, key: `DELETED ${last.metadata.uid}`, at: Date.now() });
  }

  /** A delivery as the made list keys it: a deletion by uid (a catch-up's carries the LIST's resourceVersion). */
  const keyOf = (delivery: Delivery) =>
    delivery.type === 'DELETED'
      ? `DELETED ${delivery.id.replace(/:[^:]*$/, '')}`
      : `${delivery.type} ${delivery.id}`;

  /** Every change made is at the receiver, deduplicated by id exactly once, and nothing else. */
  function assertEachOnce(f: Fleet): void {
    const received = [...new Set(f.deliveries().map(keyOf))].sort();
    assert.deepEqual(
      received,
      f.made.map((entry) => entry.key).sort(),
      'every change delivered, none lost, nothing else',
    );
  }

  /** Ids delivered more than once (by any replicas), with who delivered them. */
  function repeats(f: Fleet, from?: number): Map<string, string[]> {
    const by = new Map<string, string[]>();
    for (const delivery of f.deliveries(from))
      by.set(keyOf(delivery), [...(by.get(keyOf(delivery)) ?? []), delivery.replica]);
    return new Map([...by].filter(([, replicas]) => replicas.length > 1));
  }

  /** A sentinel in every cluster, awaited at the receiver: whatever came before it has come. */
  async function sentinels(f: Fleet, label: string): Promise<Set<string>> {
    const ids = new Set<string>();
    for (const cluster of clusters) {
      const object = await create(f, cluster, uniqueName(`sentinel-${label}`));
      ids.add(`${object.metadata.uid}:${object.metadata.resourceVersion}`);
    }
    await receiver.waitUntil(
      () =>
        ids.size > 0 && [...ids].every((id) => f.deliveries().some((delivery) => delivery.id === id))
          ? true
          : undefined,
      120_000,
      () => `the sentinels "${label}" at the receiver`,
    );
    return ids;
  }

  /** Until the fleet's history has recorded these ids: a takeover from then on catches up past them. */
  async function recorded(f: Fleet, ids: ReadonlySet<string>, what: string): Promise<void> {
    await waitFor(
      async () => {
        const history = await runKubediffToCompletion(
          ['history', '--state', stateUrl(f.database.info), '-o', 'json'],
          { env: { PGPASSWORD: f.database.info.password }, timeoutMs: 30_000 },
        );
        assert.equal(history.code, 0, history.stderr);
        const seen = new Set(
          history.stdout
            .trim()
            .split('\n')
            .filter((line) => line !== '')
            .map((line) => (JSON.parse(line) as { id: string }).id),
        );
        return [...ids].every((id) => seen.has(id)) ? true : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 500, what },
    );
  }

  /** Until every cluster has one live owner that synced it, and `check` holds of the status. */
  function settled(
    f: Fleet,
    what: string,
    check: (status: FleetStatus) => boolean = () => true,
  ): Promise<FleetStatus> {
    return waitFor(
      async () => {
        const status = await f.status();
        const owned =
          status.clusters.length === clusters.length &&
          status.clusters.every((row) => row.owner !== undefined && row.synced);
        return owned && check(status) ? status : undefined;
      },
      { timeoutMs: 120_000, intervalMs: 500, what },
    );
  }

  const ownersOf = (status: FleetStatus) => new Map(status.clusters.map((row) => [row.cluster, row.owner]));
  const loads = (status: FleetStatus) =>
    status.replicas
      .filter((replica) => replica.alive)
      .map((replica) => replica.clusters)
      .sort();

  it('three replicas share six clusters; one killed during churn has its clusters taken over and caught up, every change once by id; restarted, it takes a share back and nothing comes twice', async (t) => {
    const f = await fleet(t, 'fleet-kill');
    for (const replica of ['r1', 'r2', 'r3']) f.replica(replica);
    const first = await settled(
      f,
      'three replicas owning two clusters each',
      (status) => loads(status).join() === '2,2,2',
    );
    assert.equal(new Set(first.clusters.map((row) => row.owner)).size, 3);
    for (const cluster of clusters) for (let i = 0; i < 3; i++) await create(f, cluster, `base-${i}`);
    // The base objects recorded before the kill: one whose ADDED the victim delivered but had not recorded,
    // deleted before the new owner lists, would leave no trace to catch its deletion up from (the gap
    // docs/state.md states, "kill -9 at any moment"): what this test checks is what the product promises.
    await recorded(f, await sentinels(f, 'before'), 'the sentinels "before" recorded');

    // Churn on every cluster, each object written once (so that no catch-up folds two writes into one).
    let round = 0;
    const churn = async () => {
      round++;
      for (const cluster of clusters) await create(f, cluster, `churn-${round}`);
    };
    await churn();
    const victim = 'r2';
    const victims = new Set(
      clusters.filter((cluster) => ownersOf(first).get(cluster.name) === victim).map((c) => c.name),
    );
    await f.replicas.get(victim)?.kill();
    const killedAt = Date.now();
    // Meanwhile, on every cluster: an update, a deletion, creations.
    for (const cluster of clusters) await patch(f, cluster, 'base-0', '1');
    for (const cluster of clusters) await remove(f, cluster, 'base-1');
    await churn();
    const taken = await settled(f, "the killed replica's clusters owned again", (status) =>
      status.clusters.every((row) => row.owner === 'r1' || row.owner === 'r3'),
    );
    assert.deepEqual(loads(taken), [3, 3]);
    await churn();
    await sentinels(f, 'after-kill');
    assertEachOnce(f);
    // A change is delivered twice only when the killed replica had delivered it without recording it.
    for (const [key, replicas] of repeats(f))
      assert.ok(replicas.includes(victim), `${key} delivered by ${replicas}`);
    // What changed in the killed replica's clusters before they were taken over came offline, from the
    // new owner's catch-up.
    const takeovers = taken.moves.filter((move) => move.reason === 'takeover' && move.from === victim);
    assert.deepEqual(new Set(takeovers.map((move) => move.cluster)), victims);
    const claimedAt = Math.min(...takeovers.map((move) => Date.parse(move.at)));
    const meanwhile = f.made.filter(
      (entry) => victims.has(entry.cluster) && entry.at > killedAt && entry.at < claimedAt,
    );
    assert.ok(meanwhile.length > 0, 'changes made while nobody owned them');
    for (const entry of meanwhile) {
      const deliveries = f.deliveries().filter((delivery) => keyOf(delivery) === entry.key);
      assert.ok(deliveries.length === 1 && deliveries[0]?.offline, `${entry.key}: once, offline`);
    }

    // Restarted under the same name: it takes a share back, by handoffs, and nothing comes twice.
    const mark = receiver.requests.length;
    f.replica(victim);
    await churn();
    const rebalanced = await settled(
      f,
      'the restarted replica owning its share',
      (status) => loads(status).join() === '2,2,2',
    );
    assert.equal(rebalanced.clusters.filter((row) => row.owner === victim).length, 2);
    assert.deepEqual(
      rebalanced.moves
        .slice(taken.moves.length)
        .filter((move) => move.to === victim)
        .map((move) => move.reason),
      ['handoff', 'handoff'],
    );
    await churn();
    await sentinels(f, 'after-restart');
    assertEachOnce(f);
    assert.deepEqual([...repeats(f, mark)], [], 'nothing delivered twice after the restart');
    const before = new Set(
      f
        .deliveries()
        .filter((delivery) => delivery.index < mark)
        .map(keyOf),
    );
    assert.deepEqual(
      f
        .deliveries(mark)
        .filter((delivery) => before.has(keyOf(delivery)))
        .map(keyOf),
      [],
      'nothing delivered before the restart is delivered again',
    );
  });

  it('a replica paused (SIGSTOP) past its heartbeat, then resumed, delivers nothing of the clusters taken from it', async (t) => {
    const f = await fleet(t, 'fleet-pause');
    const r1 = f.replica('r1');
    const r2 = f.replica('r2');
    const first = await settled(
      f,
      'two replicas owning three clusters each',
      (status) => loads(status).join() === '3,3',
    );
    for (const cluster of clusters) await create(f, cluster, 'base');
    // Recorded before the pause: what r1 catches up on is only what changed after it.
    await recorded(f, await sentinels(f, 'before'), 'the sentinels "before" recorded');
    const paused = clusters.filter((cluster) => ownersOf(first).get(cluster.name) === 'r2');
    const mark = receiver.requests.length;
    process.kill(r2.pid ?? 0, 'SIGSTOP');
    let resumed = false;
    t.after(() => {
      if (!resumed) process.kill(r2.pid ?? 0, 'SIGCONT');
    });
    // Changes in the paused replica's clusters: its watches hold them, unread, while it is stopped.
    for (const cluster of paused) await patch(f, cluster, 'base', 'while-paused');
    await settled(f, 'the paused replica’s clusters taken over by r1', (status) =>
      status.clusters.every((row) => row.owner === 'r1'),
    );
    await sentinels(f, 'taken');
    process.kill(r2.pid ?? 0, 'SIGCONT');
    resumed = true;
    for (const cluster of paused)
      await r2.waitForStderr(new RegExp(`cluster "${cluster.name}" is no longer this replica's`), 60_000);
    // Resumed, it finds the others in charge and may take a share back by handoff; whatever it delivers
    // then is a change after its new claim, never one it had read before.
    await settled(f, 'balanced again', (status) => loads(status).join() === '3,3');
    await sentinels(f, 'after-resume');
    assertEachOnce(f);
    assert.deepEqual([...repeats(f)], [], 'nothing delivered twice');
    // Since it was paused, the only changes it may have delivered are the last sentinels, of clusters it
    // claimed again after it resumed.
    const byR2 = f.deliveries(mark).filter((delivery) => delivery.replica === 'r2');
    for (const delivery of byR2) {
      assert.match(
        delivery.name,
        /^sentinel-after-resume-/,
        `r2 delivered ${keyOf(delivery)} of ${delivery.cluster}`,
      );
    }
    assert.equal(r1.exitResult, undefined);
  });

  it('a replica whose PostgreSQL link goes silent (a black-holing proxy) says so within its lease and holds; its clusters are taken over, and it delivers nothing of them; the link back, it finds them gone and nothing comes twice', async (t) => {
    const f = await fleet(t, 'fleet-silent');
    const proxy = await startFaultProxy({
      target: { host: f.database.info.host, port: f.database.info.port },
    });
    t.after(() => proxy.close());
    const proxied = new URL(stateUrl(f.database.info));
    proxied.port = String(proxy.port);
    const r1 = f.replica('r1');
    const r2 = f.replica('r2', proxied.href);
    await settled(f, 'two replicas owning three clusters each', (status) => loads(status).join() === '3,3');
    for (const cluster of clusters) await create(f, cluster, 'base');
    await recorded(f, await sentinels(f, 'before'), 'the sentinels "before" recorded');
    // Read again now: a handoff of the first balancing may have been under way at the first read.
    const first = await settled(f, 'still three each', (status) => loads(status).join() === '3,3');
    const cut = clusters.filter((cluster) => ownersOf(first).get(cluster.name) === 'r2');

    /** Until r2 says `pattern` after the cut (a loaded machine may have made it say some before). */
    const cutAt = r2.stderr.length;
    const saysAfterCut = (pattern: RegExp, what: string) =>
      waitFor(() => (pattern.test(r2.stderr.slice(cutAt)) ? true : undefined), {
        timeoutMs: 60_000,
        intervalMs: 100,
        what,
      });
    proxy.blackhole(true);
    for (const cluster of cut) await patch(f, cluster, 'base', 'while-cut');
    // Its calls to the database are bounded: a beat gives up on the silent link within its deadline, and
    // says so as such (without the bound, a beat waited on the silent link for its query timeout, twice).
    await saysAfterCut(
      /fleet: cannot renew this replica's heartbeat in \S+: (no answer within 2\.4s|timeout expired);/,
      'r2 saying its beat had no answer',
    );
    await saysAfterCut(/fleet: heartbeat not renewed for .*: holding the changes of 3 cluster/, 'r2 holding');
    const held = receiver.requests.length;
    for (const cluster of cut) await patch(f, cluster, 'base', 'while-held');
    const taken = await settled(f, 'the silent replica’s clusters taken over by r1', (status) =>
      status.clusters.every((row) => row.owner === 'r1'),
    );
    assert.deepEqual(
      taken.moves
        .slice(first.moves.length)
        .map((move) => `${move.cluster} ${move.from} → ${move.to} ${move.reason}`)
        .sort(),
      cut.map((cluster) => `${cluster.name} r2 → r1 takeover`).sort(),
    );
    // Its calls to the database are bounded: the silence is said at a failed beat, before the lease ran
    // out (a beat waiting on the silent link for its query timeout would say it only long after).
    await sentinels(f, 'taken');

    proxy.blackhole(false);
    for (const cluster of cut)
      await r2.waitForStderr(new RegExp(`cluster "${cluster.name}" is no longer this replica's`), 60_000);
    await r2.waitForStderr(/fleet: heartbeat renewed in /);
    const back = receiver.requests.length;
    assert.deepEqual(
      f
        .deliveries(held)
        .filter((delivery) => delivery.index < back && delivery.replica === 'r2')
        .map(keyOf),
      [],
      'r2 delivered nothing from when it held until it found its clusters gone',
    );
    await settled(f, 'balanced again', (status) => loads(status).join() === '3,3');
    await sentinels(f, 'after');
    assertEachOnce(f);
    // A change is delivered twice only when r2 had delivered it, while its lease lasted, without recording it.
    for (const [key, replicas] of repeats(f))
      assert.ok(replicas.includes('r2'), `${key} delivered by ${replicas}`);
    assert.equal(r1.exitResult, undefined);
    assert.equal(r2.exitResult, undefined);
  });

  it('a fourth replica joins: at most ⌈6/4⌉ clusters move, by handoff, and fleet status shows the moves', async (t) => {
    const f = await fleet(t, 'fleet-join');
    for (const replica of ['r1', 'r2', 'r3']) f.replica(replica);
    const joinedFrom = await settled(
      f,
      'three replicas owning two clusters each',
      (status) => loads(status).join() === '2,2,2',
    );
    for (const cluster of clusters) await create(f, cluster, 'base');
    await sentinels(f, 'before');
    const mark = receiver.requests.length;
    f.replica('r4');
    for (const cluster of clusters) await patch(f, cluster, 'base', 'joining');
    const after = await settled(
      f,
      'the fourth replica owning its share',
      (status) =>
        status.replicas.some(
          (replica) => replica.replica === 'r4' && replica.alive && replica.clusters >= 1,
        ) && loads(status).join() === '1,1,2,2',
    );
    const moved = clusters.filter(
      (cluster) => ownersOf(joinedFrom).get(cluster.name) !== ownersOf(after).get(cluster.name),
    );
    assert.ok(moved.length >= 1 && moved.length <= Math.ceil(6 / 4), `${moved.length} clusters moved`);
    for (const cluster of moved) assert.equal(ownersOf(after).get(cluster.name), 'r4');
    const moves = after.moves.slice(joinedFrom.moves.length);
    assert.deepEqual(
      moves.map((move) => `${move.cluster} ${move.from} → ${move.to} ${move.reason}`).sort(),
      moved.map((cluster) => `${cluster.name} ${ownersOf(joinedFrom).get(cluster.name)} → r4 handoff`).sort(),
    );
    const text = await f.statusText();
    for (const cluster of moved) {
      assert.match(
        text,
        new RegExp(`${cluster.name}\\s+${ownersOf(joinedFrom).get(cluster.name)}\\s+r4\\s+handed over`),
      );
    }
    assert.match(text, /4 of 4 replica\(s\) alive, 6 cluster\(s\), 0 without an owner/);
    await sentinels(f, 'after-join');
    assertEachOnce(f);
    assert.deepEqual([...repeats(f, mark)], [], 'nothing delivered twice across the handoffs');
  });

  it('PostgreSQL restarted under the fleet: past their lease the replicas hold their changes; the database back, every replica heartbeats again, the same owners, every change once by id', async (t) => {
    const own = await startPostgres({ label: 'fleet-restart' });
    const f = await fleet(t, 'fleet-restart', { server: own });
    // After the database is dropped (the hooks run in order).
    t.after(() => own.stop());
    const names = ['r1', 'r2', 'r3'];
    for (const replica of names) f.replica(replica);
    const first = await settled(
      f,
      'three replicas owning two clusters each',
      (status) => loads(status).join() === '2,2,2',
    );
    for (const cluster of clusters) await create(f, cluster, 'base');
    await recorded(f, await sentinels(f, 'before'), 'the sentinels "before" recorded');

    let round = 0;
    const churn = async () => {
      round++;
      for (const cluster of clusters) await create(f, cluster, `churn-${round}`);
      for (const cluster of clusters) await patch(f, cluster, 'base', String(round));
    };
    await churn();
    await own.stopServer();
    await churn();
    // Down past the lease: each replica says once that it holds its clusters' changes; they wait.
    for (const replica of names)
      await f.replicas
        .get(replica)
        ?.waitForStderr(/fleet: heartbeat not renewed for .*: holding the changes/);
    await churn();
    await churn();
    await own.startServer();
    for (const replica of names) await f.replicas.get(replica)?.waitForStderr(/fleet: heartbeat renewed in /);
    await churn();
    const back = await settled(
      f,
      'every cluster owned again, by the replica that had it',
      (status) => loads(status).join() === '2,2,2' && status.replicas.every((replica) => replica.alive),
    );
    assert.deepEqual(ownersOf(back), ownersOf(first), 'the same owners');
    await sentinels(f, 'after');
    assertEachOnce(f);
    assert.deepEqual([...repeats(f)], [], 'nothing delivered twice');
    for (const replica of names) {
      const stderr = f.replicas.get(replica)?.stderr ?? '';
      assert.equal(
        stderr.match(/fleet: heartbeat not renewed for /g)?.length,
        1,
        `${replica}: held, said once`,
      );
      assert.doesNotMatch(stderr, /is no longer this replica's/, `${replica} lost nothing`);
    }
    assert.match(await f.statusText(), /3 of 3 replica\(s\) alive, 6 cluster\(s\), 0 without an owner/);
    for (const replica of names)
      assert.equal(f.replicas.get(replica)?.exitResult, undefined, `${replica} still watching`);
  });
});

describe('a fleet refused', () => {
  it('without PostgreSQL, with --leader-elect, and an unknown fleet: one sentence, exit 2', async (t) => {
    const database = await createTestDatabase('fleet-refused');
    t.after(() => database.drop());
    const url = stateUrl(database.info);
    const env = { PGPASSWORD: database.info.password };
    const kubeconfig = testCluster().kubeconfigPath;
    const noPostgres = await runKubediffToCompletion(
      ['watch', '--kubeconfig', kubeconfig, '--fleet', 'prod'],
      { env },
    );
    assert.equal(noPostgres.code, 2);
    assert.equal(
      noPostgres.stderr,
      'kubediff: --fleet needs --state postgres://…: the replicas share the clusters, and one history, through that database (docs/fleets.md).\n',
    );
    const leader = await runKubediffToCompletion(
      ['watch', '--kubeconfig', kubeconfig, '--fleet', 'prod', '--state', url, '--leader-elect'],
      { env },
    );
    assert.equal(leader.code, 2);
    assert.match(
      leader.stderr,
      /^kubediff: --fleet and --leader-elect both coordinate replicas; .*drop --leader-elect\.\n$/,
    );
    const migrated = await runKubediffToCompletion(['migrate', '--state', url], { env });
    assert.equal(migrated.code, 0, migrated.stderr);
    const unknown = await runKubediffToCompletion(['fleet', 'status', '--state', url, '--fleet', 'nowhere'], {
      env,
    });
    assert.equal(unknown.code, 2);
    assert.match(
      unknown.stderr,
      /^kubediff: no fleet "nowhere" in postgres:\/\/\S+: no replica has joined it\.\n$/,
    );
    const orphanFlag = await runKubediffToCompletion(
      ['watch', '--kubeconfig', kubeconfig, '--fleet-replica', 'r1'],
      { env },
    );
    assert.equal(orphanFlag.code, 2);
    assert.equal(
      orphanFlag.stderr,
      'kubediff: --fleet-replica needs --fleet <name> (or fleet.name in the config file).\n',
    );
  });
});
