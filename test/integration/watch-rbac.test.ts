// Correctness 6: one forbidden (403) resource affects nothing else; it is reported once and retried slowly.
// kubediff runs as the cluster's rights-less user `nobody`, granted get/list/watch on ConfigMaps only in one test
// namespace (a Role and RoleBinding made by the admin). Secrets are forbidden: that is said once on stderr however
// often kubediff retries (KUBEDIFF_SLOW_RETRY=1s), while ConfigMap changes keep being reported exactly. Granting
// Secrets too brings them back without a restart, and a Secret change is reported with its values redacted.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { killAll, runKubediff } from '../helpers/cli.ts';
import { needsNobody, testCluster } from '../helpers/cluster-env.ts';
import { describeEvent, matching } from '../helpers/events.ts';
import {
  ADMIN_FIELD_MANAGER,
  adminClient,
  nobodyClient,
  waitFor,
  writeKubeconfigFile,
} from '../helpers/kube-admin.ts';
import { SERVING, scrapeMetrics } from '../helpers/metrics.ts';

const admin = adminClient();
const namespaces: string[] = [];
let dir: string | undefined;

after(async () => {
  await killAll();
  // Deleting the namespace removes its Roles, RoleBindings, ConfigMaps and Secrets; nothing cluster-wide is made.
  await Promise.all(namespaces.map((ns) => admin.deleteNamespace(ns)));
  await admin.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const RBAC = '/apis/rbac.authorization.k8s.io/v1';

/** The user name the API server gives the `nobody` token ("nobody" on our cluster, a ServiceAccount elsewhere). */
async function nobodyUserName(): Promise<string> {
  const nobody = nobodyClient();
  assert.ok(nobody);
  try {
    const review = await nobody.send<{ status?: { userInfo?: { username?: string } } }>(
      'POST',
      '/apis/authentication.k8s.io/v1/selfsubjectreviews',
      { body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' } },
    );
    return review.status?.userInfo?.username ?? 'nobody';
  } catch {
    return 'nobody';
  } finally {
    await nobody.close();
  }
}

/** Lets `user` get/list/watch `resources` (core group) in `ns`, and waits until the authorizer agrees. */
async function grant(ns: string, user: string, name: string, resources: string[]): Promise<void> {
  await admin.create(`${RBAC}/namespaces/${ns}/roles`, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name },
    rules: [{ apiGroups: [''], resources, verbs: ['get', 'list', 'watch'] }],
  });
  await admin.create(`${RBAC}/namespaces/${ns}/rolebindings`, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
  });
  const nobody = nobodyClient();
  assert.ok(nobody);
  try {
    for (const resource of resources) {
      await nobody.waitFor(
        async () => (await nobody.request('GET', `/api/v1/namespaces/${ns}/${resource}`)).status === 200,
        { timeoutMs: 15_000, what: `${user} to be allowed to list ${resource} in ${ns}` },
      );
    }
  } finally {
    await nobody.close();
  }
}

const b64 = (text: string) => Buffer.from(text).toString('base64');

