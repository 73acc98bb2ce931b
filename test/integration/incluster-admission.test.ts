// The admission webhook in deploy/ and the Helm chart (docs/who.md), rendered and checked by the real API
// server (a server-side dry run), then installed for real:
// - off by default: nothing of it is rendered, from kustomize or Helm;
// - the kustomize component (deploy/components/admission) and Helm's admission.enabled render the same
//   webhook, as the API server stores it: failurePolicy Ignore, sideEffects None, a short timeout,
//   matchPolicy Equivalent, every resource and */scale, kubediff's namespace, dry runs, leases, events,
//   endpoints and review APIs excluded (its CEL compiled by the server); the Service it calls, the
//   headless Service of the peers, the arguments, the Secret's mount and the NetworkPolicy rule;
// - the certificate: the one kubediff manages (the admission-managed-certificate component, Helm's default
//   certificate=managed): an empty Secret, the arguments that name it, the Service and the webhook, and
//   rights on those two objects alone, by name; no caBundle rendered (kubediff sets it:
//   admission-managed-certificate.test.ts); cert-manager's (the admission-cert-manager component) names
//   the Secret the pods mount;
// - installed on a real API server with nothing behind it (no kubediff, no Service), the chart's webhook
//   lets every write through: failurePolicy Ignore, as the API server's own metrics show.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { needsSharedEtcd, startAdmissionApiserver } from '../helpers/admission-apiserver.ts';
import {
  applyObjects,
  deployOverlay,
  HELM_CHART,
  helm,
  helmDryRun,
  kubectl,
  type Overlay,
  serverDryRun,
} from '../helpers/deploy.ts';
import { adminClient, KubeAdmin, type KubeObject, uniqueName } from '../helpers/kube-admin.ts';
import { parseMetrics } from '../helpers/metrics.ts';

const admin = adminClient();

// biome-ignore lint/suspicious/noExplicitAny: rendered manifests, checked field by field
type Manifest = KubeObject & Record<string, any>;

const container = (objects: readonly Manifest[]) =>
  objects.find((object) => object.kind === 'Deployment')?.spec.template.spec.containers[0];
const podSpec = (objects: readonly Manifest[]) =>
  objects.find((object) => object.kind === 'Deployment')?.spec.template.spec;
const webhooks = (objects: readonly Manifest[]) =>
  objects.filter((object) => object.kind === 'ValidatingWebhookConfiguration');
const services = (objects: readonly Manifest[], port: string) =>
  objects.filter(
    (object) =>
      object.kind === 'Service' && object.spec.ports.some((entry: { name: string }) => entry.name === port),
  );
const policyRules = (objects: readonly Manifest[]) =>
  objects.find((object) => object.kind === 'NetworkPolicy')?.spec.ingress as Manifest[];
const argsOf = (objects: readonly Manifest[], prefix: string) =>
  (container(objects).args as string[]).filter((arg) => arg.startsWith(prefix));

/** Nothing of the admission webhook is rendered. */
function assertNoAdmission(objects: readonly Manifest[], source: string): void {
  assert.deepEqual(webhooks(objects), [], `${source}: no webhook`);
  assert.deepEqual(argsOf(objects, '--admission'), [], `${source}: no --admission argument`);
  assert.deepEqual(argsOf(objects, '--peers'), [], `${source}: no --peers argument`);
  assert.deepEqual(services(objects, 'admission'), [], `${source}: no admission Service`);
  assert.ok(!podSpec(objects).volumes.some((volume: { name: string }) => volume.name === 'admission-tls'));
}

/** The certificate kubediff manages: the empty Secret, and get/update of it, get/patch of the webhook, by name. */
function assertManagedCertificate(
  objects: readonly Manifest[],
  source: string,
  /**
   * `object`: the Secret's name as rendered, and in its Role (kustomize suffixes both); `secret`: as the
   * arguments name it (kustomize does not rename inside arguments, nor the webhook's name in its rule).
   */
  expected: { secret: string; object: string; webhook: string },
): void {
  const secret = objects.find(
    (object) => object.kind === 'Secret' && object.metadata.name === expected.object,
  );
  assert.ok(secret, `${source}: the Secret ${expected.object}`);
  assert.equal(secret.data, undefined, `${source}: applied empty (kubediff fills it)`);
  const rules = (kind: string) =>
    objects.filter((object) => object.kind === kind).flatMap((object) => object.rules as Manifest[]);
  assert.ok(
    rules('Role').some(
      (rule) =>
        rule.resources.includes('secrets') &&
        JSON.stringify(rule.resourceNames) === JSON.stringify([expected.object]) &&
        JSON.stringify(rule.verbs) === JSON.stringify(['get', 'update']),
    ),
    `${source}: get and update of that Secret alone`,
  );
  assert.ok(
    rules('ClusterRole').some(
      (rule) =>
        rule.resources.includes('validatingwebhookconfigurations') &&
        JSON.stringify(rule.resourceNames) === JSON.stringify([expected.webhook]) &&
        JSON.stringify(rule.verbs) === JSON.stringify(['get', 'patch']),
    ),
    `${source}: get and patch of that webhook configuration alone`,
  );
  assert.equal(
    webhooks(objects)[0]?.webhooks[0].clientConfig.caBundle,
    undefined,
    `${source}: no caBundle rendered`,
  );
}

