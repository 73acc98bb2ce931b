// A kube-apiserver of its own beside the default test cluster, started on demand by the test file that
// needs it (the default cluster of `npm test` is shared, and its start is never slowed by this): on
// the shared etcd under an etcd prefix of its own, so that its objects are apart from the default
// cluster's: to a client, another cluster. Its users: the admin (bearer token), `nobody`, and any
// static token lines given. No controller manager.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  apiserverArgs,
  type ClusterInfo,
  kubeconfigYaml,
  resolveBinaries,
  waitForApiserver,
  writeCredentials,
} from './cluster.ts';
import { testCluster } from './cluster-env.ts';
import {
  freePorts,
  launchProcess,
  type ManagedProcess,
  retryOnPortInUse,
  startFailure,
  terminate,
} from './processes.ts';

export interface SideApiserverOptions {
  /** What it is, in failure messages and process names, e.g. 'the audited API server'. */
  what: string;
  /** The process name in logs, e.g. 'kube-apiserver-audited'. */
  processName: string;
  /** Static token lines (`token,user,uid,"group"`) beside the admin's and nobody's. */
  tokens?: string[];
  /** Flags appended to apiserverArgs(), given the server's own folder (for files they name). */
  extraArgs?: (dir: string) => Promise<string[]>;
  /** The etcd to share; default: the test cluster's. */
  etcdEndpoint?: string;
  /** kube-apiserver; default: resolveBinaries(). */
  binary?: string;
}

export interface SideApiserver extends ClusterInfo {
  /** Stops the server and its replicas for good and removes their files. */
  stop(): Promise<void>;
  /** Stops this kube-apiserver process only (as a crash or an upgrade would); its files stay. */
  stopServer(): Promise<void>;
  /** Starts it again at the same address, with the same serving certificate and users (if stopped). */
  startServer(): Promise<void>;
  /**
   * Another kube-apiserver of the same cluster (same etcd prefix and users, its own port and
   * certificate), as in a highly available control plane: what it writes, the first one serves.
   */
  replica(): Promise<SideApiserver>;
}

/**
 * Why such an API server cannot run here (no etcd to share: USE_EXISTING_CLUSTER=true), or undefined.
 * Use as `describe('…', { skip: needsSharedEtcd() }, …)`.
 */
export function needsSharedEtcd(): string | undefined {
  return testCluster().etcdEndpoint ? undefined : 'needs the test cluster’s etcd to start another API server';
}

export function startSideApiserver(options: SideApiserverOptions): Promise<SideApiserver> {
  return retryOnPortInUse(options.what, () => startOnce(options), undefined);
}

async function startOnce(options: SideApiserverOptions): Promise<SideApiserver> {
  const etcdEndpoint = options.etcdEndpoint ?? testCluster().etcdEndpoint;
  if (!etcdEndpoint) throw new Error(needsSharedEtcd());
  const dir = await mkdtemp(path.join(tmpdir(), 'kubediff-side-apiserver-'));
  const processes: ManagedProcess[] = [];
  const replicas: SideApiserver[] = [];
  const cleanUp = async () => {
    await Promise.all(replicas.map((replica) => replica.stop()));
    await Promise.all(processes.map((p) => terminate(p)));
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const credentials = await writeCredentials(dir, options.tokens ?? []);
    const etcdPrefix = `/kubediff-side-${randomBytes(4).toString('hex')}`;
    const extra = [`--etcd-prefix=${etcdPrefix}`, ...((await options.extraArgs?.(dir)) ?? [])];
    /** One kube-apiserver of this cluster: its port and serving certificate (made at its first start). */
    const instance = async (name: string, port: number) => {
      const certDir = path.join(dir, `${name}-certs`);
      const server = `https://127.0.0.1:${port}`;
      const launch = async () => {
        const started = launchProcess({
          name,
          binary: options.binary ?? resolveBinaries().kubeApiserver.path,
          dir,
          args: apiserverArgs({ etcdEndpoint, port, certDir, ...credentials, extra }),
        });
        processes.push(started);
        const ready = await waitForApiserver({
          certDir,
          dir,
          server,
          adminToken: credentials.adminToken,
          deadline: Date.now() + 180_000,
          processes: [started],
        });
        await ready.close();
        return { process: started, ready };
      };
      let current = await launch();
      let running = true;
      return {
        server,
        ready: current.ready,
        stopServer: async () => {
          running = false;
          await terminate(current.process);
        },
        // A server already running is left as it is.
        startServer: async () => {
          if (running) return;
          current = await launch();
          running = true;
        },
      };
    };
    const [port] = (await freePorts(1)) as [number];
    const main = await instance(options.processName, port);
    const kubeconfigPath = path.join(dir, 'kubeconfig');
    await writeFile(
      kubeconfigPath,
      kubeconfigYaml({ server: main.server, caPem: main.ready.caPem, token: credentials.adminToken }),
      { mode: 0o600 },
    );
    let stopping: Promise<void> | undefined;
    const stop = () => {
      stopping ??= cleanUp();
      return stopping;
    };
    const served = (server: string, ready: { caPem: string; caFile: string }) => ({
      external: false,
      server,
      caPem: ready.caPem,
      caFile: ready.caFile,
      adminToken: credentials.adminToken,
      nobodyToken: credentials.nobodyToken,
      dir,
    });
    let replicaCount = 0;
    return {
      ...served(main.server, main.ready),
      kubeconfigPath,
      stop,
      stopServer: main.stopServer,
      startServer: main.startServer,
      replica: async () => {
        replicaCount++;
        const [replicaPort] = (await freePorts(1)) as [number];
        const replica = await instance(`${options.processName}-replica-${replicaCount}`, replicaPort);
        const info: SideApiserver = {
          ...served(replica.server, replica.ready),
          kubeconfigPath: '',
          stop: replica.stopServer,
          stopServer: replica.stopServer,
          startServer: replica.startServer,
          replica: () => Promise.reject(new Error('a replica of a replica: start it from the first server')),
        };
        replicas.push(info);
        return info;
      },
    };
  } catch (error) {
    throw await startFailure(options.what, error, processes, cleanUp);
  }
}

export interface KubeconfigContext {
  name: string;
  server: string;
  caPem?: string | undefined;
  token?: string | undefined;
}

/**
 * A kubeconfig with one context per entry (each its own cluster and user, named after the context),
 * the first current: several clusters for `watch --context a --context b` and --all-contexts.
 */
export function severalContextsKubeconfig(contexts: readonly KubeconfigContext[]): string {
  // JSON strings are valid YAML double-quoted scalars.
  const q = (value: string) => JSON.stringify(value);
  const lines = ['apiVersion: v1', 'kind: Config', 'clusters:'];
  for (const context of contexts) {
    lines.push(`- name: ${q(context.name)}`, '  cluster:', `    server: ${q(context.server)}`);
    if (context.caPem) {
      lines.push(`    certificate-authority-data: ${q(Buffer.from(context.caPem).toString('base64'))}`);
    }
  }
  lines.push('users:');
  for (const context of contexts) {
    lines.push(
      `- name: ${q(context.name)}`,
      context.token ? `  user: {token: ${q(context.token)}}` : '  user: {}',
    );
  }
  lines.push('contexts:');
  for (const context of contexts) {
    lines.push(
      `- name: ${q(context.name)}`,
      `  context: {cluster: ${q(context.name)}, user: ${q(context.name)}}`,
    );
  }
  lines.push(`current-context: ${q(contexts[0]?.name ?? '')}`, '');
  return lines.join('\n');
}
