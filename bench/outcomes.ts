// Figure 19: outcomes (docs/outcomes.md) at 10,000 pods. On the pod plane (test/helpers/pod-plane.ts:
// kwok plays the kubelets, so the pods are Running and Ready with their statuses as a kubelet writes
// them), `--pods` pods of Deployments (bench/lib/objects.ts: two containers, probes) and a few small
// Deployments to roll out. Each Deployment's pod template names its node (`nodeName`, one node of 100
// pods per Deployment): the ReplicaSet controller creates the pods already bound, with the owner chain,
// pod-template-hash and statuses of any cluster's, and the scheduler, which placed about one pod a second
// on the loaded machine, has nothing to do. The controller manager's client rate limit is lifted as
// kwokctl does for scale (apiQps), so that creating 10,000 pods takes minutes, not hours; the API server
// compacts etcd every 5 minutes, its own default, not every 10 s as in the tests (pod-plane.ts says why).
// Two `kubediff watch -o json` run side by side on it, outcomes on and `--no-outcomes`, started once
// every pod is Ready: the same sync, the same rollouts, the same machine load.
// Each small Deployment is then rolled out in turn to a new image; the benchmark watches its pods itself
// and takes the moment the last pod of the new revision became Ready (as its own watch saw it) to the
// moment the OUTCOME line reached it: the verdict delay. CPU seconds (user + system, /proc) and resident
// memory of both processes are read after the sync and at the end.
//
//   node bench/outcomes.ts [--pods 10000] [--rollouts 5]   (prints JSON)
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { KubeAdmin } from '../test/helpers/kube-admin.ts';
import { startPodPlane } from '../test/helpers/pod-plane.ts';
import { deployment, inParallel } from './lib/objects.ts';
import { type Child, cpuSeconds, memory, startChild } from './lib/processes.ts';
import { round, type Spread, spread } from './lib/stats.ts';

const KUBEDIFF = path.join(import.meta.dirname, '..', 'bin', 'kubediff.js');
/** Pods of each big Deployment, all on one node of its own: a node's capacity is 110 pods (test/kwok/stages.yaml). */
const BIG_REPLICAS = 100;
/** Pods of each Deployment rolled out (13 with the surge), on a node of its own. */
const ROLL_REPLICAS = 10;
/** The controller manager's --kube-api-qps: kwokctl's figure for "no QPS limits". */
const API_QPS = 5000;
/** The API server's own default --etcd-compaction-interval, not the tests' 10 s (test/helpers/pod-plane.ts). */
const COMPACTION_INTERVAL = '5m';

export interface OutcomeSideFigures {
  cpuSecondsAtSync: number;
  rssAtSyncMiB: number;
  cpuSeconds: number;
  rssMiB: number;
  peakRssMiB: number;
}

export interface OutcomeFigures {
  pods: number;
  nodes: number;
  rollouts: number;
  /** From the last new pod Ready (the benchmark's own watch) to the OUTCOME line, ms. */
  verdictDelayMs: Spread;
  /** The OUTCOMEs' `after`, s. */
  afterSeconds: Spread;
  verdicts: string[];
  on: OutcomeSideFigures;
  off: OutcomeSideFigures;
  /** on / off. */
  cpuRatio: number;
  rssRatio: number;
  /** Seconds the pods took to be Ready (controllers and kwok), for the record. */
  setupSeconds: number;
  /** The machine's 1-minute load average when kubediff started and at the end. */
  loadAverage: { atStart: number; atEnd: number };
}

const { values } = parseArgs({
  options: { pods: { type: 'string', default: '10000' }, rollouts: { type: 'string', default: '5' } },
});
const pods = Number(values.pods);
const rollouts = Number(values.rollouts);
const log = (message: string) => process.stderr.write(`outcomes: ${message}\n`);

