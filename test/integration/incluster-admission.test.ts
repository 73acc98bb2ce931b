// The admission webhook in deploy/ and the Helm chart (docs/who.md), rendered and checked by the real API
// server (a server-side dry run), then installed for real:
// - off by default: nothing of it is rendered, from kustomize or Helm;
// - the kustomize component (deploy/components/admission) and Helm's admission.enabled render the same
//   webhook, as the API server stores it: failurePolicy Ignore, sideEffects None, a short timeout,
//   matchPolicy Equivalent, every resource and */scale, kubediff's namespace and kube-system, dry runs,
//   leases, events, endpoints and review APIs excluded, Secrets only while watched (its CEL compiled by the
//   server); the Service it calls, the headless Service of the peers, the arguments;
// - who may reach the webhook port: the control plane's addresses the user names (kustomize's
//   AdmissionSources, Helm's admission.from) and the other replicas; without them the build stops and
//   says what to set, while reviews are unauthenticated;
// - the certificate: the one kubediff manages (the admission-managed-certificate component, Helm's default
//   certificate=managed): an empty Secret, the arguments that name it, the Service and the webhook (as the
//   kubelet expands them: kustomize's suffix renames them there too), and rights on those two objects
//   alone, by name, nothing mounted; no caBundle rendered (kubediff sets it:
//   admission-managed-certificate.test.ts); cert-manager's (the admission-cert-manager component) names
//   the Secret the pods mount and serve, and its names follow the overlay's namespace and suffix;
// - installed on a real API server with nothing behind it (no kubediff, no Service), the chart's webhook
//   lets every write through: failurePolicy Ignore, as the API server's own metrics show.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { needsSharedEtcd, startAdmissionApiserver } from '../helpers/admission-apiserver.ts';
import {
  applyObjects,
  deployOverlay,
  expandedArgs,
  HELM_CHART,
  helm,
  helmDryRun,
  kubectl,
  type Overlay,
  type OverlayOptions,
  serverDryRun,
} from '../helpers/deploy.ts';
import { adminClient, KubeAdmin, type KubeObject, uniqueName } from '../helpers/kube-admin.ts';
import { parseMetrics } from '../helpers/metrics.ts';
import { nonEmpty } from '../helpers/non-empty.ts';

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
/** The ingress rules of every NetworkPolicy rendered (they add up). */
const policyRules = (objects: readonly Manifest[]) =>
  objects
    .filter((object) => object.kind === 'NetworkPolicy')
    .flatMap((policy) => policy.spec.ingress as Manifest[]);
/** Where the control plane calls from, in these tests. */
const CONTROL_PLANE = [{ ipBlock: { cidr: '172.16.0.0/28' } }];
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

/**
 * The certificate kubediff manages: its arguments (as the kubelet expands them) name this install's own
 * Service, and its own Secret and webhook configuration, which are rendered (the Secret empty, the webhook
 * without caBundle) and which its rules let it get/update and get/patch, those alone, by name.
 */
