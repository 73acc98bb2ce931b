// In a pod the kubelet replaces the ServiceAccount token file before the token expires; kubediff must
// pick the new one up and go on watching. kubediff reads the file again whenever it changed, so the
// request after the change carries the new token. Here the old token is first revoked outright (it is
// bound to a Secret that is then deleted): kubediff is refused (401) and retries; then the file gets a
// new token, and kubediff resumes on its next retry (seconds, with KUBEDIFF_MAX_BACKOFF=2s; a client
// that re-read the file only every minute would miss the wait below) without losing the change made
// meanwhile.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { runKubediff } from '../helpers/cli.ts';
import { testCluster } from '../helpers/cluster-env.ts';
import { mintToken, type PodFiles, podFiles } from '../helpers/deploy.ts';
import { adminClient, waitFor } from '../helpers/kube-admin.ts';

const admin = adminClient();
let namespace: string;
let pod: PodFiles | undefined;

before(async () => {
  namespace = await admin.createNamespace('rotation');
});
after(async () => {
  await pod?.remove();
  await admin.deleteNamespace(namespace).catch(() => {});
});

async function boundToken(name: string): Promise<string> {
  const secret = await admin.create(`/api/v1/namespaces/${namespace}/secrets`, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name },
  });
  // The namespace's default ServiceAccount, with rights on ConfigMaps of this namespace only.
  return mintToken(admin, namespace, 'default', {
    seconds: 3600,
    boundSecret: { name, uid: secret.metadata.uid ?? '' },
  });
}

test('a rotated token file is used from the next request on, after the old token was revoked', {
  timeout: 240_000,
}, async () => {
  await admin.create(`/apis/rbac.authorization.k8s.io/v1/namespaces/${namespace}/roles`, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name: 'read-configmaps' },
    rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }],
  });
  await admin.create(`/apis/rbac.authorization.k8s.io/v1/namespaces/${namespace}/rolebindings`, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: 'read-configmaps' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'read-configmaps' },
    subjects: [{ kind: 'ServiceAccount', name: 'default', namespace }],
  });
  // The controller manager creates the default ServiceAccount shortly after the namespace.
  await waitFor(() => admin.get(`/api/v1/namespaces/${namespace}/serviceaccounts/default`), {
    what: 'the default ServiceAccount',
    intervalMs: 100,
    timeoutMs: 10_000,
  });
  const first = await boundToken('token-a');
  const second = await boundToken('token-b');
  pod = await podFiles(testCluster(), namespace, first);

  const kd = runKubediff(['watch', '-n', namespace, '-r', 'configmaps', '-o', 'json'], {
    // Watches end every 1-2 s, so requests with the token are frequent.
    env: { ...pod.env, KUBEDIFF_WATCH_TIMEOUT: '1s', KUBEDIFF_MAX_BACKOFF: '2s' },
    timeoutMs: 120_000,
  });
  try {
    await kd.waitForStderr(/watching 1 resource type/);
    await admin.create(`/api/v1/namespaces/${namespace}/configmaps`, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'before' },
    });
    await kd.waitForEvent((event) => event.object.name === 'before');

    // The old token revoked: refused.
    await admin.delete(`/api/v1/namespaces/${namespace}/secrets/token-a`);
    await kd.waitForStderr(/401|unauthorized|Unauthorized/, 30_000);
    await admin.create(`/api/v1/namespaces/${namespace}/configmaps`, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'during' },
    });
    // The kubelet's rotation: the next retry (at most 2 s away) carries the new token.
    await pod.writeToken(second);
    await kd.waitForStderr(/reconnected: every watch has resumed/, 15_000);
    const during = await kd.waitForEvent((event) => event.object.name === 'during', { timeoutMs: 20_000 });
    assert.equal(during.type, 'ADDED');
    const result = await kd.stop('SIGTERM');
    assert.equal(result.code, 0, result.stderr);
  } finally {
    if (!kd.exitResult) await kd.kill();
  }
});
