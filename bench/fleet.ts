// Figure 21: a fleet of replicas (issue 40, docs/fleets.md). Six clusters (three namespaces of the bench's
// API server, three of a second API server on the same etcd: test/helpers/side-apiserver.ts) shared by
// replicas of `kubediff watch --fleet … --state postgres://…` (a PostgreSQL of the bench's own), each
// posting to one webhook receiver on a path of its own; the receiver counts every change once by `id`.
//
// 1. Throughput: the same write load (ConfigMaps created, then patched, on all six clusters, as fast as
//    the API servers take them) with 1, 2 and 3 replicas, each count on a database and fleet of its own,
//    started once every cluster is owned and synced. Events/s from the first write to the last of the
//    load's changes at the receiver; CPU seconds (user + system, /proc) of each replica over that window.
//    2 and 3 replicas are given as ratios to 1 in the same run.
// 2. Takeover: with 3 replicas, `--kills` times the owner of a cluster is killed (SIGKILL) and a change is
//    made on that cluster right after. Timed from the kill to the `takeover` move of that cluster (the
//    fleet's moves table, `kubediff fleet status -o json`; its time is the database's now() on this
//    machine) and to the change at the receiver from its new owner. The killed replica is then started
//    again and the fleet settles (every cluster owned and synced, the replica back) before the next kill.
//
//   node bench/fleet.ts --cluster <ClusterInfo.json> [--kills 10] [--writes 1800] [--timeout 10s]
//   (prints JSON)
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs, promisify } from 'node:util';
import type { ClusterInfo } from '../test/helpers/cluster.ts';
import { HttpReceiver } from '../test/helpers/http-receiver.ts';
import { KubeAdmin } from '../test/helpers/kube-admin.ts';
import { psql, startPostgres } from '../test/helpers/postgres.ts';
import { severalContextsKubeconfig, startSideApiserver } from '../test/helpers/side-apiserver.ts';
import { inParallel } from './lib/objects.ts';
import { type Child, cpuSeconds, startChild } from './lib/processes.ts';
import { round, type Spread, spread } from './lib/stats.ts';

const execFileAsync = promisify(execFile);

const KUBEDIFF = path.join(import.meta.dirname, '..', 'bin', 'kubediff.js');
const CLUSTERS_PER_SERVER = 3;
/** Writes in flight at once: the load is bounded by the API servers, not by the writer. */
const WRITERS = 8;

export interface FleetThroughput {
  replicas: number;
  /** The load's changes delivered (once each by id) per second, first write to last delivery. */
  eventsPerSecond: number;
  seconds: number;
  /** CPU seconds of each replica over the window, highest first. */
  cpuSeconds: number[];
  /** Deliveries beyond the first of an id (0 when nothing came twice). */
  repeats: number;
}

export interface FleetFigures {
  clusters: number;
  apiServers: number;
  writes: number;
  throughput: FleetThroughput[];
  /** events/s with n replicas / with 1, for n = 2, 3. */
  ratios: { replicas: number; ratio: number }[];
  replicaTimeoutSeconds: number;
  /** The stated bound: the replica timeout plus one beat (a fifth of it). */
  boundSeconds: number;
  kills: number;
  /** Kill → the cluster's `takeover` move, s. */
  ownershipSeconds: Spread;
  /** Kill → the first change made after it, at the receiver from the new owner, s. */
  deliverySeconds: Spread;
  /** The machine's 1-minute load average at the start and at the end. */
  loadAverage: { atStart: number; atEnd: number };
}

interface FleetStatus {
  clusters: { cluster: string; owner?: string; synced: boolean }[];
  replicas: { replica: string; alive: boolean; clusters: number }[];
  moves: { at: string; cluster: string; from?: string; to: string; reason: string }[];
}

const { values } = parseArgs({
  options: {
    cluster: { type: 'string' },
    kills: { type: 'string', default: '10' },
    writes: { type: 'string', default: '1800' },
    timeout: { type: 'string', default: '10s' },
  },
});
if (!values.cluster) throw new Error('--cluster <ClusterInfo.json> is required');
const kills = Number(values.kills);
const writes = Number(values.writes);
const timeoutSeconds = Number(/^(\d+)s$/.exec(values.timeout)?.[1] ?? Number.NaN);
if (!Number.isFinite(timeoutSeconds)) throw new Error('--timeout: whole seconds, e.g. 10s');
const log = (message: string) => process.stderr.write(`fleet: ${message}\n`);