/** The webhook as the API server stores it, the Services, the arguments, the mount, the policy rule. */
function assertAdmission(
  objects: readonly Manifest[],
  source: string,
  expected: {
    namespace: string;
    namespaceByName: boolean;
    service: string;
    /** The headless Service, and the name --peers gives it (kustomize does not rename inside arguments). */
    peers: { service: string; argument: string };
    /** The certificate's arguments. */
    certificate: string[];
  },
): { webhook: Manifest; rule: Manifest } {
  const [configuration, ...others] = webhooks(objects);
  assert.ok(configuration, `${source}: a ValidatingWebhookConfiguration`);
  assert.deepEqual(others, []);
  const [webhook] = configuration.webhooks as Manifest[];
  assert.ok(webhook);
  assert.deepEqual(
    {
      failurePolicy: webhook.failurePolicy,
      sideEffects: webhook.sideEffects,
      timeoutSeconds: webhook.timeoutSeconds,
      matchPolicy: webhook.matchPolicy,
      admissionReviewVersions: webhook.admissionReviewVersions,
      rules: webhook.rules,
      service: webhook.clientConfig.service,
      namespaceSelector: webhook.namespaceSelector,
      matchConditions: webhook.matchConditions.map((condition: { name: string }) => condition.name),
    },
    {
      failurePolicy: 'Ignore',
      sideEffects: 'None',
      timeoutSeconds: 2,
      matchPolicy: 'Equivalent',
      admissionReviewVersions: ['v1'],
      rules: [
        {
          apiGroups: ['*'],
          apiVersions: ['*'],
          operations: ['CREATE', 'UPDATE', 'DELETE'],
          resources: ['*', '*/scale'],
          scope: '*',
        },
      ],
      service: { namespace: expected.namespace, name: expected.service, path: '/review', port: 443 },
      namespaceSelector: {
        matchExpressions: [
          ...(expected.namespaceByName
            ? [{ key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: [expected.namespace] }]
            : []),
          { key: 'who.kubediff.io/skip', operator: 'DoesNotExist' },
        ],
      },
      matchConditions: ['not-dry-run', 'not-high-churn', 'not-a-review'],
    },
    `${source}: the webhook`,
  );
  const [service] = services(objects, 'admission').filter(
    (entry) => entry.metadata.name === expected.service,
  );
  assert.ok(service, `${source}: the Service the webhook calls`);
  assert.deepEqual(
    service.spec.ports.map(({ port, targetPort }: Manifest) => ({ port, targetPort })),
    [{ port: 443, targetPort: 'admission' }],
  );
  const peers = objects.find(
    (object) => object.kind === 'Service' && object.metadata.name === expected.peers.service,
  );
  assert.ok(peers, `${source}: the headless Service of the replicas`);
  assert.equal(peers.spec.clusterIP, 'None');
  assert.equal(
    peers.spec.publishNotReadyAddresses,
    true,
    `${source}: a replica still syncing gets records too`,
  );
  // Both select kubediff's pods: their selectors are subsets of the pods' labels.
  const podLabels = objects.find((object) => object.kind === 'Deployment')?.spec.template.metadata.labels;
  for (const selecting of [service, peers]) {
    for (const [key, value] of Object.entries(selecting.spec.selector as Record<string, string>))
      assert.equal(podLabels[key], value, `${source}: ${selecting.metadata.name} selects the pods (${key})`);
  }
  assert.deepEqual(
    [
      '--admission-listen=:9443',
      ...expected.certificate.filter((arg) => arg.startsWith('--admission')),
      '--admission-allow-unauthenticated',
      `--peers=${expected.peers.argument}.$(POD_NAMESPACE).svc:9443`,
    ].sort(),
    [...argsOf(objects, '--admission'), ...argsOf(objects, '--peers')].sort(),
    `${source}: the arguments`,
  );
  const main = container(objects);
  assert.ok(
    main.env.some((entry: { name: string }) => entry.name === 'POD_NAMESPACE'),
    'for $(POD_NAMESPACE)',
  );
  assert.deepEqual(
    main.ports.find((port: { name: string }) => port.name === 'admission'),
    { name: 'admission', containerPort: 9443, protocol: 'TCP' },
  );
  assert.equal(
    main.volumeMounts.find((mount: { name: string }) => mount.name === 'admission-tls'),
    undefined,
    `${source}: nothing mounted: kubediff reads its Secret through the API`,
  );
  const rule = policyRules(objects).find((entry) => entry.ports?.[0]?.port === 9443);
  assert.ok(rule, `${source}: the policy opens the webhook port`);
  return { webhook, rule };
}

