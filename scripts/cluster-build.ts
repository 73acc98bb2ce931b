// npm run cluster:build — builds the test control plane (kube-apiserver, kube-controller-manager,
// etcd, kubectl, kube-scheduler) from test/cluster/ into .cache/cluster/bin, only when its inputs changed
// (scripts/go-build.ts says how).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { defaultBinDir, repoRoot } from '../test/helpers/cluster.ts';
import { type BuildResult, ensureGoBuild, type GoBuild } from './go-build.ts';

export const clusterModuleDir = path.join(repoRoot, 'test', 'cluster');
export const BINARIES = ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'etcd', 'kubectl'];

/**
 * `go build` arguments. The -X flags stamp the Kubernetes version into the binaries (the upstream
 * build does the same from git), so that /version and `kubectl version` say v1.36.x, not v0.0.0-master.
 */
export function buildArgs(version = kubernetesVersion()): string[] {
  const [major, minor] = version.replace(/^v/, '').split('.');
  const versionFlags = ['k8s.io/component-base/version', 'k8s.io/client-go/pkg/version'].flatMap((pkg) => [
    `-X ${pkg}.gitVersion=${version}`,
    `-X ${pkg}.gitMajor=${major}`,
    `-X ${pkg}.gitMinor=${minor}`,
    `-X ${pkg}.gitTreeState=clean`,
  ]);
  return [
    'build',
    '-trimpath',
    `-ldflags=-s -w ${versionFlags.join(' ')}`,
    '-o',
    `${defaultBinDir}${path.sep}`,
    './cmd/...',
  ];
}

function clusterBuild(): GoBuild {
  return {
    label: 'cluster:build',
    moduleDir: clusterModuleDir,
    binDir: defaultBinDir,
    binaries: BINARIES,
    args: buildArgs(),
    sources: ['cmd/**/*.go'],
    coldNote: `Kubernetes ${kubernetesVersion()}; a cold build takes minutes`,
  };
}

/** Builds the control plane unless the stamp says it is current. Throws a one-line Error on failure. */
export function ensureClusterBinaries(log: (message: string) => void = console.log): Promise<BuildResult> {
  return ensureGoBuild(clusterBuild(), log);
}

function kubernetesVersion(): string {
  const goMod = readFileSync(path.join(clusterModuleDir, 'go.mod'), 'utf8');
  return /^\s*k8s\.io\/kubernetes\s+(v\S+)/m.exec(goMod)?.[1] ?? 'unknown version';
}

if (import.meta.main) {
  try {
    await ensureClusterBinaries();
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    process.exitCode = 1;
  }
}
