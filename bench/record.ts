// Records the watch streams that figure 1 replays, from the real API server: Deployments (with the
// deployment and ReplicaSet controllers rolling them out), the Pods those controllers create (a
// stand-in kubelet reports their status), ConfigMaps written by two field managers (server-side
// apply and merge patches) and a large custom resource with a status subresource. The lines are
// kept exactly as the API server sent them, managedFields included.
//
//   node bench/record.ts --cluster <ClusterInfo.json> --out <folder>   (standalone, for development)
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ClusterInfo } from '../test/helpers/cluster.ts';
import type { KubeAdmin, KubeObject } from '../test/helpers/kube-admin.ts';
import {
  CR_GROUP,
  CR_PLURAL,
  configMap,
  deployment,
  ensureWidgetCRD,
  inParallel,
  widget,
} from './lib/objects.ts';
import { currentResourceVersion, type RawWatch, rawAgent, rawWatch } from './lib/raw.ts';

export interface RecordedStream {
  name: string;
  file: string;
  lines: number;
  bytes: number;
}

export interface RecordOptions {
  /** Scale of the workload: 1 for the recorded run, smaller for --quick. */
  scale: number;
  log: (message: string) => void;
}

const APPLY = 'application/apply-patch+yaml';

export async function recordStreams(
  info: ClusterInfo,
  admin: KubeAdmin,
  outDir: string,
  options: RecordOptions,
): Promise<RecordedStream[]> {
  await ensureWidgetCRD(admin);
  const ns = await admin.createNamespace('bench-record');
  const base = `/api/v1/namespaces/${ns}`;
  const collections = {
    pods: `${base}/pods`,
    deployments: `/apis/apps/v1/namespaces/${ns}/deployments`,
    configmaps: `${base}/configmaps`,
    widgets: `/apis/${CR_GROUP}/v1/namespaces/${ns}/${CR_PLURAL}`,
  };
  const agent = rawAgent(info);
  const watches = new Map<string, RawWatch>();
  for (const [name, collection] of Object.entries(collections)) {
    const rv = await currentResourceVersion(info, agent, collection);
    watches.set(name, await rawWatch(info, agent, collection, rv));
  }

  const scale = options.scale;
  const deployments = Math.max(2, Math.round(10 * scale));
  const configMaps = Math.max(5, Math.round(60 * scale));
  const widgets = Math.max(2, Math.round(6 * scale));
  const rounds = Math.max(2, Math.round(4 * scale));

  const kubelet = fakeKubelet(admin, ns);
  let failures: (Error | undefined)[] = [];
  try {
    options.log(
      `record: ${deployments} Deployments, ${configMaps} ConfigMaps, ${widgets} Widgets, ${rounds} rounds of updates in ${ns}`,
    );
    const deploymentNames = Array.from({ length: deployments }, (_, i) => `web-${i}`);
    const configMapNames = Array.from({ length: configMaps }, (_, i) => `settings-${i}`);
    const widgetNames = Array.from({ length: widgets }, (_, i) => `gateway-${i}`);
    await inParallel(deploymentNames, 4, (name) =>
      admin.send('POST', collections.deployments, {
        body: deployment(name, 2, '1.0.0'),
        query: { fieldManager: 'helm' },
      }),
    );
    await inParallel(configMapNames, 4, (name, i) =>
      admin.send('PATCH', `${collections.configmaps}/${name}`, {
        body: configMap(name, 8 + (i % 8), 600 + (i % 5) * 400),
        contentType: APPLY,
        query: { fieldManager: 'argocd' },
      }),
    );
    await inParallel(widgetNames, 2, (name) =>
      admin.send('POST', collections.widgets, {
        body: widget(name, 400),
        query: { fieldManager: 'gateway-operator' },
      }),
    );
    for (let round = 1; round <= rounds; round++) {
      options.log(`record: round ${round} of ${rounds}`);
      await inParallel(deploymentNames, 4, (name, i) => {
        const objectPath = `${collections.deployments}/${name}`;
        switch ((round + i) % 3) {
          case 0: // a rollout: new image
            return admin.send('PATCH', objectPath, {
              body: {
                spec: {
                  template: {
                    spec: {
                      containers: [{ name: 'app', image: `registry.example.com/shop/${name}:1.${round}.0` }],
                    },
                  },
                },
              },
              contentType: 'application/strategic-merge-patch+json',
              query: { fieldManager: 'helm' },
            });
          case 1: // a scale
            return admin.send('PATCH', objectPath, {
              body: { spec: { replicas: 2 + (round % 2) } },
              contentType: 'application/merge-patch+json',
              query: { fieldManager: 'kubectl-scale' },
            });
          default: // an env change, a rollout too
            return admin.send('PATCH', objectPath, {
              body: {
                spec: {
                  template: {
                    spec: { containers: [{ name: 'app', env: [{ name: 'RELEASE', value: `r${round}` }] }] },
                  },
                },
              },
              contentType: 'application/strategic-merge-patch+json',
              query: { fieldManager: 'kubectl-edit' },
            });
        }
      });
      await inParallel(configMapNames, 4, async (name, i) => {
        const objectPath = `${collections.configmaps}/${name}`;
        await admin.send('PATCH', objectPath, {
          body: configMap(name, 8 + (i % 8), 600 + (i % 5) * 400, round),
          contentType: APPLY,
          query: { fieldManager: 'argocd' },
        });
        if (i % 2 === 0) {
          await admin.send('PATCH', objectPath, {
            body: { metadata: { annotations: { 'reloader/last-reload': `round-${round}` } } },
            contentType: 'application/merge-patch+json',
            query: { fieldManager: 'reloader' },
          });
        }
      });
      await inParallel(widgetNames, 2, async (name) => {
        const objectPath = `${collections.widgets}/${name}`;
        const updated = (await admin.send('PATCH', objectPath, {
          body: {
            spec: {
              revision: round,
              routes: (widget(name, 400, round).spec as { routes: unknown[] }).routes,
            },
          },
          contentType: 'application/merge-patch+json',
          query: { fieldManager: 'gateway-operator' },
        })) as KubeObject;
        await admin.send('PATCH', `${objectPath}/status`, {
          body: {
            status: {
              observedGeneration: (updated.metadata as { generation?: number }).generation,
              conditions: [
                {
                  type: 'Ready',
                  status: 'True',
                  reason: 'Reconciled',
                  lastTransitionTime: new Date().toISOString().replace(/\.\d+Z/, 'Z'),
                },
              ],
              routesProgrammed: 400,
            },
          },
          contentType: 'application/merge-patch+json',
          query: { fieldManager: 'gateway-operator' },
        });
      });
      // Let the controllers roll out before the next round.
      await sleep(1_500);
    }
    await inParallel(configMapNames.slice(0, Math.ceil(configMaps / 6)), 4, (name) =>
      admin.delete(`${collections.configmaps}/${name}`),
    );
    await admin.delete(`${collections.widgets}/${widgetNames[0]}`);
    await inParallel(deploymentNames.slice(0, Math.ceil(deployments / 5)), 4, (name) =>
      admin.delete(`${collections.deployments}/${name}`, { propagationPolicy: 'Background' }),
    );
    // Rollouts and garbage collection settle; then every stream must be quiet for a while.
    for (;;) {
      await sleep(1_000);
      const quietSince = Math.max(...[...watches.values()].map((watch) => watch.lastLineAt()));
      if (performance.now() - quietSince > 4_000) break;
    }
  } finally {
    await kubelet.stop();
    for (const watch of watches.values()) watch.close();
    failures = await Promise.all([...watches.values()].map((watch) => watch.ended));
    await agent.close();
  }
  await admin.deleteNamespace(ns);
  const failed = failures.findIndex((failure) => failure !== undefined);
  if (failed >= 0) {
    throw new Error(`record: the ${[...watches.keys()][failed]} watch failed: ${failures[failed]!.message}`);
  }

  await mkdir(outDir, { recursive: true });
  const recorded: RecordedStream[] = [];
  for (const [name, watch] of watches) {
    const file = path.join(outDir, `${name}.jsonl`);
    const text = `${watch.lines.join('\n')}\n`;
    await writeFile(file, text);
    recorded.push({ name, file, lines: watch.lines.length, bytes: Buffer.byteLength(text) });
  }
  return recorded;
}

