// npm run cluster:up — a test cluster in the background, for trying kubediff by hand or iterating on
// one test file. Builds the binaries if needed, starts etcd, kube-apiserver and kube-controller-manager
// detached (they outlive this command), and writes .cache/cluster/kubeconfig and .cache/cluster/state.json.
// Idempotent: if the recorded cluster is alive and ready, it says so and exits 0.
//
//   npm run cluster:up
//   KUBECONFIG=.cache/cluster/kubeconfig .cache/cluster/bin/kubectl get namespaces
//   KUBEDIFF_TEST_CLUSTER=.cache/cluster/state.json node --test test/integration/harness.test.ts
//   npm run cluster:down
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { kubeconfigYaml, repoRoot, resolveBinaries, startCluster } from '../test/helpers/cluster.ts';
import { KubeAdmin } from '../test/helpers/kube-admin.ts';
import { writeRunDescription } from '../test/helpers/run-description.ts';
import { ensureClusterBinaries } from './cluster-build.ts';
import {
  type ClusterState,
  kubeconfigFile,
  liveProcesses,
  readState,
  stateFile,
  stopRecordedCluster,
} from './cluster-state.ts';

const relative = (file: string) => path.relative(repoRoot, file);

async function isReady(state: ClusterState): Promise<boolean> {
  if (liveProcesses(state).length !== Object.keys(state.pids ?? {}).length) return false;
  const admin = new KubeAdmin(state);
  try {
    const res = await admin.request('GET', '/readyz');
    return res.status === 200;
  } catch {
    return false;
  } finally {
    await admin.close();
  }
}

async function main(): Promise<void> {
  const existing = readState();
  if (existing) {
    if (await isReady(existing)) {
      console.log(`cluster:up: already running at ${existing.server} since ${existing.startedAt}`);
      printUsage();
      return;
    }
    console.log('cluster:up: the recorded cluster is not running or not ready; replacing it');
    await stopRecordedCluster(existing);
  }

  const binaries = resolveBinaries();
  if (Object.values(binaries).some((binary) => binary.source === 'build')) await ensureClusterBinaries();
  const cluster = await startCluster({ persistent: true, useExistingCluster: false, log: console.log });
  try {
    // The kubeconfig the cluster wrote lives in its temp folder; the one users look for is in .cache.
    await writeFile(
      kubeconfigFile,
      kubeconfigYaml({
        server: cluster.server,
        caPem: cluster.caPem,
        token: cluster.adminToken,
        nobodyToken: cluster.nobodyToken,
      }),
      { mode: 0o600 },
    );
    const state: ClusterState = {
      ...cluster,
      kubeconfigPath: kubeconfigFile,
      startedAt: new Date().toISOString(),
    };
    await writeRunDescription(stateFile, state);
  } catch (error) {
    await cluster.stop();
    throw error;
  }
  console.log(`cluster:up: running at ${cluster.server}; logs in ${cluster.dir}`);
  printUsage();
}

function printUsage(): void {
  console.log(
    `cluster:up: KUBECONFIG=${relative(kubeconfigFile)} ${relative(resolveBinaries().kubectl.path)} get namespaces`,
  );
  console.log(`cluster:up: KUBEDIFF_TEST_CLUSTER=${relative(stateFile)} node --test <test files>`);
  console.log('cluster:up: stop it with npm run cluster:down');
}

try {
  await main();
  // The processes are detached and unreferenced; nothing of theirs keeps this command alive.
  process.exit(0);
} catch (error) {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
}
