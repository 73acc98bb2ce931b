// buildah as the image build (scripts/image-build.ts) and the release tests run it, without a Docker
// engine: Debian's package (.ci/run installs it), with a container storage of the project's own
// (.cache/image/containers, overlay driver) so that the machine's is left alone, and chroot isolation for
// RUN and for running the image. This machine (a VM without CAP_SYS_RESOURCE, cgroup v1 and v2 mounted
// side by side) runs no OCI runtime: crun refuses the cgroup hybrid mode and fails to set RLIMIT_NOFILE,
// so podman and `buildah run` with an OCI runtime fail; chroot isolation needs neither.
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { repoRoot } from './cluster.ts';
import { type CommandResult, runCommand } from './processes.ts';

export const imageCacheDir = path.join(repoRoot, '.cache', 'image');
/** The description scripts/image-build.ts writes of the image it built (ImageDescription). */
export const imageDescriptionFile = path.join(imageCacheDir, 'image.json');

/** A container storage: the build's, or one of a test's own (to pull into, as another machine would). */
export interface Storage {
  root: string;
  runroot: string;
}

export const buildStorage: Storage = {
  root: path.join(imageCacheDir, 'containers'),
  runroot: path.join(imageCacheDir, 'run'),
};

/** What scripts/image-build.ts built, for the tests. */
export interface ImageDescription {
  /** sha256 over the Dockerfile, the build context and the bases' recipe. */
  stamp: string;
  /** The image in buildStorage: localhost/kubediff:<stamp>. */
  image: string;
  /** The Node.js version of both bases (package-lock.json's `node`). */
  nodeVersion: string;
  /** The Debian packages of the runtime base, name → version. */
  debianPackages: Record<string, string>;
  /** The bases as built (localhost/kubediff-base/<kind>:<stamp>). */
  bases: { build: string; runtime: string };
  /** Seconds each step took when this image was built. */
  seconds: { bases: number; image: number };
}

function storageFlags(storage: Storage): string[] {
  return ['--root', storage.root, '--runroot', storage.runroot, '--storage-driver', 'overlay'];
}

/** buildah's arguments for `args` on `storage` (to run it with a helper of one's own). */
export function buildahArgs(storage: Storage, args: string[]): string[] {
  return [...storageFlags(storage), ...args];
}

/** What `npm run image:build` built last, or an Error saying how to build it. */
export async function builtImage(): Promise<ImageDescription> {
  const text = await readFile(imageDescriptionFile, 'utf8').catch(() => undefined);
  if (text === undefined)
    throw new Error(
      'the image is not built (.cache/image/image.json): run `npm run image:build` (npm test does it when a test needs it).',
    );
  return JSON.parse(text) as ImageDescription;
}

/** Runs buildah to its end and collects its output (never throws for a non-zero exit). */
export function buildah(
  args: string[],
  options: { storage?: Storage; timeoutMs?: number; cwd?: string } = {},
): Promise<CommandResult> {
  return runCommand('buildah', [...storageFlags(options.storage ?? buildStorage), ...args], {
    timeoutMs: options.timeoutMs ?? 300_000,
    cwd: options.cwd,
  });
}

/** buildah with its output shown (a build): resolves to its exit code. */
export function buildahShown(
  args: string[],
  options: { storage?: Storage; cwd?: string } = {},
): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn('buildah', [...storageFlags(options.storage ?? buildStorage), ...args], {
      cwd: options.cwd ?? repoRoot,
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    child.once('error', (error) =>
      reject(
        new Error(`cannot run buildah (${error.message}): install Debian's buildah package (.ci/run does).`),
      ),
    );
    // A build interrupted with this process must not go on without it.
    const stop = () => child.kill('SIGTERM');
    process.once('exit', stop);
    child.once('exit', (code, signal) => {
      process.off('exit', stop);
      resolve(code ?? (signal ? 128 : 1));
    });
  });
}

/** buildah's output, or an Error with what it said. */
export async function buildahOk(
  args: string[],
  options: { storage?: Storage; timeoutMs?: number } = {},
): Promise<string> {
  const result = await buildah(args, options);
  if (result.code !== 0)
    throw new Error(`buildah ${args.join(' ')} failed (exit ${result.code}): ${result.stderr.trim()}`);
  return result.stdout.trim();
}

/** Whether an image is in the storage. */
export async function imageExists(image: string, storage: Storage = buildStorage): Promise<boolean> {
  return (await buildah(['inspect', '--type', 'image', image], { storage })).code === 0;
}

/**
 * Pushes an image from the storage to a plain-HTTP registry (`docker://host/repository:tag`); resolves to
 * the digest of the manifest the registry stored (sha256:…).
 */
export async function pushImage(
  image: string,
  destination: string,
  storage: Storage = buildStorage,
): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'kubediff-push-'));
  try {
    const digestFile = path.join(dir, 'digest');
    await buildahOk(
      ['push', '--tls-verify=false', '--digestfile', digestFile, image, `docker://${destination}`],
      {
        storage,
      },
    );
    return (await readFile(digestFile, 'utf8')).trim();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
