// A control plane whose pods run: the test cluster (test/helpers/cluster.ts) with the workload controllers,
// kube-scheduler (same Kubernetes release, from test/cluster) and kwok's controller (from test/kwok), which
// plays the kubelets of fake nodes by the Stages in test/kwok/stages.yaml. A Deployment's pods are
// scheduled, start, become Ready, crash, are OOM-killed or cannot pull their image, as that file says
// (chosen by the image: `web:1.5` runs, `web:oom` is OOM-killed, `web:does-not-exist` cannot be pulled),
// and the Warning Events a kubelet sends come with them.
//
//   const plane = await startPodPlane();            // nodes `kwok-node-0`, `-1`, `-2`, Ready
//   const admin = new KubeAdmin(plane.cluster);
//   ...
//   await plane.stop();
//
// Each test file that needs it starts one of its own (like stories.test.ts's cluster), in parallel with
// the shared cluster of the other files.
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { kwokBinDir } from '../../scripts/kwok-build.ts';
import {
  DEFAULT_CONTROLLERS,
  defaultBinDir,
  type RunningCluster,
  repoRoot,
  startCluster,
  WORKLOAD_CONTROLLERS,
} from './cluster.ts';
import { KubeAdmin } from './kube-admin.ts';
import {
  freePorts,
  launchProcess,
  type ManagedProcess,
  startFailure,
  terminate,
  waitUntil,
} from './processes.ts';

/** What the pod plane's controller manager runs: the defaults, the workload controllers, and the rest a rollout needs. */
export const POD_PLANE_CONTROLLERS = [
  ...DEFAULT_CONTROLLERS,
  ...WORKLOAD_CONTROLLERS,
  'daemonset-controller',
  'statefulset-controller',
  'disruption-controller',
  'ttl-after-finished-controller',
];

/** The annotation that hands a node to kwok (its --manage-nodes-with-annotation-selector). */
export const KWOK_NODE_ANNOTATION = 'kwok.x-k8s.io/node';
export const STAGES_FILE = path.join(repoRoot, 'test', 'kwok', 'stages.yaml');

export interface PodPlaneOptions {
  /** How many fake nodes; default 3, each in a zone of its own (`topology.kubernetes.io/zone`: zone-0…). */
  nodes?: number;
  /** Extra controllers for kube-controller-manager. */
  controllers?: string[];
  /**
   * The client rate limit of kube-controller-manager and kube-scheduler (--kube-api-qps; burst twice
   * that). Default: theirs (20 and 50 per second), as a cluster runs them. A benchmark that brings up
   * thousands of pods lifts it, as kwokctl does for scale (its DisableQPSLimits: 5,000).
   */
  apiQps?: number;
  /**
   * The API server's --etcd-compaction-interval; default the test clusters' 10 s (cluster.ts), so that
   * resourceVersions expire within a test. A benchmark that writes thousands of pods sets the API server's
   * own default (5m): on the loaded machine the watch cache of pods falls seconds behind etcd, and with 10 s
   * its revision gets compacted under it, so it drops every watcher of pods and lists them all again.
   */
  compactionInterval?: string;
  log?: (message: string) => void;
}

export interface PodPlane {
  cluster: RunningCluster;
  /** The fake nodes' names. */
  nodes: string[];
  /** Log files of the scheduler and kwok, beside the cluster's. */
  logs: Record<string, string>;
  stop(): Promise<void>;
}

