// npm run cluster:build — builds the test control plane (kube-apiserver, kube-controller-manager,
// etcd, kubectl) from test/cluster/ into .cache/cluster/bin, only when its inputs changed.
//
// The inputs are summed up in a stamp: sha256 of test/cluster/go.mod, go.sum, cmd/**/*.go, the build
// flags and `go version`. A matching .cache/cluster/bin/.stamp means there is nothing to do. Otherwise
// `go build` runs with the machine's normal module and build caches (GOMODCACHE, GOCACHE), so a
// rebuild after a small change, or a CI run with restored caches, takes seconds to a few minutes.
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { glob, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { defaultBinDir, repoRoot } from '../test/helpers/cluster.ts';
import { processAlive } from '../test/helpers/processes.ts';

export const clusterModuleDir = path.join(repoRoot, 'test', 'cluster');
export const BINARIES = ['kube-apiserver', 'kube-controller-manager', 'etcd', 'kubectl'];
const stampFile = path.join(defaultBinDir, '.stamp');
const lockFile = path.join(defaultBinDir, '.build.lock');

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
export interface BuildResult {
  built: boolean;
  stamp: string;
  elapsedMs: number;
}

/** Builds the binaries unless the stamp says they are current. Throws a one-line Error on failure. */
export async function ensureClusterBinaries(
  log: (message: string) => void = console.log,
): Promise<BuildResult> {
  const started = performance.now();
  const goVersion = readGoVersion();
  let stamp = await computeStamp(goVersion);
  if (isCurrent(stamp)) {
    log(
      `cluster:build: binaries are up to date in ${path.relative(repoRoot, defaultBinDir)} (stamp ${stamp.slice(0, 12)})`,
    );
    return { built: false, stamp, elapsedMs: performance.now() - started };
  }

  // Two test runs (or cluster:up and a test run) must not build into the same folder at once.
  await mkdir(defaultBinDir, { recursive: true });
  const release = await acquireLock(log);
  try {
    stamp = await computeStamp(goVersion);
    if (isCurrent(stamp)) {
      log('cluster:build: another process has just built the binaries');
      return { built: false, stamp, elapsedMs: performance.now() - started };
    }
    const version = kubernetesVersion();
    const args = buildArgs(version);
    log(
      `cluster:build: building ${BINARIES.join(', ')} (Kubernetes ${version}) with ${goVersion} into ` +
        `${path.relative(repoRoot, defaultBinDir)}; a cold build takes minutes`,
    );
    log(
      `cluster:build: (cd test/cluster && go ${args.map((a) => (a.includes(' ') ? `'${a}'` : a)).join(' ')})`,
    );
    await rm(stampFile, { force: true });
    const code = await new Promise<number>((resolve, reject) => {
      const child = spawn('go', args, { cwd: clusterModuleDir, stdio: 'inherit' });
      child.once('error', reject);
      child.once('exit', (exitCode, signal) => resolve(exitCode ?? (signal ? 128 : 1)));
    });
    const elapsed = formatDuration(performance.now() - started);
    if (code !== 0)
      throw new Error(
        `cluster:build: go build failed (exit code ${code}) after ${elapsed}; see its output above.`,
      );
    const missing = BINARIES.filter((name) => !existsSync(path.join(defaultBinDir, name)));
    if (missing.length > 0) throw new Error(`cluster:build: go build did not produce ${missing.join(', ')}.`);
    await writeFile(stampFile, `${stamp}\n`);
    log(`cluster:build: built in ${elapsed}`);
    return { built: true, stamp, elapsedMs: performance.now() - started };
  } finally {
    await release();
  }
}

function readGoVersion(): string {
  const result = spawnSync('go', ['version'], { cwd: clusterModuleDir, encoding: 'utf8' });
  if (result.error && (result.error as NodeJS.ErrnoException).code === 'ENOENT') {
    throw new Error(
      'cluster:build: `go` is not on PATH; install Go 1.26 or newer (https://go.dev/dl/), or set KUBEBUILDER_ASSETS to a folder with prebuilt binaries.',
    );
  }
  if (result.status !== 0) {
    throw new Error(
      `cluster:build: \`go version\` failed: ${(result.stderr || String(result.error)).trim()}`,
    );
  }
  return result.stdout.trim();
}

/** sha256 over `go version`, the build flags, go.mod, go.sum and cmd/**\/*.go (names and contents). */
export async function computeStamp(goVersion = readGoVersion()): Promise<string> {
  return sourceStamp(
    clusterModuleDir,
    ['go.mod', 'go.sum', 'cmd/**/*.go'],
    `${goVersion}\n${buildArgs().slice(0, 3).join(' ')}\n`,
  );
}

/**
 * sha256 over `header` and the files of `dir` matching `patterns` (sorted names and contents): what
 * a build's output depends on, so that a matching stamp means the output is current.
 */
export async function sourceStamp(dir: string, patterns: string[], header: string): Promise<string> {
  const files: string[] = [];
  for await (const file of glob(patterns, { cwd: dir })) files.push(file.split(path.sep).join('/'));
  files.sort();
  const hash = createHash('sha256');
  hash.update(header);
  for (const file of files) {
    const content = await readFile(path.join(dir, file));
    hash.update(`${file}\0${createHash('sha256').update(content).digest('hex')}\n`);
  }
  return hash.digest('hex');
}

function isCurrent(stamp: string): boolean {
  if (!BINARIES.every((name) => existsSync(path.join(defaultBinDir, name)))) return false;
  try {
    return readFileSync(stampFile, 'utf8').trim() === stamp;
  } catch {
    return false;
  }
}

function kubernetesVersion(): string {
  const goMod = readFileSync(path.join(clusterModuleDir, 'go.mod'), 'utf8');
  return /^\s*k8s\.io\/kubernetes\s+(v\S+)/m.exec(goMod)?.[1] ?? 'unknown version';
}

async function acquireLock(log: (message: string) => void): Promise<() => Promise<void>> {
  let announced = false;
  for (;;) {
    try {
      await writeFile(lockFile, `${process.pid}\n`, { flag: 'wx' });
      return () => rm(lockFile, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const holder = Number.parseInt(readFileSync(lockFile, 'utf8').trim(), 10);
    if (!Number.isInteger(holder) || !processAlive(holder)) {
      await rm(lockFile, { force: true }); // left behind by a build that was killed
      continue;
    }
    if (!announced) {
      log(`cluster:build: waiting for the build running in process ${holder}`);
      announced = true;
    }
    await sleep(2_000);
  }
}

export function formatDuration(ms: number): string {
  const seconds = Math.round(ms / 1000);
  if (seconds < 60) return `${(ms / 1000).toFixed(1)}s`;
  return `${Math.floor(seconds / 60)}m${String(seconds % 60).padStart(2, '0')}s`;
}

if (import.meta.main) {
  try {
    await ensureClusterBinaries();
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    process.exitCode = 1;
  }
}