const alpha = JSON.parse(readFileSync(values.cluster, 'utf8')) as ClusterInfo;
if (!alpha.etcdEndpoint) throw new Error('the fleet bench starts a second API server on the cluster’s etcd');
const loadAtStart = os.loadavg()[0]!;
const beta = await startSideApiserver({
  what: 'the fleet bench’s second API server',
  processName: 'kube-apiserver-fleet-bench',
  etcdEndpoint: alpha.etcdEndpoint,
});
const postgres = await startPostgres({ label: 'bench-fleet' });
const receiver = await HttpReceiver.start();
const admins = { alpha: new KubeAdmin(alpha), beta: new KubeAdmin(beta) };
const children = new Set<Child>();
try {
  const dir = beta.dir ?? os.tmpdir();
  const kubeconfig = path.join(dir, 'fleet.kubeconfig');
  await writeFile(
    kubeconfig,
    severalContextsKubeconfig([
      { name: 'alpha', server: alpha.server, caPem: alpha.caPem, token: alpha.adminToken },
      { name: 'beta', server: beta.server, caPem: beta.caPem, token: beta.adminToken },
    ]),
    { mode: 0o600 },
  );
  const clusters: { name: string; admin: KubeAdmin; namespace: string }[] = [];
  for (const [context, admin] of Object.entries(admins)) {
    for (let i = 1; i <= CLUSTERS_PER_SERVER; i++)
      clusters.push({ name: `${context}-${i}`, admin, namespace: await admin.createNamespace(`fleet-${i}`) });
  }

  /** A fleet of its own: a database, a config file, replicas started and killed by name. */
  async function fleet(label: string) {
    const database = `kubediff_bench_fleet_${label}`;
    await psql(postgres, `CREATE DATABASE ${database}`);
    const url = new URL(postgres.url);
    url.pathname = `/${database}`;
    url.password = '';
    if (postgres.caFile) {
      url.searchParams.set('sslmode', 'verify-full');
      url.searchParams.set('sslrootcert', postgres.caFile);
    }
    const config = path.join(dir, `${label}.yaml`);
    await writeFile(
      config,
      [
        `kubeconfig: ${kubeconfig}`,
        'resources: [configmaps]',
        'clusters:',
        ...clusters.map(
          (c) =>
            `  - name: ${c.name}\n    context: ${c.name.split('-')[0]}\n    namespaces: [${c.namespace}]`,
        ),
        `state:\n  path: ${url.href}`,
        `fleet:\n  name: ${label}\n  replicaTimeout: ${values.timeout}`,
        '',
      ].join('\n'),
    );
    const env = { ...process.env, PGPASSWORD: postgres.password, KUBEDIFF_LOG_FORMAT: 'text' };
    const replicas = new Map<string, Child>();
    const start = (replica: string) => {
      const child = startChild(
        process.execPath,
        [
          KUBEDIFF,
          'watch',
          '-c',
          config,
          '--fleet-replica',
          replica,
          '-o',
          'none',
          '--webhook',
          receiver.url(`/${label}/${replica}`),
        ],
        { env },
      );
      children.add(child);
      replicas.set(replica, child);
      return child;
    };
    const status = async (): Promise<FleetStatus> => {
      const { stdout } = await execFileAsync(
        process.execPath,
        [KUBEDIFF, 'fleet', 'status', '-c', config, '--moves', '1000', '-o', 'json'],
        { env, maxBuffer: 16 * 2 ** 20 },
      );
      return JSON.parse(stdout) as FleetStatus;
    };
    /** Until every cluster is owned and synced and each of `alive` replicas holds its share. */
    const settled = async (alive: number) => {
      const deadline = Date.now() + 180_000;
      for (;;) {
        // Before the first replica has made the schema, status says so (exit 2): not settled yet.
        const now = await status().catch(() => undefined);
        if (!now) {
          if (Date.now() > deadline) throw new Error(`${label}: the fleet never wrote its state`);
          await new Promise((resolve) => setTimeout(resolve, 1000));
          continue;
        }
        const owned =
          now.clusters.length === clusters.length && now.clusters.every((c) => c.owner && c.synced);
        const live = now.replicas.filter((r) => r.alive);
        const fair = live.every((r) => r.clusters >= Math.floor(clusters.length / alive));
        if (owned && live.length === alive && fair) return now;
        if (Date.now() > deadline) throw new Error(`${label}: not settled: ${JSON.stringify(now)}`);
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    };
    return { label, replicas, start, status, settled };
  }

  /** Each id the receiver got for `label`: first arrival and who delivered it; repeats counted. */
  const deliveries = (label: string) => {
    const first = new Map<string, { at: number; replica: string }>();
    let repeats = 0;
    for (const request of receiver.requests) {
      const [, fleetName, replica] = request.path.split('/');
      if (fleetName !== label) continue;
      const { id } = JSON.parse(request.body) as { id: string };
      if (first.has(id)) repeats++;
      else first.set(id, { at: request.at, replica: replica ?? '' });
    }
    return { first, repeats };
  };
  const awaitIds = async (label: string, ids: readonly string[], what: string, timeoutMs = 300_000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const { first } = deliveries(label);
      if (ids.every((id) => first.has(id))) return first;
      if (Date.now() > deadline)
        throw new Error(
          `${what}: ${ids.filter((id) => !first.has(id)).length} of ${ids.length} never delivered`,
        );
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };

  /** The write load: a ConfigMap per 5 writes per cluster, created then patched 4 times. */
  const load = async (label: string): Promise<string[]> => {
    const perCluster = Math.max(1, Math.round(writes / clusters.length / 5));
    const ids: string[] = [];
    const jobs = clusters.flatMap((c) =>
      Array.from({ length: perCluster }, (_, i) => ({ c, name: `${label}-${i}` })),
    );
    await inParallel(jobs, WRITERS, async ({ c, name }) => {
      const collection = `/api/v1/namespaces/${c.namespace}/configmaps`;
      const created = await c.admin.create(collection, { metadata: { name }, data: { v: '0' } });
      ids.push(`${created.metadata.uid}:${created.metadata.resourceVersion}`);
      for (let v = 1; v <= 4; v++) {
        const patched = await c.admin.patch(`${collection}/${name}`, { data: { v: String(v) } });
        ids.push(`${patched.metadata.uid}:${patched.metadata.resourceVersion}`);
      }
    });
    return ids;
  };

  const throughput: FleetThroughput[] = [];
  let takeoverFleet: Awaited<ReturnType<typeof fleet>> | undefined;
  for (const n of [1, 2, 3]) {
    const f = await fleet(`r${n}`);
    for (let i = 1; i <= n; i++) f.start(`replica-${i}`);
    await f.settled(n);
    log(`${n} replica(s): every cluster owned and synced; writing ${writes} changes`);
    const cpuBefore = new Map([...f.replicas].map(([name, child]) => [name, cpuSeconds(child.pid)]));
    const startedAt = Date.now();
    const ids = await load(f.label);
    const first = await awaitIds(f.label, ids, `${n} replica(s)`);
    const lastAt = Math.max(...ids.map((id) => first.get(id)!.at));
    const seconds = (lastAt - startedAt) / 1000;
    const cpu = [...f.replicas].map(([name, child]) => cpuSeconds(child.pid) - cpuBefore.get(name)!);
    throughput.push({
      replicas: n,
      eventsPerSecond: round(ids.length / seconds),
      seconds: round(seconds),
      cpuSeconds: cpu.sort((a, b) => b - a).map((value) => round(value)),
      repeats: deliveries(f.label).repeats,
    });
    log(
      `${n} replica(s): ${round(ids.length / seconds)} events/s, CPU ${cpu.map((c) => round(c)).join(' / ')} s`,
    );
    if (n === 3) takeoverFleet = f;
    else {
      await Promise.all([...f.replicas.values()].map((child) => child.stop()));
      for (const child of f.replicas.values()) children.delete(child);
    }
  }

  const ownership: number[] = [];
  const delivery: number[] = [];
  const f = takeoverFleet!;
  for (let k = 0; k < kills; k++) {
    const target = clusters[k % clusters.length]!;
    const before = await f.settled(3);
    const owner = before.clusters.find((c) => c.cluster === target.name)!.owner!;
    const victim = f.replicas.get(owner)!;
    const killedAt = Date.now();
    victim.process.kill('SIGKILL');
    children.delete(victim);
    const created = await target.admin.create(`/api/v1/namespaces/${target.namespace}/configmaps`, {
      metadata: { name: `after-kill-${k}` },
      data: { v: '0' },
    });
    const id = `${created.metadata.uid}:${created.metadata.resourceVersion}`;
    const first = await awaitIds(f.label, [id], `the change after kill ${k + 1}`, 120_000);
    const delivered = first.get(id)!;
    if (delivered.replica === owner)
      throw new Error(`kill ${k + 1}: delivered by the killed replica ${owner}`);
    delivery.push((delivered.at - killedAt) / 1000);
    const moved = (await f.status()).moves.find(
      (m) => m.cluster === target.name && m.reason === 'takeover' && Date.parse(m.at) >= killedAt,
    );
    if (!moved) throw new Error(`kill ${k + 1}: no takeover move of ${target.name} after the kill`);
    ownership.push((Date.parse(moved.at) - killedAt) / 1000);
    log(
      `kill ${k + 1}/${kills}: ${owner} (owner of ${target.name}); taken by ${moved.to} after ${round(ownership.at(-1)!)} s, delivered after ${round(delivery.at(-1)!)} s`,
    );
    await victim.stop();
    f.start(owner);
  }

  const base = throughput[0]!.eventsPerSecond;
  const figures: FleetFigures = {
    clusters: clusters.length,
    apiServers: 2,
    writes: throughput.length > 0 ? Math.round(writes / clusters.length / 5) * clusters.length * 5 : 0,
    throughput,
    ratios: throughput
      .slice(1)
      .map((t) => ({ replicas: t.replicas, ratio: round(t.eventsPerSecond / base) })),
    replicaTimeoutSeconds: timeoutSeconds,
    boundSeconds: round(timeoutSeconds * 1.2),
    kills,
    ownershipSeconds: mapSpread(spread(ownership), (value) => round(value)),
    deliverySeconds: mapSpread(spread(delivery), (value) => round(value)),
    loadAverage: { atStart: round(loadAtStart), atEnd: round(os.loadavg()[0]!) },
  };
  process.stdout.write(`${JSON.stringify(figures)}\n`);
} finally {
  await Promise.all([...children].map((child) => child.stop()));
  await receiver.close();
  await admins.alpha.close();
  await admins.beta.close();
  await beta.stop();
  await postgres.stop();
}

function mapSpread(value: Spread, map: (n: number) => number): Spread {
  return { min: map(value.min), median: map(value.median), max: map(value.max) };
}
