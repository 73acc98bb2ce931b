// A real OCI registry on loopback for the image build and the release tests: CNCF Distribution (test/registry,
// built by `npm run registry:build` into .cache/registry/bin), on a free 127.0.0.1 port, plain HTTP (the
// clients are told so: buildah/skopeo `--tls-verify=false`, helm `--plain-http`, cosign
// `--allow-http-registry`), storing in its temp folder, deletes allowed, its own tracing and debug server
// off. A test starts one of its own with startRegistry() and stops it when done.
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { repoRoot } from './cluster.ts';
import {
  freePorts,
  launchProcess,
  type ManagedProcess,
  retryOnPortInUse,
  type ServerFiles,
  type ServerOptions,
  startFailure,
  terminate,
  waitUntil,
} from './processes.ts';
import { type RestartableServer, ServerProcess } from './server-process.ts';

export const registryBinary = path.join(repoRoot, '.cache', 'registry', 'bin', 'registry');

export interface RegistryInfo extends ServerFiles {
  /** host:port, the registry part of an image reference (127.0.0.1:<port>/kubediff@sha256:…). */
  host: string;
  /** http://127.0.0.1:<port>, for the registry's HTTP API (/v2/…). */
  url: string;
}

export type RunningRegistry = RegistryInfo & RestartableServer;

/** The registry binary, or an Error saying how to build it. */
export function registryBinaryPath(): string {
  if (!existsSync(registryBinary))
    throw new Error(
      `the OCI registry is not built (${path.relative(repoRoot, registryBinary)}): run \`npm run registry:build\` (npm test does it when a test needs it).`,
    );
  return registryBinary;
}

/** The registry's configuration (YAML is a superset of JSON). */
export function registryConfig(addr: string, storageDir: string): Record<string, unknown> {
  return {
    version: 0.1,
    log: { level: 'warn', accesslog: { disabled: true } },
    storage: { filesystem: { rootdirectory: storageDir }, delete: { enabled: true } },
    http: { addr },
  };
}

/** Starts a registry of our own; see the file comment. startTimeoutMs: default 60 s. */
export function startRegistry(options: ServerOptions = {}): Promise<RunningRegistry> {
  return retryOnPortInUse('registry', () => startOwnRegistry(options), options.log);
}

async function startOwnRegistry(options: ServerOptions): Promise<RunningRegistry> {
  const log = options.log ?? (() => {});
  const startedAt = performance.now();
  const binary = registryBinaryPath();
  const dir = await mkdtemp(path.join(options.tmpRoot ?? tmpdir(), 'kubediff-registry-'));
  const processes: ManagedProcess[] = [];
  try {
    const [port] = (await freePorts(1)) as [number];
    const host = `127.0.0.1:${port}`;
    const url = `http://${host}`;
    const storageDir = path.join(dir, 'storage');
    await mkdir(storageDir);
    const configFile = path.join(dir, 'config.yml');
    await writeFile(configFile, JSON.stringify(registryConfig(host, storageDir), null, 2));
    const launch = async () => {
      const p = launchProcess({
        name: 'registry',
        binary,
        args: ['serve', configFile],
        dir,
        // Distribution exports OpenTelemetry traces by default: to nowhere here.
        env: { ...process.env, OTEL_TRACES_EXPORTER: 'none', OTEL_SDK_DISABLED: 'true' },
      });
      processes.splice(0, processes.length, p);
      await waitUntil(
        'the OCI registry to answer /v2/',
        async () => {
          const response = await fetch(`${url}/v2/`);
          return response.ok ? true : `HTTP ${response.status}`;
        },
        { deadline: Date.now() + (options.startTimeoutMs ?? 60_000), processes, intervalMs: 50 },
      );
      return p;
    };
    const registry = new ServerProcess({ dir, launch, graceMs: 10_000 });
    await registry.start();
    log(`registry: ready in ${((performance.now() - startedAt) / 1000).toFixed(1)}s at ${host}`);
    const info: RegistryInfo & { logFile: string } = {
      host,
      url,
      dir,
      logFile: path.join(dir, 'registry.log'),
      pid: registry.pid,
    };
    return registry.controls(info, options, `registry-${port}`);
  } catch (error) {
    throw await startFailure('the OCI registry', error, processes, async () => {
      for (const p of processes) await terminate(p);
      await rm(dir, { recursive: true, force: true });
    });
  }
}

/** The digest (sha256:…) of a manifest in the registry, as it answers a HEAD for `reference` (tag or digest). */
export async function manifestDigest(
  registry: RegistryInfo,
  repository: string,
  reference: string,
): Promise<string> {
  const response = await fetch(`${registry.url}/v2/${repository}/manifests/${reference}`, {
    method: 'HEAD',
    headers: {
      accept: [
        'application/vnd.oci.image.manifest.v1+json',
        'application/vnd.oci.image.index.v1+json',
        'application/vnd.docker.distribution.manifest.v2+json',
        'application/vnd.docker.distribution.manifest.list.v2+json',
      ].join(', '),
    },
  });
  const digest = response.headers.get('docker-content-digest');
  if (!response.ok || !digest)
    throw new Error(`the registry has no manifest ${repository}:${reference} (HTTP ${response.status})`);
  return digest;
}