function assertManagedCertificate(
  objects: readonly Manifest[],
  source: string,
  expected: { secret: string; service: string; webhook: string },
): void {
  const told = (flag: string) =>
    expandedArgs(objects)
      .find((arg) => arg.startsWith(`${flag}=`))
      ?.slice(flag.length + 1);
  assert.deepEqual(
    {
      secret: told('--admission-cert-secret'),
      service: told('--admission-service'),
      webhook: told('--admission-webhook-config'),
    },
    expected,
    `${source}: what kubediff is told to manage`,
  );
  const secret = objects.find(
    (object) => object.kind === 'Secret' && object.metadata.name === expected.secret,
  );
  assert.ok(secret, `${source}: the Secret ${expected.secret}`);
  assert.equal(secret.data, undefined, `${source}: applied empty (kubediff fills it)`);
  assert.ok(
    objects.some((object) => object.kind === 'Service' && object.metadata.name === expected.service),
    `${source}: the Service ${expected.service}`,
  );
  assert.deepEqual(
    webhooks(objects).map((configuration) => configuration.metadata.name),
    [expected.webhook],
    `${source}: the webhook configuration ${expected.webhook}`,
  );
  const rules = (kind: string) =>
    objects.filter((object) => object.kind === kind).flatMap((object) => object.rules as Manifest[]);
  assert.ok(
    rules('Role').some(
      (rule) =>
        rule.resources.includes('secrets') &&
        JSON.stringify(rule.resourceNames) === JSON.stringify([expected.secret]) &&
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
    /** The headless Service, and the --peers argument that names it. */
    peers: { service: string; argument: string };
    /** The certificate's arguments. */
    certificate: string[];
    /** Where the control plane may call the webhook port from (the kubediff pods are let in besides). */
    from: readonly Record<string, unknown>[];
  },
): { webhook: Manifest } {
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
      timeoutSeconds: 1,
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
      // kubediff's own namespace (by name, or by its label in kustomize) and kube-system never wait on it.
      namespaceSelector: {
        matchExpressions: expected.namespaceByName
          ? [
              {
                key: 'kubernetes.io/metadata.name',
                operator: 'NotIn',
                values: [expected.namespace, 'kube-system'],
              },
              { key: 'who.kubediff.io/skip', operator: 'DoesNotExist' },
            ]
          : [
              { key: 'who.kubediff.io/skip', operator: 'DoesNotExist' },
              { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['kube-system'] },
            ],
      },
      matchConditions: ['not-dry-run', 'not-high-churn', 'not-a-review', 'secrets'],
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
    const selector = Object.entries((selecting.spec.selector ?? {}) as Record<string, string>);
    for (const [key, value] of nonEmpty(
      selector,
      `${source}: labels of ${selecting.metadata.name}'s selector`,
    ))
      assert.equal(podLabels[key], value, `${source}: ${selecting.metadata.name} selects the pods (${key})`);
  }
  assert.deepEqual(
    [
      '--admission-listen=:9443',
      ...expected.certificate.filter((arg) => arg.startsWith('--admission')),
      '--admission-allow-unauthenticated',
      expected.peers.argument,
    ].sort(),
    [...argsOf(objects, '--admission'), ...argsOf(objects, '--peers')].sort(),
    `${source}: the arguments`,
  );
  const main = container(objects);
  // kustomize names the headless Service through a variable, which a name suffix renames too.
  const peersService = main.env.find((entry: { name: string }) => entry.name === 'PEERS_SERVICE');
  if (peersService) assert.equal(peersService.value, expected.peers.service, `${source}: PEERS_SERVICE`);
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
  assert.ok(
    !podSpec(objects).volumes.some((volume: { name: string }) => volume.name === 'admission-tls'),
    `${source}: no certificate volume`,
  );
  // The webhook port: from where the control plane calls, and from the other replicas.
  const rules = policyRules(objects).filter((entry) => entry.ports?.[0]?.port === 9443);
  assert.deepEqual(
    rules.flatMap((rule) => rule.from ?? [{ anywhere: true }]),
    [...expected.from, { podSelector: { matchLabels: podSpecLabels(objects) } }],
    `${source}: who may reach the webhook port`,
  );
  return { webhook };
}