describe('the admission webhook in deploy/ and the chart', () => {
  let namespace: string;
  let kubeconfig: string;
  const overlays: Overlay[] = [];
  const overlay = async (components: string[]) => {
    const made = await deployOverlay(namespace, `-${uniqueName('o').slice(2)}`, { components });
    overlays.push(made);
    return made;
  };

  before(async () => {
    namespace = await admin.createNamespace('admission');
    kubeconfig = await admin.writeKubeconfig();
  });
  after(async () => {
    for (const made of overlays) await made.remove();
    await admin.deleteNamespace(namespace).catch(() => {});
  });

  test('off by default, in kustomize and in Helm', async () => {
    assertNoAdmission((await serverDryRun(kubeconfig, await overlay([]))) as Manifest[], 'deploy/');
    assertNoAdmission((await helmDryRun(kubeconfig, uniqueName('kd'), namespace)) as Manifest[], 'Helm');
  });

  test('the admission component with its managed certificate, as the API server stores it; with cert-manager, the Secret the pods mount', async () => {
    const made = await overlay(['admission', 'admission-managed-certificate']);
    const objects = (await serverDryRun(kubeconfig, made)) as Manifest[];
    const { rule } = assertAdmission(objects, 'deploy/components/admission', {
      namespace,
      namespaceByName: false,
      service: `kubediff-admission${made.suffix}`,
      peers: { service: `kubediff-peers${made.suffix}`, argument: 'kubediff-peers' },
      // kustomize does not rename inside arguments and resourceNames (docs/who.md: patch them with a suffix).
      certificate: [
        '--admission-cert-secret=kubediff-admission-certificate',
        '--admission-service=kubediff-admission',
        '--admission-webhook-config=kubediff-who',
      ],
    });
    assertManagedCertificate(objects, 'deploy/components/admission-managed-certificate', {
      secret: 'kubediff-admission-certificate',
      object: `kubediff-admission-certificate${made.suffix}`,
      webhook: 'kubediff-who',
    });
    assert.equal(
      rule.from,
      undefined,
      "the control plane's addresses are cluster-specific: any, until narrowed",
    );
    // cert-manager's kinds are not served by the test cluster: rendered, not dry-run.
    const withCertManager = await overlay(['admission', 'admission-cert-manager']);
    const rendered = await kubectl(['kustomize', withCertManager.dir]);
    assert.equal(rendered.code, 0, rendered.stderr);
    const documents = rendered.stdout.split(/^---$/m);
    const certificate = documents.find(
      (text) => /kind: Certificate\n/.test(text) && !/isCA: true/.test(text),
    );
    assert.match(certificate ?? '', /secretName: kubediff-admission-tls\n/, 'the Secret the pods mount');
    assert.match(certificate ?? '', /- kubediff-admission\.kubediff\.svc\n/);
    // What cert-manager's cainjector reads: namespace/certificate as the component names them (an overlay
    // into another namespace, or with a name prefix or suffix, patches it: kustomize does not).
    const webhook = documents.find((text) => text.includes('kind: ValidatingWebhookConfiguration'));
    assert.match(webhook ?? '', /cert-manager.io\/inject-ca-from: kubediff\/kubediff-admission\n/);
    assert.match(certificate ?? '', new RegExp(`name: kubediff-admission${withCertManager.suffix}\n`));
    // The pods mount that Secret and serve its files.
    const deployment = documents.find((text) => text.includes('kind: Deployment'));
    assert.match(deployment ?? '', /- --admission-cert=\/etc\/kubediff-admission\/tls\.crt\n/);
    assert.match(deployment ?? '', /secretName: kubediff-admission-tls\n/);
    assert.doesNotMatch(deployment ?? '', /--admission-cert-secret/);
  });

  test('Helm admission.enabled: the same, with the certificate kubediff manages', async () => {
    const release = uniqueName('kd');
    const objects = (await helmDryRun(kubeconfig, release, namespace, [
      '--set',
      'admission.enabled=true',
      '--set',
      'admission.from[0].ipBlock.cidr=172.16.0.0/28',
    ])) as Manifest[];
    const service = `${release}-kubediff-admission`;
    const { webhook, rule } = assertAdmission(objects, 'Helm', {
      namespace,
      namespaceByName: true,
      service,
      peers: { service: `${release}-kubediff-peers`, argument: `${release}-kubediff-peers` },
      certificate: [
        `--admission-cert-secret=${release}-kubediff-admission-certificate`,
        `--admission-service=${service}`,
        `--admission-webhook-config=${release}-kubediff-${namespace}-who`,
      ],
    });
    assertManagedCertificate(objects, 'Helm', {
      secret: `${release}-kubediff-admission-certificate`,
      object: `${release}-kubediff-admission-certificate`,
      webhook: `${release}-kubediff-${namespace}-who`,
    });
    assert.equal(webhook.clientConfig.caBundle, undefined);
    assert.deepEqual(rule.from, [
      { ipBlock: { cidr: '172.16.0.0/28' } },
      { podSelector: { matchLabels: podSpecLabels(objects) } },
    ]);
    // The two ports must differ.
    const clash = await helm([
      'template',
      release,
      HELM_CHART,
      '--set',
      'admission.enabled=true',
      '--set',
      'audit.enabled=true',
      '--set',
      'audit.port=9443',
    ]);
    assert.notEqual(clash.code, 0);
    assert.match(clash.stderr, /admission.port and audit.port must differ/);
  });
});

