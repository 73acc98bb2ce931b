// Figure 18: what a change reaches (docs/used-by.md). 1,000 Deployments, each with a ReplicaSet of 3 running
// pods, reading 2 of 2,000 ConfigMaps (one through env, one as a volume), fed to kubediff's own path
// in-process: informers (their LIST, then watch events handed to them as the reflector hands them on),
// the normalizer, the store, the event builder, the owner stage and the JSON line rendering, with the
// "used by" tracker (an observer of the objects as served, and its stage) and without it (--no-used-by),
// pair by pair, in CPU time. Two streams are timed, each a pass of watch events: every ConfigMap updated once (each
// event then names its Deployment, whether it is live and its 3 pods), and every pod's status updated
// once (what the index pays on the busiest type). Memory: the retained heap of the index for those 5,000
// objects (pods, Deployments, ReplicaSets), after a full GC (with --expose-gc).
//
//   node --expose-gc bench/used-by.ts [--pairs 7] [--workloads 1000]   (prints JSON)
import { parseArgs } from 'node:util';
import type { ChangeEvent } from '../src/events/event.ts';
import { OwnerResolver, ownerStage } from '../src/events/owners.ts';
import { Pipeline } from '../src/events/pipeline.ts';
import { UsedByTracker } from '../src/events/used-by/used-by-tracker.ts';
import { Informer } from '../src/informer/informer.ts';
import type { ListerWatcher } from '../src/kube/lister-watcher.ts';
import { type KubeObject, objectKey, type ResourceType } from '../src/kube/types.ts';
import { renderJsonLine } from '../src/sinks/core/stream-output.ts';
import { EventFailures } from '../src/util/event-failures.ts';
import { silentLogger } from '../src/util/log.ts';
import { paired, round, type Spread, spread } from './lib/stats.ts';
import { normalizer } from './pipeline.ts';

export interface UsedByStreamFigures {
  stream: 'configmaps' | 'pods';
  events: number;
  onEventsPerSecond: Spread;
  offEventsPerSecond: Spread;
  /** on / off, pair by pair. */
  ratio: Spread;
  /** The time usedBy adds per event, from the medians. */
  addedMicroseconds: number;
}

export interface UsedByFigures {
  workloads: number;
  configMaps: number;
  pods: number;
  streams: UsedByStreamFigures[];
  heap?: { objects: number; references: number; bytes: number; bytesPerObject: number };
}

const PODS_PER_WORKLOAD = 3;
const MIN_CPU_SECONDS = 0.25;
const STARTED = '2026-12-01T10:00:00Z';
let sink = 0;

function type(group: string, version: string, resource: string, kind: string): ResourceType {
  return {
    group,
    version,
    resource,
    kind,
    namespaced: true,
    verbs: ['list', 'watch'],
    shortNames: [],
    singularName: '',
    categories: [],
  };
}

const TYPES = {
  configmaps: type('', 'v1', 'configmaps', 'ConfigMap'),
  deployments: type('apps', 'v1', 'deployments', 'Deployment'),
  replicasets: type('apps', 'v1', 'replicasets', 'ReplicaSet'),
  pods: type('', 'v1', 'pods', 'Pod'),
};

/** A never-started informer's source: the bench hands its objects to the informer directly. */
const NO_SOURCE: ListerWatcher = {
  server: 'https://bench.invalid',
  path: '/',
  maxReadBytes: 64 * 2 ** 20,
  list: () => Promise.reject(new Error('not listed')),
  listWhole: () => Promise.reject(new Error('not listed')),
  watch: () => Promise.reject(new Error('not watched')),
};

interface World {
  configMaps: KubeObject[];
  deployments: KubeObject[];
  replicaSets: KubeObject[];
  pods: KubeObject[];
}

function meta(name: string, uid: string, rv: number, owner?: { kind: string; name: string; uid: string }) {
  return {
    name,
    namespace: 'bench',
    uid,
    resourceVersion: String(rv),
    // As the API server sets it (pods too, since Kubernetes 1.35): raised with every change of the spec.
    generation: 1,
    ...(owner
      ? {
          ownerReferences: [
            { apiVersion: 'apps/v1', kind: owner.kind, name: owner.name, uid: owner.uid, controller: true },
          ],
        }
      : {}),
  };
}