export async function startPodPlane(options: PodPlaneOptions = {}): Promise<PodPlane> {
  const log = options.log ?? (() => {});
  const qpsArgs =
    options.apiQps === undefined
      ? []
      : [`--kube-api-qps=${options.apiQps}`, `--kube-api-burst=${options.apiQps * 2}`];
  // A control plane of its own even with USE_EXISTING_CLUSTER: the fake nodes and kwok are its kubelets.
  const cluster = await startCluster({
    useExistingCluster: false,
    controllers: [...POD_PLANE_CONTROLLERS, ...(options.controllers ?? [])],
    controllerManagerArgs: qpsArgs,
    ...(options.compactionInterval ? { compactionInterval: options.compactionInterval } : {}),
    ...(options.log ? { log: options.log } : {}),
  });
  const { dir } = cluster;
  if (dir === undefined) throw new Error('the pod plane needs a control plane of its own (no folder)');
  const processes: ManagedProcess[] = [];
  const stopProcesses = async () => {
    await Promise.all(processes.map((p) => terminate(p)));
  };
  const admin = new KubeAdmin(cluster);
  try {
    const [schedulerPort, kwokPort] = await freePorts(2);
    log('pod plane: starting kube-scheduler');
    processes.push(
      launchProcess({
        name: 'kube-scheduler',
        binary: path.join(defaultBinDir, 'kube-scheduler'),
        dir,
        args: [
          `--kubeconfig=${cluster.kubeconfigPath}`,
          `--authentication-kubeconfig=${cluster.kubeconfigPath}`,
          `--authorization-kubeconfig=${cluster.kubeconfigPath}`,
          '--authentication-skip-lookup=true',
          '--leader-elect=false',
          '--bind-address=127.0.0.1',
          `--secure-port=${schedulerPort}`,
          `--cert-dir=${path.join(dir, 'scheduler-certs')}`,
          '--profiling=false',
          ...qpsArgs,
        ],
      }),
    );
    log('pod plane: starting kwok');
    const kwokConfig = path.join(dir, 'kwok.yaml');
    await writeFile(kwokConfig, await readFile(STAGES_FILE, 'utf8'));
    processes.push(
      launchProcess({
        name: 'kwok',
        binary: path.join(kwokBinDir, 'kwok'),
        dir,
        args: [
          `--kubeconfig=${cluster.kubeconfigPath}`,
          `--config=${kwokConfig}`,
          `--manage-nodes-with-annotation-selector=${KWOK_NODE_ANNOTATION}=fake`,
          '--node-ip=10.0.0.1',
          '--cidr=10.244.0.0/16',
          `--server-address=127.0.0.1:${kwokPort}`,
        ],
      }),
    );
    const nodes = Array.from({ length: options.nodes ?? 3 }, (_, i) => `kwok-node-${i}`);
    for (const [i, name] of nodes.entries()) {
      await admin.send('POST', '/api/v1/nodes', {
        body: {
          apiVersion: 'v1',
          kind: 'Node',
          metadata: {
            name,
            annotations: { [KWOK_NODE_ANNOTATION]: 'fake' },
            labels: {
              'kubernetes.io/hostname': name,
              'kubernetes.io/os': 'linux',
              'kubernetes.io/arch': 'amd64',
              'topology.kubernetes.io/zone': `zone-${i}`,
              type: 'kwok',
            },
          },
        },
      });
    }
    // kwok marks each node Ready (stage node-ready) once it manages it: proof that it is connected.
    await waitUntil(
      'kwok to mark every fake node Ready',
      async () => {
        const list = await admin.send<{ items: NodeLike[] }>('GET', '/api/v1/nodes');
        const ready = list.items.filter((node) =>
          node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
        ).length;
        return ready === nodes.length || `${ready} of ${nodes.length} Ready`;
      },
      { deadline: Date.now() + 120_000, processes },
    );
    // The API server taints a new node not-ready (TaintNodesByCondition); the node lifecycle controller
    // lifts it when the node reports Ready. That controller would also want heartbeats: the plane runs
    // without it and lifts the taint itself.
    for (const name of nodes) {
      await admin.send('PATCH', `/api/v1/nodes/${name}`, {
        body: { spec: { taints: null } },
        contentType: 'application/merge-patch+json',
      });
    }
    const logs: Record<string, string> = { ...cluster.logs };
    for (const p of processes) logs[p.name] = p.logFile;
    let stopping: Promise<void> | undefined;
    return {
      cluster,
      nodes,
      logs,
      stop: () => {
        stopping ??= (async () => {
          await admin.close();
          await stopProcesses();
          await cluster.stop();
        })();
        return stopping;
      },
    };
  } catch (error) {
    await admin.close();
    throw await startFailure('the pod plane', error, processes, async () => {
      await stopProcesses();
      await cluster.stop();
    });
  }
}

interface NodeLike {
  status?: { conditions?: { type: string; status: string }[] };
}