/**
 * What a kubelet would write: each new Pod of the namespace gets a Running status with its
 * containers' states (so ReplicaSets count it available and rollouts progress), under the field
 * manager "kubelet". No node runs the Pods; unscheduled Pods delete at once.
 */
function fakeKubelet(admin: KubeAdmin, ns: string): { stop(): Promise<void> } {
  let stopped = false;
  const reported = new Set<string>();
  const loop = (async () => {
    while (!stopped) {
      try {
        const pods = await admin.list(`/api/v1/namespaces/${ns}/pods`);
        for (const pod of pods.items) {
          const uid = pod.metadata.uid;
          if (reported.has(uid) || (pod.metadata as { deletionTimestamp?: string }).deletionTimestamp)
            continue;
          reported.add(uid);
          await admin
            .send('PATCH', `/api/v1/namespaces/${ns}/pods/${pod.metadata.name}/status`, {
              body: { status: runningStatus(pod) },
              contentType: 'application/merge-patch+json',
              query: { fieldManager: 'kubelet' },
            })
            .catch(() => {}); // deleted meanwhile
        }
      } catch {
        // the namespace is going away
      }
      await sleep(300);
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await loop;
    },
  };
}

function runningStatus(pod: KubeObject): Record<string, unknown> {
  const now = new Date().toISOString().replace(/\.\d+Z/, 'Z');
  const spec = pod.spec as { containers: { name: string; image: string }[] };
  const ip = `10.244.${pod.metadata.uid.charCodeAt(0) % 250}.${pod.metadata.uid.charCodeAt(1) % 250}`;
  const condition = (type: string) => ({
    type,
    status: 'True',
    lastProbeTime: null,
    lastTransitionTime: now,
  });
  return {
    phase: 'Running',
    conditions: [
      condition('PodReadyToStartContainers'),
      condition('Initialized'),
      condition('Ready'),
      condition('ContainersReady'),
      condition('PodScheduled'),
    ],
    hostIP: '172.18.0.4',
    hostIPs: [{ ip: '172.18.0.4' }],
    podIP: ip,
    podIPs: [{ ip }],
    startTime: now,
    qosClass: 'Burstable',
    containerStatuses: spec.containers.map((c, i) => ({
      name: c.name,
      state: { running: { startedAt: now } },
      lastState: {},
      ready: true,
      restartCount: 0,
      image: c.image,
      imageID: `${c.image.split(':')[0]}@sha256:${'0123456789abcdef'.repeat(4)}`,
      containerID: `containerd://${pod.metadata.uid.replaceAll('-', '')}${i}`,
      started: true,
    })),
  };
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const clusterFile = args[args.indexOf('--cluster') + 1];
  const outDir = args[args.indexOf('--out') + 1];
  if (!clusterFile || !outDir) throw new Error('usage: node bench/record.ts --cluster <file> --out <folder>');
  const { benchCluster } = await import('./lib/cluster.ts');
  const cluster = await benchCluster({ existing: clusterFile, log: console.log });
  const streams = await recordStreams(cluster.info, cluster.admin, outDir, { scale: 1, log: console.log });
  console.log(streams);
  await cluster.stop();
}
