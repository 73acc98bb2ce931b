// npm run image:build — builds kubediff's container image from the Dockerfile with buildah, without a
// Docker engine and with no registry reachable but the package registries:
//
// 1. Two base images made from Debian's packages and the Node.js binary of the npm registry
//    (scripts/image-base.ts);
// 2. A registry on loopback (test/helpers/registry.ts), the bases pushed to it, and `buildah build` of the
//    Dockerfile with BUILD_IMAGE and RUNTIME_IMAGE naming them by digest: the real Dockerfile, pulling
//    its bases from a registry as it would from the public ones.
// 3. The image kept in the project's container storage (.cache/image/containers) as
//    localhost/kubediff:<stamp>, described by .cache/image/image.json (test/helpers/containers.ts).
//
// Each step runs only when its inputs changed: the bases' stamp covers this script, the packages'
// versions and Node's; the image's covers that, the Dockerfile and the build context.
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { rootCertificates } from 'node:tls';
import { formatDuration } from '../src/util/duration.ts';
import { repoRoot } from '../test/helpers/cluster.ts';
import {
  buildahOk,
  buildahShown,
  buildStorage,
  type ImageDescription,
  imageCacheDir,
  imageDescriptionFile,
  imageExists,
  pushImage,
} from '../test/helpers/containers.ts';
import { startRegistry } from '../test/helpers/registry.ts';
import { sourceStamp } from './go-build.ts';
import { baseInputs, ensureBases, type Log, RUNTIME_PACKAGES, run } from './image-base.ts';
import { ensureReleaseTool } from './release-tools-build.ts';

/** The files the image's build reads: .dockerignore lets in these and nothing else. */
const CONTEXT = [
  'Dockerfile',
  '.dockerignore',
  'package.json',
  'package-lock.json',
  'tsconfig.json',
  'tsconfig.build.json',
  'scripts/build.ts',
  'bin/**',
  'src/**',
];
/** Where the build's RUN steps see this machine's npm cache, and the CA file below (build volumes, in no layer). */
const NPM_CACHE_IN_BUILD = '/var/cache/host-npm';
const BUILD_FILES_IN_BUILD = '/var/run/kubediff-build';

/**
 * The npmrc the Dockerfile's `npm ci` gets as its build secret, written into `dir` with the files it names
 * (`dir` is mounted at BUILD_FILES_IN_BUILD): this machine's registry; its npm cache (mounted at
 * NPM_CACHE_IN_BUILD), preferred to the network, since `npm ci` here has just filled it with the very
 * packages the lockfile pins (integrity-checked again on the way in); and, when this machine's Node trusts
 * CAs beyond its own (NODE_EXTRA_CA_CERTS: a TLS-inspecting proxy's, as on this project's machines), a CA
 * file with Node's and those. A file, not `ca[]=` lines: npm passes its settings to the scripts it runs as
 * environment variables, and one over 128 KiB makes every exec fail (`npm run build` exited with 249).
 */
async function npmrcSecret(dir: string): Promise<string> {
  const registry = (await run('npm', ['config', 'get', 'registry'], dir)).trim();
  const lines = [`registry=${registry}`, `cache=${NPM_CACHE_IN_BUILD}`, 'prefer-offline=true'];
  const extra = process.env.NODE_EXTRA_CA_CERTS;
  if (extra && existsSync(extra)) {
    // `cafile` replaces the CAs npm trusts: Node's own, and the machine's extra ones.
    const pems = new Set([
      ...rootCertificates,
      ...((await readFile(extra, 'utf8')).match(
        /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g,
      ) ?? []),
    ]);
    await writeFile(path.join(dir, 'ca.pem'), `${[...pems].join('\n')}\n`);
    lines.push(`cafile=${BUILD_FILES_IN_BUILD}/ca.pem`);
  }
  const file = path.join(dir, 'npmrc');
  await writeFile(file, `${lines.join('\n')}\n`, { mode: 0o600 });
  return file;
}

