// The Helm chart (deploy/helm/kubediff): it lints, renders objects the API server accepts (server-side
// dry run) with the same least-privilege RBAC and locked-down pod as deploy/, and its RBAC, applied for
// real, lets kubediff run with --leader-elect under the chart's Lease name and nothing more.
// Needs helm, built from its Go module: cd test/helm && go build -o ../../.cache/helm/bin/helm helm.sh/helm/v3/cmd/helm
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { DEFAULT_DEAD_LETTER_LIMITS } from '../../src/sinks/core/dead-letter.ts';
import { runKubediff } from '../helpers/cli.ts';
import { testCluster } from '../helpers/cluster-env.ts';
import {
  applyObjects,
  clusterScopedPaths,
  HELM_CHART,
  helm,
  helmDryRun,
  mintToken,
  type PodFiles,
  podFiles,
  quantityBytes,
  rbacObjects,
} from '../helpers/deploy.ts';
import { adminClient, KubeApiError, type KubeObject, uniqueName } from '../helpers/kube-admin.ts';

const CHART = HELM_CHART;
const admin = adminClient();

// biome-ignore lint/suspicious/noExplicitAny: rendered manifests, checked field by field
type Manifest = KubeObject & Record<string, any>;

describe('the Helm chart', () => {
  let namespace: string;
  let kubeconfig: string;
  let release: string;
  let objects: Manifest[] = [];
  let pod: PodFiles | undefined;
  const clusterScoped: string[] = [];

  before(async () => {
    namespace = await admin.createNamespace('helm');
    kubeconfig = await admin.writeKubeconfig();
    release = uniqueName('kd');
  });
  after(async () => {
    for (const objectPath of clusterScoped) await admin.delete(objectPath).catch(() => {});
    await admin.deleteNamespace(namespace).catch(() => {});
    await pod?.remove();
  });

  test('lints, and renders what the API server accepts (server-side dry run)', async () => {
    const lint = await helm(['lint', '--strict', CHART]);
    assert.equal(lint.code, 0, lint.stdout + lint.stderr);
    objects = (await helmDryRun(kubeconfig, release, namespace)) as Manifest[];
    const kinds = objects.map((object) => object.kind).sort();
    assert.deepEqual(kinds, [
      'ClusterRole',
      'ClusterRoleBinding',
      'ConfigMap',
      'Deployment',
      'NetworkPolicy',
      'PodDisruptionBudget',
      'Role',
      'RoleBinding',
      'Service',
      'ServiceAccount',
    ]);
    const clusterRole = objects.find((object) => object.kind === 'ClusterRole');
    // list and watch, not get: `get` on `*` would open pods/log, nodes/proxy, services/proxy…
    assert.deepEqual(clusterRole?.rules, [{ apiGroups: ['*'], resources: ['*'], verbs: ['list', 'watch'] }]);
    // The metrics port: only from the monitoring namespace by default, from whatever the values select.
    const policy = objects.find((object) => object.kind === 'NetworkPolicy');
    assert.deepEqual(policy?.spec.ingress, [
      {
        from: [
          {
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } },
            podSelector: {},
          },
        ],
        ports: [{ protocol: 'TCP', port: 8080 }],
      },
    ]);
    const [custom] = (await helmDryRun(kubeconfig, release, namespace, [
      '--show-only',
      'templates/networkpolicy.yaml',
      '--set',
      'networkPolicy.namespaceSelector.matchLabels.kubernetes\\.io/metadata\\.name=observability',
      '--set',
      'networkPolicy.podSelector.matchLabels.app\\.kubernetes\\.io/name=prometheus',
    ])) as Manifest[];
    assert.deepEqual(custom?.spec.ingress[0].from, [
      {
        namespaceSelector: {
          matchLabels: { 'kubernetes.io/metadata.name': 'observability' },
        },
        podSelector: { matchLabels: { 'app.kubernetes.io/name': 'prometheus' } },
      },
    ]);
    const podSpec = objects.find((object) => object.kind === 'Deployment')?.spec.template.spec;
    assert.equal(podSpec.securityContext.runAsNonRoot, true);
    assert.equal(podSpec.securityContext.seccompProfile.type, 'RuntimeDefault');
    const container = podSpec.containers[0];
    assert.deepEqual(container.securityContext, {
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      capabilities: { drop: ['ALL'] },
    });
    assert.ok(container.args.includes('--leader-elect'));
    // The data volume: an emptyDir past its sizeLimit evicts the pod; the dead-letter cap stays below it.
    const data = podSpec.volumes.find((volume: { name: string }) => volume.name === 'data');
    const cap = DEFAULT_DEAD_LETTER_LIMITS.maxFiles * DEFAULT_DEAD_LETTER_LIMITS.maxFileBytes;
    assert.ok(quantityBytes(data.emptyDir.sizeLimit) > cap, `${data.emptyDir.sizeLimit} above ${cap} bytes`);
    assert.ok(container.args.includes(`--leader-election-id=${release}-kubediff`));
    // Several replicas without leader election would report everything twice: refused.
    const refused = await helm(['template', release, CHART, '--set', 'leaderElection.enabled=false']);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /replicaCount > 1 needs leaderElection\.enabled or fleet\.enabled/);
  });

  test('fleet.enabled: N replicas of one fleet sharing the clusters, no Lease; refused beside leader election or without PostgreSQL', async () => {
    const state = 'config.state.path=postgres://kubediff@db:5432/kubediff';
    const fleet = ['--set', 'fleet.enabled=true', '--set', 'leaderElection.enabled=false', '--set', state];
    const rendered = (await helmDryRun(kubeconfig, release, namespace, [
      ...fleet,
      '--set',
      'replicaCount=3',
    ])) as Manifest[];
    const deployment = rendered.find((object) => object.kind === 'Deployment');
    assert.equal(deployment?.spec.replicas, 3);
    const container = deployment?.spec.template.spec.containers[0];
    const fleetArgs = (container.args as string[]).filter((arg) => /^--(fleet|leader)/.test(arg));
    assert.deepEqual(fleetArgs, [`--fleet=${release}-kubediff`, '--fleet-replica-timeout=10s']);
    // Each replica is named after its pod (--fleet-replica's default).
    assert.deepEqual(
      container.env.find((variable: { name: string }) => variable.name === 'POD_NAME')?.valueFrom,
      { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.name' } },
    );
    assert.ok(
      !rendered.some((object) => object.kind === 'Role' && object.metadata.name.endsWith('leader-election')),
    );
    const both = await helm(['template', release, CHART, '--set', 'fleet.enabled=true', '--set', state]);
    assert.notEqual(both.code, 0);
    assert.match(both.stderr, /fleet\.enabled and leaderElection\.enabled both coordinate the replicas/);
    const noPostgres = await helm([
      'template',
      release,
      CHART,
      '--set',
      'fleet.enabled=true',
      '--set',
      'leaderElection.enabled=false',
    ]);
    assert.notEqual(noPostgres.code, 0);
    assert.match(noPostgres.stderr, /fleet\.enabled needs config\.state\.path set to a postgres:\/\/ URL/);
  });

  test("its RBAC is enough for kubediff with --leader-elect under the chart's Lease name, and no more", async () => {
    const rbac = rbacObjects(objects);
    assert.equal(rbac.length, 5);
    clusterScoped.push(...clusterScopedPaths(rbac));
    await applyObjects(kubeconfig, rbac);
    const token = await mintToken(admin, namespace, `${release}-kubediff`);
    pod = await podFiles(testCluster(), namespace, token);
    const asPod = admin.as(token);
    await assert.rejects(
      asPod.create(`/api/v1/namespaces/${namespace}/configmaps`, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'nope' },
      }),
      (error: unknown) => error instanceof KubeApiError && error.status === 403,
    );
    await asPod.close();
    const kd = runKubediff(
      ['watch', '-n', namespace, '-o', 'json', '--leader-elect', `--leader-election-id=${release}-kubediff`],
      { env: pod.env, timeoutMs: 60_000 },
    );
    try {
      await kd.waitForStderr(/became the leader/);
      assert.doesNotMatch(kd.stderr, /forbidden|cannot/);
      const result = await kd.stop('SIGTERM');
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stderr, /released the lease/);
    } finally {
      if (!kd.exitResult) await kd.kill();
    }
  });
});
