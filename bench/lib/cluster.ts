// The benchmark's own control plane: the same real API server the integration tests use (built
// from the Kubernetes Go modules by scripts/cluster-build.ts), started for this run and stopped at
// its end, plus the two controllers that make Deployments behave like a real cluster's (ReplicaSets
// and Pods created and updated by the controller manager). `--cluster <file>` reuses a running
// cluster instead (a ClusterInfo JSON file, as `npm run cluster:up` writes), for development.
import { readFileSync } from 'node:fs';
import { ensureClusterBinaries } from '../../scripts/cluster-build.ts';
import { type ClusterInfo, DEFAULT_CONTROLLERS, startCluster } from '../../test/helpers/cluster.ts';
import { KubeAdmin } from '../../test/helpers/kube-admin.ts';
import { rawAgent } from './raw.ts';

export interface BenchCluster {
  info: ClusterInfo;
  admin: KubeAdmin;
  /** `gitVersion` of the API server's /version. */
  kubernetesVersion: string;
  stop(): Promise<void>;
}

export async function benchCluster(options: {
  existing?: string | undefined;
  log: (message: string) => void;
}): Promise<BenchCluster> {
  if (options.existing) {
    const info = JSON.parse(readFileSync(options.existing, 'utf8')) as ClusterInfo;
    const agent = rawAgent(info);
    const admin = new KubeAdmin(info, { dispatcher: agent });
    return { info, admin, kubernetesVersion: await versionOf(admin), stop: () => agent.close() };
  }
  await ensureClusterBinaries(options.log);
  const cluster = await startCluster({
    useExistingCluster: false,
    // The API server's default: a watch that keeps up never sees 410 Gone during the soak.
    compactionInterval: '5m',
    controllers: [...DEFAULT_CONTROLLERS, 'deployment-controller', 'replicaset-controller'],
    log: options.log,
  });
  // The workload's writes over HTTP/1.1, on connections of their own (undici would otherwise
  // multiplex them all on one HTTP/2 session).
  const agent = rawAgent(cluster);
  const admin = new KubeAdmin(cluster, { dispatcher: agent });
  return {
    info: cluster,
    admin,
    kubernetesVersion: await versionOf(admin),
    stop: async () => {
      await agent.close();
      await cluster.stop();
    },
  };
}

async function versionOf(admin: KubeAdmin): Promise<string> {
  const version = (await admin.send('GET', '/version')) as { gitVersion?: string };
  return version.gitVersion ?? 'unknown';
}