test('a forbidden resource is reported once, retried slowly, and disturbs nothing else; a grant brings it back', {
  skip: needsNobody(),
}, async () => {
  const cluster = testCluster();
  const ns = await admin.createNamespace('watch-rbac');
  namespaces.push(ns);
  const user = await nobodyUserName();
  await grant(ns, user, 'kubediff-read-configmaps', ['configmaps']);

  const secrets = `/api/v1/namespaces/${ns}/secrets`;
  const configMaps = `/api/v1/namespaces/${ns}/configmaps`;
  // A Secret that exists before kubediff starts (and so before it may read any): edited later.
  const oldPassword = 'correct-horse-battery-staple';
  const newPassword = 'hunter2-but-longer';
  await admin.create(secrets, {
    metadata: { name: 'db' },
    type: 'Opaque',
    data: { password: b64(oldPassword) },
  });

  dir = await mkdtemp(path.join(tmpdir(), 'kubediff-watch-rbac-'));
  const kubeconfig = await writeKubeconfigFile(cluster, cluster.server, {
    token: cluster.nobodyToken,
    path: path.join(dir, 'nobody-kubeconfig'),
  });
  const kd = runKubediff(
    // --listen: the metrics count the retries.
    [
      'watch',
      '--kubeconfig',
      kubeconfig,
      '-n',
      ns,
      '-r',
      'configmaps,secrets',
      '-o',
      'json',
      '--listen',
      '127.0.0.1:0',
    ],
    {
      env: { KUBEDIFF_SLOW_RETRY: '1s' },
      checkEvents: true,
      timeoutMs: 30_000,
    },
  );

  // The 403 names the resource (and the namespace), and says it is retried.
  const forbiddenLine = new RegExp(
    `^kubediff: warning: secrets in namespace ${ns}: forbidden .*retrying`,
    'gm',
  );
  await kd.waitForStderr(forbiddenLine);
  await kd.waitForStderr(/^kubediff: watching 2 resource types on /m);
  const countForbidden = () => kd.stderr.match(forbiddenLine)?.length ?? 0;

  // ConfigMaps are unaffected: each change reported exactly once, with the exact diff.
  const cm = matching({ kind: 'ConfigMap', namespace: ns, name: 'settings' });
  const since = kd.events.length;
  await admin.create(configMaps, { metadata: { name: 'settings' }, data: { color: 'blue' } });
  await kd.waitForEvent((e) => cm(e) && e.type === 'ADDED', { since, description: 'ADDED settings' });
  await admin.patch(`${configMaps}/settings`, { data: { color: 'red' } });
  const updated = await kd.waitForEvent((e) => cm(e) && e.type === 'UPDATED', {
    since,
    description: 'UPDATED settings',
  });
  assert.deepEqual(updated.changes, [
    { op: 'replace', path: '/data/color', from: 'blue', to: 'red', manager: ADMIN_FIELD_MANAGER },
  ]);
  await admin.delete(`${configMaps}/settings`);
  await kd.waitForEvent((e) => cm(e) && e.type === 'DELETED', { since, description: 'DELETED settings' });

  // Several slow retries (every 1 s) later: still one line about secrets, and nothing else reported.
  const base = (await kd.waitForStderr(SERVING))[1];
  await waitFor(
    async () =>
      ((await scrapeMetrics(base ?? '')).get(
        'kubediff_watch_failures_total{cluster="kubediff-test",resource="secrets",reason="forbidden"}',
      ) ?? 0) >= 4,
    { timeoutMs: 15_000, what: 'four attempts at secrets, each forbidden' },
  );
  assert.equal(countForbidden(), 1, `the 403 on secrets must be reported once:\n${kd.stderr}`);
  assert.deepEqual(
    kd.events.slice(since).map((e) => `${e.type} ${e.object.kind} ${e.object.name}`),
    ['ADDED ConfigMap settings', 'UPDATED ConfigMap settings', 'DELETED ConfigMap settings'],
    `exactly one event per change; got:\n${kd.events.map(describeEvent).join('\n')}`,
  );
  assert.ok(kd.exitResult === undefined, 'kubediff must keep running');

  // Granted: a later retry succeeds, without a restart. Within seconds, so the retries really run every 1 s.
  await grant(ns, user, 'kubediff-read-secrets', ['secrets']);
  await kd.waitForStderr(new RegExp(`^kubediff: secrets in namespace ${ns}: watching again\\.`, 'm'), 10_000);

  const sinceGrant = kd.events.length;
  await admin.patch(`${secrets}/db`, { data: { password: b64(newPassword) } });
  const secretUpdate = await kd.waitForEvent(
    matching({ type: 'UPDATED', kind: 'Secret', namespace: ns, name: 'db' }),
    {
      since: sinceGrant,
      description: 'UPDATED Secret db',
    },
  );
  assert.equal(secretUpdate.changes?.length, 1, describeEvent(secretUpdate));
  const change = secretUpdate.changes![0]!;
  assert.equal(change.op, 'replace');
  assert.equal(change.path, '/data/password');
  assert.match(String(change.from), /^<redacted sha256:[0-9a-f]{8}>$/);
  assert.match(String(change.to), /^<redacted sha256:[0-9a-f]{8}>$/);
  assert.notEqual(change.from, change.to, 'a changed secret value must show as changed');

  await admin.create(secrets, { metadata: { name: 'api' }, stringData: { token: newPassword } });
  await kd.waitForEvent(matching({ type: 'ADDED', kind: 'Secret', namespace: ns, name: 'api' }), {
    since: sinceGrant,
    description: 'ADDED Secret api',
  });

  const result = await kd.stop('SIGINT');
  assert.equal(result.code, 0, `a clean stop exits 0; stderr:\n${result.stderr}`);
  assert.equal(countForbidden(), 1, `the 403 on secrets must be reported once in all:\n${result.stderr}`);
  const output = result.stdout + result.stderr;
  for (const secret of [oldPassword, newPassword, b64(oldPassword), b64(newPassword)]) {
    assert.ok(!output.includes(secret), `a secret value leaked into kubediff's output: ${secret}`);
  }
});