describe('the admission webhook in deploy/ and the chart', () => {
  let namespace: string;
  let kubeconfig: string;
  const overlays: Overlay[] = [];
  const overlay = async (components: string[], options: OverlayOptions = {}) => {
    const made = await deployOverlay(namespace, `-${uniqueName('o').slice(2)}`, {
      components,
      ...(components.includes('admission') ? { admissionFrom: CONTROL_PLANE } : {}),
      ...options,
    });
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
    assertAdmission(objects, 'deploy/components/admission', {
      namespace,
      namespaceByName: false,
      service: `kubediff-admission${made.suffix}`,
      peers: {
        service: `kubediff-peers${made.suffix}`,
        argument: '--peers=$(PEERS_SERVICE).$(POD_NAMESPACE).svc:9443',
      },
      // The names come through variables, which the overlay's suffix renames with the objects.
      certificate: [
        '--admission-cert-secret=$(ADMISSION_CERT_SECRET)',
        '--admission-service=$(ADMISSION_SERVICE)',
        '--admission-webhook-config=$(ADMISSION_WEBHOOK_CONFIG)',
      ],
      from: CONTROL_PLANE,
    });
    assertManagedCertificate(objects, 'deploy/components/admission-managed-certificate', {
      secret: `kubediff-admission-certificate${made.suffix}`,
      service: `kubediff-admission${made.suffix}`,
      webhook: `kubediff-who${made.suffix}`,
    });
    // Without the control plane's addresses (reviews are not authenticated): the build stops, naming them.
    const unnamed = await overlay(['admission'], { admissionFrom: undefined });
    const refused = await kubectl(['kustomize', unnamed.dir]);
    assert.notEqual(refused.code, 0);
    assert.match(
      refused.stderr,
      /nothing selected by AdmissionSources\.\[noVer\]\.kubediff\.io\/kubediff-admission-from/,
    );
    // cert-manager's kinds are not served by the test cluster: rendered, not dry-run.
    const withCertManager = await overlay(['admission', 'admission-cert-manager'], {
      transformers: ['admission-cert-manager/names'],
    });
    const rendered = await kubectl(['kustomize', withCertManager.dir]);
    assert.equal(rendered.code, 0, rendered.stderr);
    const documents = parseAllDocuments(rendered.stdout).map((document) => document.toJS() as Manifest);
    const certificate = documents.find(
      (object) =>
        object.kind === 'Certificate' &&
        object.metadata.name === `kubediff-admission${withCertManager.suffix}`,
    );
    assert.equal(certificate?.spec.secretName, 'kubediff-admission-tls', 'the Secret the pods mount');
    // The names follow the overlay's namespace and suffix (names/ runs after kustomize renamed them): what
    // the API server calls, what cert-manager's cainjector reads, the issuers the certificates name.
    const service = `kubediff-admission${withCertManager.suffix}.${namespace}.svc`;
    assert.deepEqual(certificate?.spec.dnsNames, [service, `${service}.cluster.local`]);
    const webhook = documents.find((object) => object.kind === 'ValidatingWebhookConfiguration');
    assert.equal(
      webhook?.metadata.annotations?.['cert-manager.io/inject-ca-from'],
      `${namespace}/kubediff-admission${withCertManager.suffix}`,
    );
    const issuers = new Set(
      documents.filter((object) => object.kind === 'Issuer').map((object) => object.metadata.name),
    );
    for (const each of documents.filter((object) => object.kind === 'Certificate'))
      assert.ok(issuers.has(each.spec.issuerRef.name), `${each.metadata.name} names an Issuer rendered`);
    // The pods mount that Secret and serve its files (no certificate of kubediff's own).
    assert.deepEqual(
      argsOf(documents, '--admission-'),
      [
        '--admission-listen=:9443',
        '--admission-allow-unauthenticated',
        '--admission-cert=/etc/kubediff-admission/tls.crt',
        '--admission-key=/etc/kubediff-admission/tls.key',
      ],
      'cert-manager: the arguments',
    );
    assert.deepEqual(
      container(documents).volumeMounts.find((mount: { name: string }) => mount.name === 'admission-tls'),
      { name: 'admission-tls', mountPath: '/etc/kubediff-admission', readOnly: true },
    );
    const volume = podSpec(documents).volumes.find(
      (entry: { name: string }) => entry.name === 'admission-tls',
    );
    assert.equal(volume?.secret.secretName, certificate?.spec.secretName, 'the Secret cert-manager writes');
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
    const { webhook } = assertAdmission(objects, 'Helm', {
      namespace,
      namespaceByName: true,
      service,
      peers: {
        service: `${release}-kubediff-peers`,
        argument: `--peers=${release}-kubediff-peers.$(POD_NAMESPACE).svc:9443`,
      },
      certificate: [
        `--admission-cert-secret=${release}-kubediff-admission-certificate`,
        `--admission-service=${service}`,
        `--admission-webhook-config=${release}-kubediff-${namespace}-who`,
      ],
      from: CONTROL_PLANE,
    });
    assertManagedCertificate(objects, 'Helm', {
      secret: `${release}-kubediff-admission-certificate`,
      service,
      webhook: `${release}-kubediff-${namespace}-who`,
    });
    assert.equal(webhook.clientConfig.caBundle, undefined);
    // Without admission.from while reviews are not authenticated: refused, saying what to set.
    const open = await helm(['template', release, HELM_CHART, '--set', 'admission.enabled=true']);
    assert.notEqual(open.code, 0);
    assert.match(
      open.stderr,
      /admission\.from is empty: with admission\.allowUnauthenticated \(what EKS, GKE and AKS need\), any pod could post reviews to the webhook port\. Set admission\.from to where your control plane calls webhooks from \(docs\/who\.md, "The managed clouds"\)/,
    );
    // Every review authenticated (a control plane of your own): from anywhere.
    const [authenticated] = (await helmDryRun(kubeconfig, release, namespace, [
      '--set',
      'admission.enabled=true',
      '--set',
      'admission.allowUnauthenticated=false',
      '--show-only',
      'templates/networkpolicy.yaml',
    ])) as Manifest[];
    assert.deepEqual(
      authenticated?.spec.ingress.find((rule: Manifest) => rule.ports[0].port === 9443),
      { ports: [{ protocol: 'TCP', port: 9443 }] },
    );
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
      '--set',
      'admission.from[0].ipBlock.cidr=172.16.0.0/28',
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
      '--set',
      'admission.from[0].ipBlock.cidr=172.16.0.0/28',
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
    // An update or delete starts from the API server's watch cache's copy of the object, and calls
    // the webhook again when that copy was stale (etcd refuses the write, the server reads the object
    // and tries once more): a real server may call a webhook twice for one write. Each write below
    // waits until the cache holds the one before it (a GET at its resourceVersion is answered from
    // the cache once it is that fresh), so that each is sent exactly once on any machine.
    const path = `/api/v1/namespaces/${other}/configmaps/goes-through`;
    const cached = (written: KubeObject) =>
      side.send('GET', path, { query: { resourceVersion: written.metadata.resourceVersion } });
    const before = await failedOpen();
    await cached(
      await side.create(`/api/v1/namespaces/${other}/configmaps`, {
        metadata: { name: 'goes-through' },
        data: { a: '1' },
      }),
    );
    await cached(await side.patch(path, { data: { a: '2' } }));
    await side.delete(path);
    assert.equal((await failedOpen()) - before, 3, 'each write was sent, failed and went through');
  });
});

function podSpecLabels(objects: readonly Manifest[]): Record<string, string> {
  const labels = objects.find((object) => object.kind === 'Deployment')?.spec.selector.matchLabels;
  return labels as Record<string, string>;
}
