// Without Secrets (docs/deploy.md, "Without Secrets"). RBAC cannot say "everything but Secrets" with
// `*`, so deploy/components/no-secrets and the Helm chart's watchSecrets=false render the same
// ClusterRole listing every core type but secrets and every built-in API group (plus the groups of
// custom resources a user adds), and run kubediff with --exclude-resource=secrets. Applied for real:
// the ServiceAccount may not list, watch or get a Secret anywhere; it may list and watch every other
// built-in type the API server serves (this fails when a new Kubernetes version adds a group the list
// lacks); and kubediff, run with the Deployment's own command line, reports no 403 for anything the
// role grants, reports a ConfigMap and a custom resource of the added group, and never a Secret.
import assert from 'node:assert/strict';
import { createServer as createHttpsServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import {
  type AdmissionApiserver,
  needsSharedEtcd,
  registerWebhook,
  startAdmissionApiserver,
} from '../helpers/admission-apiserver.ts';
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
  kubectl,
  mintToken,
  type Overlay,
  type PodFiles,
  podCommand,
  podFiles,
  rbacObjects,
  servedResources,
  serverDryRun,
} from '../helpers/deploy.ts';
import { adminClient, KubeAdmin, type KubeObject, uniqueName, waitFor } from '../helpers/kube-admin.ts';
import { assertNoLeaks, type LeakSource, secretValue } from '../helpers/leak-check.ts';
import { makeTestPki, type TestPki } from '../helpers/pki.ts';
import { seededRandom } from '../helpers/random-json.ts';

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
    // A pod of the Deployment as the overlay named it: its Lease is named after it.
    const env = { ...pod.env, POD_NAME: `${serviceAccount}-7c9d-q8x2w`, POD_NAMESPACE: namespace };

    // What it would watch: secrets skipped on purpose, nothing the role grants is forbidden.
    const flags = args.filter((arg) => arg.startsWith('--exclude-resource') || arg.startsWith('--config'));
    // One access review per type and verb: a minute of guard, as the watch below has (15 s was not enough at load 20).
    const listing = await runKubediffToCompletion(['resources', '-o', 'json', ...flags], {
      env,
      timeoutMs: 60_000,
    });
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

