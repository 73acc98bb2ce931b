// The image's filesystem, without a Docker engine: the Dockerfile's runtime stage holds package.json,
// bin/, the compiled dist/, the web page's files (src/ui/web) and the production dependencies
// (`npm ci --omit=dev`). This builds that tree from the lockfile (every
// package not marked dev), and runs it the way the image's ENTRYPOINT does (this Node 24,
// bin/kubediff.js), as in a pod: it must start, sync and serve /readyz with no dev dependency, no second
// Node.js, and without the TypeScript sources (which the tree, like the image, does not hold), read-only.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chmod, cp, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
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
    for (const part of ['bin', 'dist']) await chmodTree(path.join(image, part), 0o755, 0o644).catch(() => {});
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
  for (const entry of ['package.json', 'bin', 'dist', path.join('src', 'ui', 'web')]) {
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
    await cp(path.join(root, location), path.join(dir, location), { recursive: true, dereference: false });
  }
  return dir;
}

test('the image tree (production dependencies only) runs kubediff as in a pod', async () => {
  image = await buildImageTree();
  const script = path.join(image, 'bin', 'kubediff.js');
  // Owned by root in the image and read-only for its user: nothing is written beside the program.
  for (const part of ['bin', 'dist']) await chmodTree(path.join(image, part), 0o555, 0o444);
  const version = await runKubediffToCompletion(['version'], { script });
  assert.equal(version.code, 0, version.stderr);
  assert.match(version.stdout, /^kubediff \d+\.\d+\.\d+ \(node 24\./);

  // Run with the admin's token mounted as a pod's (this test is about the files, not RBAC).
  const cluster = testCluster();
  const namespace = await admin.createNamespace('image');
  const token = cluster.adminToken;
  if (!token) return;
  const pod = await podFiles(cluster, namespace, token);
  const kd = runKubediff(['watch', '-n', namespace, '-o', 'json', '--listen', '127.0.0.1:0'], {
    script,
    env: { ...pod.env, KUBEDIFF_LOG_FORMAT: undefined },
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
