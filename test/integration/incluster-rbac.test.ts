// kubediff as it runs in a pod, with deploy/'s RBAC and nothing else: the manifests pass a server-side
// dry run; their RBAC, applied for real (in a unique namespace, cluster-scoped names suffixed), lets
// kubediff watch every resource type an admin can see, and write nothing but its own Lease. The
// identity is a ServiceAccount token minted with the TokenRequest API, mounted as the kubelet would
// (token file, CA file, namespace file, KUBERNETES_SERVICE_HOST/PORT; no kubeconfig).
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { runKubediff, runKubediffToCompletion } from '../helpers/cli.ts';
import { testCluster } from '../helpers/cluster-env.ts';
import {
  applyObjects,
  clusterScopedPaths,
  deployOverlay,
  kubectlPath,
  mintToken,
  type Overlay,
  type PodFiles,
  podFiles,
  rbacObjects,
  serverDryRun,
} from '../helpers/deploy.ts';
import { adminClient, KubeApiError, type KubeObject, uniqueName, waitFor } from '../helpers/kube-admin.ts';

const cluster = testCluster();
const admin = adminClient();
const skip = kubectlPath() ? false : 'kubectl is not built (npm run cluster:build)';

interface Metrics {
  [name: string]: number;
}

async function scrape(url: string): Promise<Metrics> {
  const text = await (await fetch(url)).text();
  const metrics: Metrics = {};
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    metrics[line.slice(0, space)] = Number(line.slice(space + 1));
  }
  return metrics;
}