/** Removes the images of earlier builds (other stamps) from the storage: each holds a few hundred MB. */
async function pruneImages(keep: readonly string[], log: Log): Promise<void> {
  const listed = (await buildahOk(['images', '--format', '{{.ID}} {{.Name}}'])).split('\n');
  const keepIds = new Set<string>();
  for (const image of keep)
    keepIds.add(await buildahOk(['inspect', '--type', 'image', '--format', '{{.FromImageID}}', image]));
  const stale = new Set(
    listed
      .map((line) => line.trim().split(/\s+/))
      .filter(
        ([id, name]) =>
          id &&
          /\/kubediff(-base\/\w+)?$/.test(name ?? '') &&
          ![...keepIds].some((keepId) => keepId.startsWith(id)),
      )
      .map(([id]) => id as string),
  );
  if (stale.size === 0) return;
  await buildahOk(['rmi', '--force', ...stale]);
  log(`image:build: removed ${stale.size} image(s) of earlier builds`);
}

/** Builds the image unless the stamp says it is current; resolves to its description. */
export async function ensureImage(log: Log = console.log): Promise<ImageDescription> {
  const started = performance.now();
  const inputs = baseInputs();
  const stamp = await sourceStamp(repoRoot, CONTEXT, `${inputs.stamp}\n`);
  const image = `localhost/kubediff:${stamp.slice(0, 16)}`;
  if (existsSync(imageDescriptionFile)) {
    const current = JSON.parse(await readFile(imageDescriptionFile, 'utf8')) as ImageDescription;
    if (current.stamp === stamp && (await imageExists(current.image))) {
      log(`image:build: the image is current (${current.image})`);
      await pruneImages([current.image, current.bases.build, current.bases.runtime], log);
      return current;
    }
  }
  await mkdir(imageCacheDir, { recursive: true });
  await ensureReleaseTool('registry', log);
  const bases = await ensureBases(inputs, log);
  const basesDone = performance.now();
  const registry = await startRegistry({ log, keepLog: false });
  const secrets = await mkdtemp(path.join(tmpdir(), 'kubediff-image-secret-'));
  try {
    const npmrc = await npmrcSecret(secrets);
    const digest = {
      build: await pushImage(
        bases.build,
        `${registry.host}/kubediff-base/build:${inputs.stamp.slice(0, 16)}`,
      ),
      runtime: await pushImage(
        bases.runtime,
        `${registry.host}/kubediff-base/runtime:${inputs.stamp.slice(0, 16)}`,
      ),
    };
    const args = [
      'build',
      '--isolation',
      'chroot',
      '--pull=always',
      '--tls-verify=false',
      '--secret',
      `id=npmrc,src=${npmrc}`,
      '--volume',
      `${(await run('npm', ['config', 'get', 'cache'], repoRoot)).trim()}:${NPM_CACHE_IN_BUILD}`,
      '--volume',
      `${secrets}:${BUILD_FILES_IN_BUILD}:ro`,
      '--build-arg',
      `BUILD_IMAGE=${registry.host}/kubediff-base/build@${digest.build}`,
      '--build-arg',
      `RUNTIME_IMAGE=${registry.host}/kubediff-base/runtime@${digest.runtime}`,
      '--tag',
      image,
      '--file',
      'Dockerfile',
      '.',
    ];
    log(`image:build: buildah ${args.join(' ')}`);
    const code = await buildahShown(args, { storage: buildStorage, cwd: repoRoot });
    if (code !== 0)
      throw new Error(`image:build: buildah build failed (exit ${code}); see its output above.`);
  } finally {
    await registry.stop();
    await rm(secrets, { recursive: true, force: true });
  }
  const description: ImageDescription = {
    stamp,
    image,
    nodeVersion: inputs.nodeVersion,
    debianPackages: Object.fromEntries(
      RUNTIME_PACKAGES.map((name) => [name, inputs.debianPackages[name] ?? '']),
    ),
    bases,
    seconds: {
      bases: Math.round((basesDone - started) / 1000),
      image: Math.round((performance.now() - basesDone) / 1000),
    },
  };
  await writeFile(imageDescriptionFile, `${JSON.stringify(description, null, 2)}\n`);
  await pruneImages([image, bases.build, bases.runtime], log);
  log(`image:build: built ${image} in ${formatDuration(performance.now() - started)}`);
  return description;
}

if (import.meta.main) {
  // Exit on a signal as on an error: the exit hook stops the registry this started (processes.ts).
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(130));
  try {
    await ensureImage();
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    process.exitCode = 1;
  }
}