function podSpec(i: number) {
  return {
    containers: [
      {
        name: 'app',
        image: 'registry.test/web:1.5',
        env: [{ name: 'MODE', valueFrom: { configMapKeyRef: { name: `cm-${2 * i}`, key: 'k0' } } }],
        volumeMounts: [{ name: 'cfg', mountPath: '/etc/cfg' }],
      },
    ],
    volumes: [{ name: 'cfg', configMap: { name: `cm-${2 * i + 1}` } }],
  };
}

function podStatus(restarts: number) {
  return {
    phase: 'Running',
    startTime: STARTED,
    containerStatuses: [
      { name: 'app', ready: true, restartCount: restarts, state: { running: { startedAt: STARTED } } },
    ],
  };
}

function world(workloads: number): World {
  const configMaps: KubeObject[] = [];
  for (let i = 0; i < 2 * workloads; i++) {
    configMaps.push({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: meta(`cm-${i}`, `cm-uid-${i}`, 1),
      data: { k0: 'a', k1: 'b', k2: 'c' },
    });
  }
  const deployments: KubeObject[] = [];
  const replicaSets: KubeObject[] = [];
  const pods: KubeObject[] = [];
  for (let i = 0; i < workloads; i++) {
    const template = { metadata: { labels: { app: `web-${i}` } }, spec: podSpec(i) };
    const deployment = { name: `web-${i}`, uid: `deploy-uid-${i}` };
    deployments.push({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: meta(deployment.name, deployment.uid, 1),
      spec: { replicas: PODS_PER_WORKLOAD, selector: { matchLabels: { app: `web-${i}` } }, template },
    });
    const replicaSet = { name: `web-${i}-5fc8c76ccf`, uid: `rs-uid-${i}` };
    replicaSets.push({
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      metadata: meta(replicaSet.name, replicaSet.uid, 1, { kind: 'Deployment', ...deployment }),
      spec: { replicas: PODS_PER_WORKLOAD, selector: { matchLabels: { app: `web-${i}` } }, template },
    });
    for (let j = 0; j < PODS_PER_WORKLOAD; j++) {
      pods.push({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: meta(`${replicaSet.name}-p${j}`, `pod-uid-${i}-${j}`, 1, {
          kind: 'ReplicaSet',
          ...replicaSet,
        }),
        spec: { ...podSpec(i), serviceAccountName: 'default', nodeName: 'node-0' },
        status: podStatus(0),
      });
    }
  }
  return { configMaps, deployments, replicaSets, pods };
}

/** kubediff's path for the four types, with or without the tracker; listed, then fed watch events. */
class Harness {
  readonly informers: Record<keyof typeof TYPES, Informer>;
  events = 0;
  private rv = 1;

  constructor(objects: World, usedBy: boolean) {
    const owners = new OwnerResolver();
    const tracker = usedBy ? new UsedByTracker({ owners, log: silentLogger }) : undefined;
    const pipeline = new Pipeline({
      normalizer,
      rules: [ownerStage(owners), ...(tracker ? [tracker.stage()] : [])],
      handover: [],
      delivery: {
        deliver: (event: ChangeEvent) => {
          this.events++;
          sink += renderJsonLine(event).length;
          return [];
        },
        accepted: () => [],
      },
      observers: tracker ? [tracker] : [],
      failures: new EventFailures(silentLogger),
    });
    const handler = pipeline.source('bench');
    const informer = (resource: keyof typeof TYPES) =>
      new Informer(
        NO_SOURCE,
        {
          type: TYPES[resource],
          normalize: (type, object) => pipeline.normalize(type, object, 'bench'),
          initialList: 'silent',
          fieldManagers: false,
        },
        handler,
      );
    this.informers = {
      configmaps: informer('configmaps'),
      deployments: informer('deployments'),
      replicasets: informer('replicasets'),
      pods: informer('pods'),
    };
    // As the cluster watcher finds an owner: the informer by group and kind, then the object by key.
    const byKind = new Map(
      Object.values(this.informers).map((entry) => [`${entry.type.group}/${entry.type.kind}`, entry]),
    );
    owners.attach('bench', (group, kind, namespace, name) =>
      byKind
        .get(`${group}/${kind}`)
        ?.get(objectKey({ name, ...(namespace !== undefined ? { namespace } : {}) })),
    );
    const lists: [keyof typeof TYPES, KubeObject[]][] = [
      ['deployments', objects.deployments],
      ['replicasets', objects.replicaSets],
      ['pods', objects.pods],
      ['configmaps', objects.configMaps],
    ];
    for (const [resource, items] of lists) {
      const target = this.informers[resource];
      target.stateChanged({ phase: 'listing' });
      target.listStarted();
      target.listPage(items.map((item) => structuredClone(item)));
      target.listCompleted('1');
      target.stateChanged({ phase: 'watching' });
    }
  }

