// Without Secrets (docs/deploy.md, "Without Secrets"). RBAC cannot say "everything but Secrets" with
// `*`, so deploy/components/no-secrets and the Helm chart's watchSecrets=false render the same
// ClusterRole listing every core type but secrets and every built-in API group (plus the groups of
// custom resources a user adds), and run kubediff with --exclude-resource=secrets. Applied for real:
// the ServiceAccount may not list, watch or get a Secret anywhere; it may list and watch every other
// built-in type the API server serves (this fails when a new Kubernetes version adds a group the list
// lacks); and kubediff, run with the Deployment's own command line, reports no 403 for anything the
// role grants, reports a ConfigMap and a custom resource of the added group, and never a Secret.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { runKubediff, runKubediffToCompletion } from '../helpers/cli.ts';
import { testCluster } from '../helpers/cluster-env.ts';
import {
  type AccessQuestion,
  applyObjects,
  canIAll,
  clusterScopedPaths,
  deployOverlay,
  describeAccess,
  helmDryRun,
  mintToken,
  type Overlay,
  type PodFiles,
  podCommand,
  podFiles,
  rbacObjects,
  servedResources,
  serverDryRun,
} from '../helpers/deploy.ts';
import { adminClient, type KubeObject, uniqueName } from '../helpers/kube-admin.ts';

const admin = adminClient();

type Rules = { apiGroups: string[]; resources: string[]; verbs: string[] }[];
type Rendered = KubeObject & {
  rules?: Rules;
  spec?: { template: { spec: { containers: { args: string[] }[] } } };
};

const find = (objects: readonly Rendered[], kind: string): Rendered => {
  const found = objects.find((object) => object.kind === kind);
  assert.ok(found, `a ${kind} is rendered`);
  return found;
};
const argsOf = (objects: readonly Rendered[]) =>
  find(objects, 'Deployment').spec?.template.spec.containers[0]?.args;

