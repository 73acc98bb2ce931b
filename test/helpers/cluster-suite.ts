// What most integration test files set up against the test cluster: its admin, its kubeconfig, a scratch
// folder, namespaces made on demand, and, after the file, every kubediff killed, what the file started closed,
// its namespaces deleted (even when a closer failed) and its scratch folder removed. `clusterSuite()` registers
// those before/after hooks on the file it is called in.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before } from 'node:test';
import { killAll } from './cli.ts';
import { testCluster } from './cluster-env.ts';
import { adminClient, type KubeAdmin } from './kube-admin.ts';

export interface ClusterSuite {
  /** The cluster's admin; usable in tests and hooks, not at module load. */
  readonly admin: KubeAdmin;
  readonly kubeconfig: string;
  /** A scratch folder of this file. */
  readonly dir: string;
  /** A new namespace named from `prefix`, deleted after the file. */
  namespace(prefix: string): Promise<string>;
  /** Something the file started (a receiver, a broker) to close after its tests, before the namespaces go. */
  closeAfter(close: () => unknown): void;
}

export function clusterSuite(scratchPrefix: string): ClusterSuite {
  let admin: KubeAdmin | undefined;
  let dir: string | undefined;
  const namespaces: string[] = [];
  const closers: Array<() => unknown> = [];
  const ready = <T>(value: T | undefined, what: string): T => {
    if (value === undefined)
      throw new Error(`clusterSuite: ${what} is set in before(); use it inside a test`);
    return value;
  };

  before(async () => {
    admin = adminClient();
    dir = await mkdtemp(path.join(tmpdir(), `kubediff-${scratchPrefix}-`));
  });
  after(async () => {
    try {
      await killAll();
      await Promise.all(closers.map(async (close) => close()));
    } finally {
      const client = admin;
      if (client) {
        await Promise.all(namespaces.map((ns) => client.deleteNamespace(ns)));
        await client.close();
      }
      if (dir) await rm(dir, { recursive: true, force: true });
    }
  });

  return {
    get admin() {
      return ready(admin, 'admin');
    },
    get kubeconfig() {
      return testCluster().kubeconfigPath;
    },
    get dir() {
      return ready(dir, 'dir');
    },
    async namespace(prefix) {
      const name = await ready(admin, 'admin').createNamespace(prefix);
      namespaces.push(name);
      return name;
    },
    closeAfter(close) {
      closers.push(close);
    },
  };
}
