// The record of the cluster that `npm run cluster:up` started and `npm run cluster:down` stops:
// .cache/cluster/state.json, a ClusterInfo (so KUBEDIFF_TEST_CLUSTER can point at it) plus when it
// was started. Its admin kubeconfig is .cache/cluster/kubeconfig.
import { readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { type ClusterInfo, clusterCacheDir } from '../test/helpers/cluster.ts';
import { processAlive, stopProcessGroup } from '../test/helpers/processes.ts';

export const stateFile = path.join(clusterCacheDir, 'state.json');
export const kubeconfigFile = path.join(clusterCacheDir, 'kubeconfig');
/** Stop order: clients of etcd first. */
const STOP_ORDER = ['kube-controller-manager', 'kube-apiserver', 'etcd'];

export interface ClusterState extends ClusterInfo {
  startedAt: string;
}

export function readState(): ClusterState | undefined {
  try {
    return JSON.parse(readFileSync(stateFile, 'utf8')) as ClusterState;
  } catch {
    return undefined;
  }
}

/** The recorded processes that are still running (checked by pid and binary name). */
export function liveProcesses(state: ClusterInfo): string[] {
  return Object.entries(state.pids ?? {})
    .filter(([name, pid]) => processAlive(pid, state.binaries?.[name] ?? name))
    .map(([name]) => name);
}

/** Stops the recorded processes and removes the cluster's folder, state file and kubeconfig. */
export async function stopRecordedCluster(state: ClusterInfo): Promise<string[]> {
  const live = new Set(liveProcesses(state));
  const names = Object.keys(state.pids ?? {}).sort((a, b) => STOP_ORDER.indexOf(a) - STOP_ORDER.indexOf(b));
  const stopped: string[] = [];
  for (const name of names) {
    const pid = state.pids?.[name];
    if (pid === undefined || !live.has(name)) continue;
    await stopProcessGroup(pid);
    stopped.push(`${name} (pid ${pid})`);
  }
  if (state.dir && path.basename(state.dir).startsWith('kubediff-cluster-')) {
    await rm(state.dir, { recursive: true, force: true });
  }
  await rm(stateFile, { force: true });
  await rm(kubeconfigFile, { force: true });
  return stopped;
}