describe('without Secrets', () => {
  let namespace: string;
  let kubeconfig: string;
  let overlay: Overlay;
  let objects: Rendered[] = [];
  let group: string;
  let serviceAccount: string;
  let token: string | undefined;
  let pod: PodFiles | undefined;
  const clusterScoped: string[] = [];

  before(async () => {
    namespace = await admin.createNamespace('nosecrets');
    kubeconfig = await admin.writeKubeconfig();
    const suffix = `-${uniqueName('s').slice(2)}`;
    serviceAccount = `kubediff${suffix}`;
    // A custom resource of a group of its own, which the overlay adds to the role as docs/deploy.md says.
    group = `${uniqueName('nosecrets')}.example.com`;
    await admin.createCRD(group, 'Gizmo', 'gizmos');
    clusterScoped.push(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gizmos.${group}`);
    overlay = await deployOverlay(namespace, suffix, {
      components: ['no-secrets'],
      patches: [
        {
          kind: 'ClusterRole',
          name: 'kubediff-read-all',
          operations: [{ op: 'add', path: '/rules/1/apiGroups/-', value: group }],
        },
      ],
    });
  });

  after(async () => {
    for (const objectPath of clusterScoped) await admin.delete(objectPath).catch(() => {});
    await admin.deleteNamespace(namespace).catch(() => {});
    await overlay?.remove();
    await pod?.remove();
  });

  const applyRbac = async (): Promise<string> => {
    if (token) return token;
    const rbac = rbacObjects(objects);
    clusterScoped.push(...clusterScopedPaths(rbac));
    await applyObjects(kubeconfig, rbac);
    token = await mintToken(admin, namespace, serviceAccount);
    return token;
  };

  test('the kustomize component and the Helm value render the same role, and kubediff skips secrets', async () => {
    objects = (await serverDryRun(kubeconfig, overlay)) as Rendered[];
    const release = uniqueName('kd');
    const helmObjects = (await helmDryRun(kubeconfig, release, namespace, [
      '--set',
      'watchSecrets=false',
      '--set',
      `rbac.extraApiGroups={${group}}`,
    ])) as Rendered[];

    const rules = find(objects, 'ClusterRole').rules ?? [];
    assert.deepEqual(find(helmObjects, 'ClusterRole').rules, rules, 'the same rules from Helm and kustomize');
    assert.ok(
      rules.every((rule) => !rule.apiGroups.includes('*') && !rule.resources.includes('secrets')),
      JSON.stringify(rules),
    );
    assert.deepEqual([...new Set(rules.flatMap((rule) => rule.verbs))].sort(), ['list', 'watch']);
    for (const args of [argsOf(objects), argsOf(helmObjects)]) {
      assert.ok(args?.includes('--exclude-resource=secrets'), `kubediff skips secrets: ${args?.join(' ')}`);
    }
  });

  test('its ServiceAccount may not read a Secret, and may list and watch every other built-in type', async () => {
    const asPod = admin.as(await applyRbac());
    try {
      const secrets: AccessQuestion[] = [];
      for (const verb of ['list', 'watch', 'get'])
        for (const where of [namespace, 'default', undefined])
          secrets.push({ verb, group: '', resource: 'secrets', ...(where ? { namespace: where } : {}) });
      const secretAnswers = await canIAll(asPod, secrets);
      assert.deepEqual(
        secrets.filter((_, index) => secretAnswers[index]).map(describeAccess),
        [],
        'no access to Secrets',
      );

      // The built-in groups are those the API server registers itself at start; a CRD's are not.
      const apiServices = await admin.list('/apis/apiregistration.k8s.io/v1/apiservices');
      const builtIn = new Set(
        apiServices.items
          .filter((item) => item.metadata.labels?.['kube-aggregator.kubernetes.io/automanaged'] === 'onstart')
          .map((item) => (item as KubeObject & { spec: { group?: string } }).spec.group ?? ''),
      );
      assert.ok(builtIn.has('apps') && builtIn.has('rbac.authorization.k8s.io'), [...builtIn].join(', '));
      const granted = (await servedResources(admin)).filter(
        (type) =>
          !type.subresource &&
          type.verbs.includes('list') &&
          type.verbs.includes('watch') &&
          (type.group === '' || builtIn.has(type.group) || type.group === group) &&
          !(type.group === '' && type.resource === 'secrets'),
      );
      const questions = granted.flatMap((type) =>
        ['list', 'watch'].map((verb) => ({ verb, group: type.group, resource: type.resource })),
      );
      const answers = await canIAll(asPod, questions);
      assert.deepEqual(
        questions.filter((_, index) => !answers[index]).map(describeAccess),
        [],
        'every built-in type but secrets, and the added group, can be listed and watched',
      );
      assert.ok(questions.length > 60, `${questions.length} questions asked`);
    } finally {
      await asPod.close();
    }
  });

  test("kubediff with the Deployment's command line reports no 403 and never a Secret", async () => {
    pod = await podFiles(testCluster(), namespace, await applyRbac());
    const args = await podCommand(objects, pod);
    const env = { ...pod.env, POD_NAME: 'kubediff-7c9d-q8x2w', POD_NAMESPACE: namespace };

    // What it would watch: secrets skipped on purpose, nothing the role grants is forbidden.
    const flags = args.filter((arg) => arg.startsWith('--exclude-resource') || arg.startsWith('--config'));
    const listing = await runKubediffToCompletion(['resources', '-o', 'json', ...flags], { env });
    assert.equal(listing.code, 0, listing.stderr);
    const rows = listing.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { name: string; group: string; watched: boolean; reason?: string });
    assert.equal(rows.find((row) => row.name === 'secrets')?.reason, 'excluded by --exclude-resource');
    const builtInGroups = new Set(
      (find(objects, 'ClusterRole').rules ?? []).flatMap((rule) => rule.apiGroups),
    );
    assert.deepEqual(
      rows.filter((row) => row.reason === 'forbidden' && builtInGroups.has(row.group)).map((row) => row.name),
      [],
      'nothing the role grants is forbidden',
    );
    assert.ok(rows.some((row) => row.name === `gizmos.${group}` && row.watched));

    const kd = runKubediff(args, { env, timeoutMs: 90_000 });
    try {
      await kd.waitForStderr(/became the leader/);
      await kd.waitForStderr(/watching \d+ resource types/);
      await admin.create(`/api/v1/namespaces/${namespace}/secrets`, {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'hidden' },
        stringData: { password: 'hunter2' },
      });
      await admin.create(`/api/v1/namespaces/${namespace}/configmaps`, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'seen' },
      });
      await admin.create(`/apis/${group}/v1/namespaces/${namespace}/gizmos`, {
        apiVersion: `${group}/v1`,
        kind: 'Gizmo',
        metadata: { name: 'seen' },
      });
      await kd.waitForEvent((event) => event.object.kind === 'ConfigMap' && event.object.name === 'seen');
      await kd.waitForEvent((event) => event.object.kind === 'Gizmo' && event.object.name === 'seen');
      const result = await kd.stop('SIGTERM');
      assert.equal(result.code, 0, result.stderr);
      // Secrets are not watched at all (the listing above): none of their events among the others.
      assert.deepEqual(
        kd.events.filter((event) => event.object.kind === 'Secret').map((event) => event.object.name),
        [],
      );
      // Other test files may add custom resources of groups this role does not list: those are
      // forbidden, by design, and reported once each. Nothing the role grants is.
      const forbidden = [...result.stderr.matchAll(/warning: (\S+?)(?: in namespace \S+)?: forbidden/g)].map(
        (match) => match[1] ?? '',
      );
      const grantedForbidden = forbidden.filter((name) => {
        const dot = name.indexOf('.');
        return dot < 0 || builtInGroups.has(name.slice(dot + 1));
      });
      assert.deepEqual(grantedForbidden, [], result.stderr);
    } finally {
      if (!kd.exitResult) await kd.kill();
    }
  });
});