const bigCount = Math.ceil(pods / BIG_REPLICAS);
const nodes = bigCount + rollouts;
const setupStarted = performance.now();
const plane = await startPodPlane({
  nodes,
  log,
  apiQps: API_QPS,
  compactionInterval: COMPACTION_INTERVAL,
});
const admin = new KubeAdmin(plane.cluster);
const children: Child[] = [];
try {
  const big = await admin.createNamespace('bench-pods');
  const roll = await admin.createNamespace('bench-roll');
  log(
    `${nodes} kwok nodes; ${bigCount} Deployments of ${BIG_REPLICAS} pods, ${rollouts} of ${ROLL_REPLICAS}`,
  );
  await inParallel(
    Array.from({ length: bigCount }, (_, i) => i),
    4,
    (i) =>
      admin.create(
        `/apis/apps/v1/namespaces/${big}/deployments`,
        onNode(deployment(`app-${i}`, BIG_REPLICAS, '1.0'), plane.nodes[i]!),
      ),
  );
  for (let i = 0; i < rollouts; i++)
    await admin.create(
      `/apis/apps/v1/namespaces/${roll}/deployments`,
      onNode(deployment(`roll-${i}`, ROLL_REPLICAS, '1.0'), plane.nodes[bigCount + i]!),
    );
  const expected = bigCount * BIG_REPLICAS + rollouts * ROLL_REPLICAS;
  let lastSaid = 0;
  await admin.waitFor(
    async () => {
      let available = 0;
      for (const ns of [big, roll]) {
        const list = await admin.list(`/apis/apps/v1/namespaces/${ns}/deployments`);
        for (const item of list.items)
          available += Number(
            (item.status as { availableReplicas?: number } | undefined)?.availableReplicas ?? 0,
          );
      }
      if (performance.now() - lastSaid > 30_000) {
        lastSaid = performance.now();
        log(`${available}/${expected} pods available`);
      }
      return available >= expected;
    },
    { what: `${expected} pods available`, timeoutMs: 3_600_000, intervalMs: 2_000 },
  );
  const setupSeconds = (performance.now() - setupStarted) / 1000;
  log(`every pod available after ${Math.round(setupSeconds)} s; starting kubediff with outcomes on and off`);

  const loadAtStart = os.loadavg()[0]!;
  const outcomeSeen = new Map<string, { at: number; verdict: string; after: number }>();
  const watch = (extra: string[], onLine?: (line: string, at: number) => void) =>
    startChild(
      process.execPath,
      [KUBEDIFF, 'watch', '--kubeconfig', plane.cluster.kubeconfigPath, '-o', 'json', ...extra],
      { ...(onLine ? { onLine } : {}), env: { ...process.env, KUBEDIFF_LOG_FORMAT: 'text' } },
    );
  const on = watch([], (line, at) => {
    if (!line.includes('"type":"OUTCOME"')) return;
    const event = JSON.parse(line) as {
      object: { name: string; namespace: string };
      verdict: string;
      after: number;
    };
    if (event.object.namespace === roll)
      outcomeSeen.set(event.object.name, { at, verdict: event.verdict, after: event.after });
  });
  const off = watch(['--no-outcomes']);
  children.push(on, off);
  await Promise.all([on, off].map((child) => child.waitForStderr(/watching \d+ resource types?/, 600_000)));
  const atSync = (child: Child) => ({ cpu: cpuSeconds(child.pid), rss: memory(child.pid).rss });
  const syncOn = atSync(on);
  const syncOff = atSync(off);

  // The benchmark's own watch of the rolled-out pods: when each pod of a new image became Ready.
  const readyAt = new Map<string, Map<string, number>>(); // Deployment → pod → ms
  const stream = await admin.watch(`/api/v1/namespaces/${roll}/pods`);
  const watching = (async () => {
    for await (const event of stream.events) {
      const pod = event.object as {
        metadata: { name: string; labels?: Record<string, string> };
        spec?: { containers?: { image?: string }[] };
        status?: { conditions?: { type: string; status: string }[] };
      };
      const app = pod.metadata.labels?.['app.kubernetes.io/name'];
      if (!app || !pod.spec?.containers?.[0]?.image?.endsWith(':2.0')) continue;
      const ready = pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
      const pods = readyAt.get(app) ?? new Map<string, number>();
      readyAt.set(app, pods);
      if (ready && !pods.has(pod.metadata.name)) pods.set(pod.metadata.name, performance.now());
    }
  })();

  const delays: number[] = [];
  const afters: number[] = [];
  const verdicts: string[] = [];
  for (let i = 0; i < rollouts; i++) {
    const name = `roll-${i}`;
    const current = await admin.get(`/apis/apps/v1/namespaces/${roll}/deployments/${name}`);
    const spec = current.spec as { template: { spec: { containers: { image: string }[] } } };
    await admin.update(`/apis/apps/v1/namespaces/${roll}/deployments/${name}`, {
      ...current,
      spec: {
        ...spec,
        template: {
          ...spec.template,
          spec: {
            ...spec.template.spec,
            containers: spec.template.spec.containers.map((c, index) =>
              index === 0 ? { ...c, image: c.image.replace(/:1\.0$/, ':2.0') } : c,
            ),
          },
        },
      },
    });
    await admin.waitFor(async () => outcomeSeen.has(name), {
      what: `the OUTCOME of ${name}`,
      timeoutMs: 600_000,
    });
    const outcome = outcomeSeen.get(name)!;
    const readies = [...(readyAt.get(name)?.values() ?? [])];
    if (readies.length < ROLL_REPLICAS) throw new Error(`${name}: ${readies.length} new pods seen Ready`);
    delays.push(outcome.at - Math.max(...readies));
    afters.push(outcome.after);
    verdicts.push(outcome.verdict);
    log(
      `${name}: ${outcome.verdict} after ${outcome.after} s, ${Math.round(delays.at(-1)!)} ms after its last pod was Ready`,
    );
  }
  stream.close();
  await watching;
  const side = (child: Child, sync: { cpu: number; rss: number }): OutcomeSideFigures => {
    const now = memory(child.pid);
    return {
      cpuSecondsAtSync: round(sync.cpu),
      rssAtSyncMiB: round(sync.rss / 2 ** 20),
      cpuSeconds: round(cpuSeconds(child.pid)),
      rssMiB: round(now.rss / 2 ** 20),
      peakRssMiB: round(now.peakRss / 2 ** 20),
    };
  };
  const onFigures = side(on, syncOn);
  const offFigures = side(off, syncOff);
  const figures: OutcomeFigures = {
    pods: expected,
    nodes,
    rollouts,
    verdictDelayMs: mapSpread(spread(delays), (value) => round(value)),
    afterSeconds: mapSpread(spread(afters), (value) => round(value)),
    verdicts,
    on: onFigures,
    off: offFigures,
    cpuRatio: round(onFigures.cpuSeconds / offFigures.cpuSeconds),
    rssRatio: round(onFigures.rssMiB / offFigures.rssMiB),
    setupSeconds: Math.round(setupSeconds),
    loadAverage: { atStart: round(loadAtStart), atEnd: round(os.loadavg()[0]!) },
  };
  process.stdout.write(`${JSON.stringify(figures)}\n`);
} finally {
  await Promise.all(children.map((child) => child.stop()));
  await admin.close();
  await plane.stop();
}

/** The Deployment with its pods bound to `node` from their creation (no scheduling). */
function onNode(object: Record<string, unknown>, node: string): Record<string, unknown> {
  const spec = object.spec as { template: { spec: Record<string, unknown> } };
  return {
    ...object,
    spec: { ...spec, template: { ...spec.template, spec: { ...spec.template.spec, nodeName: node } } },
  };
}

function mapSpread(value: Spread, map: (n: number) => number): Spread {
  return { min: map(value.min), median: map(value.median), max: map(value.max) };
}
