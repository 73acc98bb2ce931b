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
  stop(): Promise<void>;
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
  const deadline = Date.now() + 180_000;
  const cleanUp = async () => {
    await Promise.all(processes.map((p) => terminate(p)));
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const credentials = await writeCredentials(dir, options.tokens ?? []);
    const [port] = (await freePorts(1)) as [number];
    const server = `https://127.0.0.1:${port}`;
    const certDir = path.join(dir, 'apiserver-certs');
    processes.push(
      launchProcess({
        name: options.processName,
        binary: options.binary ?? resolveBinaries().kubeApiserver.path,
        dir,
        args: apiserverArgs({
          etcdEndpoint,
          port,
          certDir,
          ...credentials,
          extra: [
            `--etcd-prefix=/kubediff-side-${randomBytes(4).toString('hex')}`,
            ...((await options.extraArgs?.(dir)) ?? []),
          ],
        }),
      }),
    );
    const ready = await waitForApiserver({
      certDir,
      dir,
      server,
      adminToken: credentials.adminToken,
      deadline,
      processes,
    });
    await ready.close();
    const kubeconfigPath = path.join(dir, 'kubeconfig');
    await writeFile(
      kubeconfigPath,
      kubeconfigYaml({ server, caPem: ready.caPem, token: credentials.adminToken }),
      { mode: 0o600 },
    );
    let stopping: Promise<void> | undefined;
    return {
      external: false,
      server,
      kubeconfigPath,
      caPem: ready.caPem,
      caFile: ready.caFile,
      adminToken: credentials.adminToken,
      nobodyToken: credentials.nobodyToken,
      dir,
      stop: () => {
        stopping ??= cleanUp();
        return stopping;
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