describe('without Secrets, the admission webhook is never called for a Secret', {
  skip: needsSharedEtcd(),
}, () => {
  // The webhook as rendered (its rules and matchConditions; only where it calls and which namespace it
  // reviews are changed) on a real API server, calling a listener on loopback that keeps every body the API
  // server posts: a Secret's review would carry its values, old and new.
  let api: AdmissionApiserver;
  let side: KubeAdmin;
  let namespace: string;
  let pki: TestPki;
  let listener: Server;
  let url: string;
  const bodies: string[] = [];
  const random = seededRandom(42);

  before(async () => {
    pki = makeTestPki();
    listener = createHttpsServer({ cert: pki.serverCert, key: pki.serverKey }, (request, response) => {
      let body = '';
      request.setEncoding('utf8').on('data', (chunk: string) => {
        body += chunk;
      });
      request.on('end', () => {
        bodies.push(body);
        const uid = (JSON.parse(body) as { request: { uid: string } }).request.uid;
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(
          JSON.stringify({
            apiVersion: 'admission.k8s.io/v1',
            kind: 'AdmissionReview',
            response: { uid, allowed: true },
          }),
        );
      });
    });
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    url = `https://127.0.0.1:${(listener.address() as AddressInfo).port}/review`;
    api = await startAdmissionApiserver();
    side = new KubeAdmin(api);
    namespace = await side.createNamespace('secrets');
  });
  after(async () => {
    await side?.close();
    await api?.stop();
    await new Promise((resolve) => listener?.close(resolve));
  });

  /** The rendered webhook configuration, calling the listener, for writes in the test's namespace only. */
  const registered = async (rendered: readonly Rendered[]) => {
    const [configuration] = rendered.filter(
      (object) => object.kind === 'ValidatingWebhookConfiguration',
    ) as (Rendered & {
      webhooks: Record<string, unknown>[];
    })[];
    assert.ok(configuration, 'a ValidatingWebhookConfiguration is rendered');
    return registerWebhook(side, {
      ...configuration,
      metadata: { name: uniqueName('kubediff-who') },
      webhooks: configuration.webhooks.map((webhook) => ({
        ...webhook,
        clientConfig: { url, caBundle: Buffer.from(pki.caPem).toString('base64') },
        namespaceSelector: {
          matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: [namespace] }],
        },
      })),
    } as unknown as KubeObject);
  };
  const reviewed = (resource: string, name: string) =>
    bodies.some((body) => {
      const { request } = JSON.parse(body) as { request: { resource: { resource: string }; name?: string } };
      return request.resource.resource === resource && request.name === name;
    });
  /** Writes a Secret (created, then changed), then a ConfigMap; returns once the ConfigMap's review came. */
  const writeSecretThenSentinel = async (): Promise<string> => {
    const probe = uniqueName('probe');
    // The API server takes a new webhook into use a moment after it is created: write until it calls.
    for (let attempt = 0; !reviewed('configmaps', `${probe}-${attempt - 1}`); attempt++) {
      assert.ok(attempt < 200, 'the API server never called the webhook');
      await side.create(`/api/v1/namespaces/${namespace}/configmaps`, {
        metadata: { name: `${probe}-${attempt}` },
      });
    }
    bodies.length = 0;
    const secret = uniqueName('creds');
    const secrets = `/api/v1/namespaces/${namespace}/secrets`;
    await side.create(secrets, {
      metadata: { name: secret },
      stringData: { password: secretValue(random, 40) },
    });
    await side.patch(`${secrets}/${secret}`, { stringData: { password: secretValue(random, 40) } });
    const sentinel = uniqueName('after');
    await side.create(`/api/v1/namespaces/${namespace}/configmaps`, { metadata: { name: sentinel } });
    await waitFor(() => reviewed('configmaps', sentinel), { what: `the review of ConfigMap ${sentinel}` });
    return secret;
  };
  const listenerSource = (sentinel: RegExp): LeakSource => ({
    name: 'what the webhook listener received',
    read: () => bodies.join('\n'),
    expect: sentinel,
  });

  const sources: { name: string; render: () => Promise<Rendered[]> }[] = [
    {
      name: 'Helm watchSecrets=false',
      render: async () =>
        (await helmDryRun(api.kubeconfigPath, uniqueName('kd'), namespace, [
          '--set',
          'watchSecrets=false',
          '--set',
          'admission.enabled=true',
          '--set',
          'admission.from[0].ipBlock.cidr=172.16.0.0/28',
        ])) as Rendered[],
    },
    ...[
      ['admission', 'no-secrets'],
      ['no-secrets', 'admission'],
    ].map((components) => ({
      name: `kustomize components ${components.join(', ')}`,
      render: async () => {
        const overlay = await deployOverlay(namespace, `-${uniqueName('w').slice(2)}`, {
          components,
          admissionFrom: [{ ipBlock: { cidr: '172.16.0.0/28' } }],
        });
        try {
          const built = await kubectl(['kustomize', overlay.dir]);
          assert.equal(built.code, 0, built.stderr);
          return parseAllDocuments(built.stdout).map((document) => document.toJS() as Rendered);
        } finally {
          await overlay.remove();
        }
      },
    })),
  ];
  for (const source of sources) {
    test(`${source.name}: no Secret's write reaches the listener`, async () => {
      const unregister = await registered(await source.render());
      try {
        const secret = await writeSecretThenSentinel();
        assert.equal(reviewed('secrets', secret), false, 'a review of the Secret was sent');
        await assertNoLeaks([listenerSource(/"resource":"configmaps"/)]);
      } finally {
        await unregister();
      }
    });
  }

  test('the check can fail: while Secrets are watched (Helm by default), their reviews carry their values', async () => {
    const unregister = await registered(
      (await helmDryRun(api.kubeconfigPath, uniqueName('kd'), namespace, [
        '--set',
        'admission.enabled=true',
        '--set',
        'admission.from[0].ipBlock.cidr=172.16.0.0/28',
      ])) as Rendered[],
    );
    try {
      const secret = await writeSecretThenSentinel();
      assert.equal(reviewed('secrets', secret), true);
      await assert.rejects(
        assertNoLeaks([listenerSource(/"resource":"configmaps"/)]),
        /secret values leaked/,
      );
    } finally {
      await unregister();
    }
  });
});