describe('in the cluster, with deploy/ RBAC only', { skip }, () => {
  let namespace: string;
  let overlay: Overlay;
  let objects: KubeObject[];
  let pod: PodFiles;
  let adminKubeconfig: string;
  let serviceAccount: string;
  const clusterScoped: string[] = [];

  before(async () => {
    namespace = await admin.createNamespace('incluster');
    overlay = await deployOverlay(namespace, `-${uniqueName('t').slice(2)}`);
    adminKubeconfig = await admin.writeKubeconfig();
    serviceAccount = `kubediff${overlay.suffix}`;
  });

  after(async () => {
    for (const objectPath of clusterScoped) await admin.delete(objectPath).catch(() => {});
    await admin.deleteNamespace(namespace).catch(() => {});
    await overlay?.remove();
    await pod?.remove();
  });

  test('the manifests pass a server-side dry run', async () => {
    objects = await serverDryRun(adminKubeconfig, overlay);
    const kinds = objects.map((object) => object.kind).sort();
    for (const kind of [
      'ClusterRole',
      'ClusterRoleBinding',
      'ConfigMap',
      'Deployment',
      'Namespace',
      'NetworkPolicy',
      'PodDisruptionBudget',
      'Role',
      'RoleBinding',
      'Service',
      'ServiceAccount',
    ]) {
      assert.ok(kinds.includes(kind), `deploy/ renders a ${kind}; got ${kinds.join(', ')}`);
    }
    const clusterRole = objects.find((object) => object.kind === 'ClusterRole') as KubeObject & {
      rules: { verbs: string[] }[];
    };
    assert.deepEqual(
      [...new Set(clusterRole.rules.flatMap((rule) => rule.verbs))].sort(),
      ['get', 'list', 'watch'],
      'the ClusterRole reads, and nothing more',
    );
    // biome-ignore lint/suspicious/noExplicitAny: a rendered manifest, checked field by field
    type Manifest = Record<string, any>;
    const deployment = objects.find((object) => object.kind === 'Deployment') as KubeObject & {
      spec: { replicas: number; template: { spec: Manifest } };
    };
    assert.equal(deployment.spec.replicas, 2);
    const podSpec = deployment.spec.template.spec;
    assert.equal(podSpec.serviceAccountName, serviceAccount);
    assert.equal(podSpec.securityContext.runAsNonRoot, true);
    assert.equal(podSpec.securityContext.seccompProfile.type, 'RuntimeDefault');
    const container = podSpec.containers[0];
    assert.equal(container.securityContext.readOnlyRootFilesystem, true);
    assert.equal(container.securityContext.allowPrivilegeEscalation, false);
    assert.deepEqual(container.securityContext.capabilities.drop, ['ALL']);
    assert.equal(container.livenessProbe.httpGet.path, '/healthz');
    assert.equal(container.readinessProbe.httpGet.path, '/readyz');
    assert.ok(container.resources.requests.memory && container.resources.limits.memory);
    assert.ok(container.args.includes('--leader-elect'), container.args.join(' '));
    // The ConfigMap name carries kustomize's content hash, and the Deployment mounts that one.
    const configMap = objects.find((object) => object.kind === 'ConfigMap');
    assert.equal(
      podSpec.volumes.find((volume: { name: string }) => volume.name === 'config').configMap.name,
      configMap?.metadata.name,
    );
  });

  test('with only its ServiceAccount it watches every resource type and cannot write', async () => {
    const rbac = rbacObjects(objects ?? (await serverDryRun(adminKubeconfig, overlay)));
    clusterScoped.push(...clusterScopedPaths(rbac));
    await applyObjects(adminKubeconfig, rbac);
    const token = await mintToken(admin, namespace, serviceAccount);
    pod = await podFiles(cluster, namespace, token);

    // It cannot write: not a ConfigMap in its own namespace, not a Lease elsewhere, not another Lease.
    const asPod = admin.as(token);
    const forbidden = async (what: string, attempt: () => Promise<unknown>) => {
      await assert.rejects(
        attempt,
        (error: unknown) => error instanceof KubeApiError && error.status === 403,
        what,
      );
    };
    await forbidden('create a ConfigMap', () =>
      asPod.create(`/api/v1/namespaces/${namespace}/configmaps`, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'nope' },
      }),
    );
    await forbidden('create a Lease in another namespace', () =>
      asPod.create('/apis/coordination.k8s.io/v1/namespaces/default/leases', {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: uniqueName('nope') },
        spec: {},
      }),
    );
    await forbidden('delete a Namespace', () => asPod.delete(`/api/v1/namespaces/${namespace}`));
    await asPod.close();

    // What an admin would watch, it watches too: nothing is skipped for lack of rights. (Other tests
    // share the cluster and may add or remove a CRD between the two runs: compare again if so.)
    const rows = (text: string) =>
      text
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { name: string; watched: boolean; reason?: string });
    const watched = (text: string) =>
      rows(text)
        .filter((row) => row.watched)
        .map((row) => row.name)
        .sort();
    let attempt = 0;
    const { adminView, podView } = await waitFor(
      async () => {
        attempt++;
        const adminView = await runKubediffToCompletion([
          'resources',
          '--kubeconfig',
          adminKubeconfig,
          '-o',
          'json',
        ]);
        const podView = await runKubediffToCompletion(['resources', '-o', 'json'], { env: pod?.env });
        assert.equal(podView.code, 0, podView.stderr);
        const same = JSON.stringify(watched(podView.stdout)) === JSON.stringify(watched(adminView.stdout));
        return same || attempt >= 5 ? { adminView, podView } : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 500, what: 'the same resource types for the pod and the admin' },
    );
    assert.deepEqual(
      rows(podView.stdout).filter((row) => row.reason === 'forbidden'),
      [],
      'nothing forbidden to the ServiceAccount',
    );
    assert.deepEqual(watched(podView.stdout), watched(adminView.stdout));
    const expected = watched(adminView.stdout);
    assert.ok(expected.includes('secrets'), 'Secrets are watched (and redacted)');

    // The Deployment's own command line and config file, with the config mounted where the pod's
    // root stands in for `/`, and the port chosen by the system.
    const deployment = objects.find((object) => object.kind === 'Deployment') as KubeObject & {
      spec: { template: { spec: { containers: { args: string[] }[] } } };
    };
    const configMap = objects.find((object) => object.kind === 'ConfigMap') as KubeObject & {
      data: Record<string, string>;
    };
    const configDir = path.join(pod.root, 'etc/kubediff');
    await mkdir(configDir, { recursive: true });
    await writeFile(path.join(configDir, 'config.yaml'), configMap.data['config.yaml'] ?? '');
    const args = (deployment.spec.template.spec.containers[0]?.args ?? []).map((arg) =>
      arg.startsWith('--listen=') ? '--listen=127.0.0.1:0' : arg.replace('/etc/kubediff/', `${configDir}/`),
    );
    assert.equal(args[0], 'watch');
    const kd = runKubediff(args, {
      env: {
        ...pod.env,
        KUBEDIFF_LOG_FORMAT: 'json',
        POD_NAME: 'kubediff-5d8f7-x2x9q',
        POD_NAMESPACE: namespace,
      },
      timeoutMs: 90_000,
    });
    try {
      const [, address] = await kd.waitForStderr(
        /serving \/healthz, \/readyz and \/metrics on (http:\/\/[\d.:]+)/,
      );
      await kd.waitForStderr(/became the leader/);
      const metrics = await waitFor(
        async () => {
          const scraped = await scrape(`${address}/metrics`);
          return scraped['kubediff_informers{state="synced"}'] === expected.length ? scraped : undefined;
        },
        { timeoutMs: 30_000, what: `${expected.length} informers synced` },
      );
      assert.equal(metrics['kubediff_informers{state="failing"}'], 0, 'no informer fails for lack of rights');
      assert.equal((await fetch(`${address}/readyz`)).status, 200);

      // Changes anywhere reach it: a namespaced object, a Secret (redacted), a cluster-scoped object.
      const since = kd.events.length;
      await admin.create(`/api/v1/namespaces/${namespace}/configmaps`, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'seen' },
        data: { a: '1' },
      });
      await admin.create(`/api/v1/namespaces/${namespace}/secrets`, {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'seen' },
        stringData: { password: 'hunter2' },
      });
      const priorityClass = uniqueName('kubediff-pc');
      clusterScoped.push(`/apis/scheduling.k8s.io/v1/priorityclasses/${priorityClass}`);
      await admin.create('/apis/scheduling.k8s.io/v1/priorityclasses', {
        apiVersion: 'scheduling.k8s.io/v1',
        kind: 'PriorityClass',
        metadata: { name: priorityClass },
        value: 1000,
      });
      await kd.waitForEvent(
        (event) =>
          event.type === 'ADDED' && event.object.kind === 'ConfigMap' && event.object.name === 'seen',
        { since },
      );
      const secret = await kd.waitForEvent(
        (event) => event.type === 'ADDED' && event.object.kind === 'Secret' && event.object.name === 'seen',
        { since },
      );
      await kd.waitForEvent(
        (event) =>
          event.type === 'ADDED' &&
          event.object.kind === 'PriorityClass' &&
          event.object.name === priorityClass,
        { since },
      );
      assert.equal(secret.cluster, 'my-cluster', 'clusterName from deploy/config.yaml');
      assert.ok(!JSON.stringify(kd.events).includes('hunter2'), 'no secret value in any event');

      // The Lease it holds, in its own namespace.
      const lease = (await admin.get(
        `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/kubediff`,
      )) as KubeObject & { spec: { holderIdentity: string } };
      assert.match(lease.spec.holderIdentity, /^kubediff-5d8f7-x2x9q_\d+$/);

      const result = await kd.stop('SIGTERM');
      assert.equal(result.code, 0, result.stderr);
      // Logs are JSON lines with a level and a message (stderr is not a terminal).
      for (const line of result.stderr.trim().split('\n')) {
        const record = JSON.parse(line) as { level: string; msg: string; time: string };
        assert.ok(['debug', 'info', 'warn', 'error'].includes(record.level), line);
        assert.equal(typeof record.msg, 'string');
        assert.ok(!Number.isNaN(Date.parse(record.time)));
      }
      assert.ok(!result.stderr.includes('hunter2'));
      // On a clean stop the Lease is released, so that a standby takes over at once.
      const released = (await admin.get(
        `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/kubediff`,
      )) as KubeObject & { spec: { holderIdentity?: string } };
      assert.ok(!released.spec.holderIdentity, `released: ${JSON.stringify(released.spec)}`);
    } finally {
      if (!kd.exitResult) await kd.kill();
    }
  });
});