  /** One pass: every ConfigMap's k0 changes. */
  updateConfigMaps(objects: World): number {
    const rv = ++this.rv;
    for (const configMap of objects.configMaps) {
      this.informers.configmaps.watchEvent('MODIFIED', {
        ...configMap,
        metadata: { ...configMap.metadata, resourceVersion: String(rv) },
        data: { k0: `v${rv}`, k1: 'b', k2: 'c' },
      });
    }
    return objects.configMaps.length;
  }

  /** One pass: every pod's status changes (a restart count). */
  updatePods(objects: World): number {
    const rv = ++this.rv;
    for (const pod of objects.pods) {
      this.informers.pods.watchEvent('MODIFIED', {
        ...pod,
        metadata: { ...pod.metadata, resourceVersion: String(rv) },
        status: podStatus(rv),
      });
    }
    return objects.pods.length;
  }
}

/**
 * Events per second of CPU time of one pass: this process's user and system time, not the wall clock,
 * which on a shared machine also counts the time other processes had the cores.
 */
function timed(pass: () => number): number {
  const started = process.cpuUsage();
  let events = 0;
  let cpu = 0;
  // Passes until a quarter of a second of CPU: enough for the clock's resolution and a GC or two.
  do {
    events += pass();
    const used = process.cpuUsage(started);
    cpu = (used.user + used.system) / 1e6;
  } while (cpu < MIN_CPU_SECONDS);
  return events / cpu;
}

async function measureStream(
  objects: World,
  stream: UsedByStreamFigures['stream'],
  pairs: number,
): Promise<UsedByStreamFigures> {
  const on = new Harness(objects, true);
  const off = new Harness(objects, false);
  const pass = (harness: Harness) =>
    stream === 'configmaps' ? harness.updateConfigMaps(objects) : harness.updatePods(objects);
  const result = await paired(
    pairs,
    2,
    () => timed(() => pass(on)),
    () => timed(() => pass(off)),
  );
  const onRate = spread(result.a);
  const offRate = spread(result.b);
  return {
    stream,
    events: stream === 'configmaps' ? objects.configMaps.length : objects.pods.length,
    onEventsPerSecond: onRate,
    offEventsPerSecond: offRate,
    ratio: spread(result.ratios),
    addedMicroseconds: round(1e6 / onRate.median - 1e6 / offRate.median),
  };
}

/** The index's retained heap for the pods, Deployments and ReplicaSets of `objects`, after a full GC. */
function measureHeap(objects: World): UsedByFigures['heap'] {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) return undefined;
  const tracker = new UsedByTracker({ owners: new OwnerResolver(), log: silentLogger });
  gc();
  const before = process.memoryUsage().heapUsed;
  for (const [resource, items] of [
    ['deployments', objects.deployments],
    ['replicasets', objects.replicaSets],
    ['pods', objects.pods],
  ] as const) {
    for (const item of items) tracker.objectServed(TYPES[resource], item, 'bench');
  }
  gc();
  const bytes = process.memoryUsage().heapUsed - before;
  const stats = tracker.stats().clusters[0];
  const indexed = stats?.objects ?? 0;
  return {
    objects: indexed,
    references: stats?.references ?? 0,
    bytes,
    bytesPerObject: round(bytes / Math.max(1, indexed)),
  };
}

export async function measureUsedBy(workloads: number, pairs: number): Promise<UsedByFigures> {
  const objects = world(workloads);
  const heap = measureHeap(objects);
  const streams = [
    await measureStream(objects, 'configmaps', pairs),
    await measureStream(objects, 'pods', pairs),
  ];
  return {
    workloads,
    configMaps: objects.configMaps.length,
    pods: objects.pods.length,
    streams,
    ...(heap ? { heap } : {}),
  };
}

if (import.meta.main) {
  const { values } = parseArgs({ options: { pairs: { type: 'string' }, workloads: { type: 'string' } } });
  const figures = await measureUsedBy(Number(values.workloads ?? 1000), Number(values.pairs ?? 7));
  process.stdout.write(`${JSON.stringify({ ...figures, sink: sink > 0 })}\n`);
}