describe("the chart's webhook installed on a real API server, nothing behind it", {
  skip: needsSharedEtcd(),
}, () => {
  test('every write goes through (failurePolicy Ignore), as the API server counts', async (t) => {
    const api = await startAdmissionApiserver();
    t.after(() => api.stop());
    const side = new KubeAdmin(api);
    t.after(() => side.close());
    const release = uniqueName('kd');
    const namespace = await side.createNamespace('chart');
    const sideKubeconfig = api.kubeconfigPath;
    const objects = (await helmDryRun(sideKubeconfig, release, namespace, [
      '--set',
      'admission.enabled=true',
    ])) as Manifest[];
    // The webhook alone: no kubediff, not even the Service to call (whose ClusterIP would lead off
    // this machine). Its namespaceSelector narrowed to the namespace this test writes in: the API
    // server's own writes elsewhere (kube-system's ConfigMaps, say) would call it too, and be counted.
    const other = await side.createNamespace('writes');
    await applyObjects(
      sideKubeconfig,
      objects
        .filter((object) => object.kind === 'ValidatingWebhookConfiguration')
        .map((configuration) => ({
          ...configuration,
          webhooks: (configuration.webhooks as Manifest[]).map((webhook) => ({
            ...webhook,
            namespaceSelector: {
              ...webhook.namespaceSelector,
              matchExpressions: [
                ...(webhook.namespaceSelector?.matchExpressions ?? []),
                { key: 'kubernetes.io/metadata.name', operator: 'In', values: [other] },
              ],
            },
          })),
        })),
    );
    const failedOpen = async () => {
      const metrics = parseMetrics((await side.request('GET', '/metrics')).text);
      return [...metrics]
        .filter(
          ([key]) =>
            key.startsWith('apiserver_admission_webhook_fail_open_count') && key.includes('who.kubediff.io'),
        )
        .reduce((sum, [, value]) => sum + value, 0);
    };
    // The API server takes the webhook into use a moment after it is created: write until it calls.
    for (let attempt = 0; (await failedOpen()) === 0; attempt++) {
      assert.ok(attempt < 200, 'the API server never called the webhook');
      await side.create(`/api/v1/namespaces/${other}/configmaps`, { metadata: { name: `probe-${attempt}` } });
    }
    const before = await failedOpen();
    await side.create(`/api/v1/namespaces/${other}/configmaps`, {
      metadata: { name: 'goes-through' },
      data: { a: '1' },
    });
    await side.patch(`/api/v1/namespaces/${other}/configmaps/goes-through`, { data: { a: '2' } });
    await side.delete(`/api/v1/namespaces/${other}/configmaps/goes-through`);
    assert.equal((await failedOpen()) - before, 3, 'each write was sent, failed and went through');
  });
});

function podSpecLabels(objects: readonly Manifest[]): Record<string, string> {
  const labels = objects.find((object) => object.kind === 'Deployment')?.spec.selector.matchLabels;
  return labels as Record<string, string>;
}
