// The admission webhook in deploy/ and the Helm chart (docs/who.md), rendered and checked by the real API
// server (a server-side dry run), then installed for real:
// - off by default: nothing of it is rendered, from kustomize or Helm;
// - the kustomize component (deploy/components/admission) and Helm's admission.enabled render the same
//   webhook, as the API server stores it: failurePolicy Ignore, sideEffects None, a short timeout,
//   matchPolicy Equivalent, every resource and */scale, kubediff's namespace and kube-system, dry runs,
//   leases, events, endpoints and review APIs excluded, Secrets only while watched (its CEL compiled by the
//   server); the Service it calls, the headless Service of the peers, the arguments, the Secret's mount;
// - who may reach the webhook port: the control plane's addresses the user names (kustomize's
//   AdmissionSources, Helm's admission.from) and the other replicas; without them the build stops and
//   says what to set, while reviews are unauthenticated;
// - the certificate: cert-manager's (the admission-cert-manager component, Helm certificate=certManager)
//   names the Secret the pods mount, and its names follow the overlay's namespace and suffix; Helm's own (certificate=generate) is signed by the caBundle's CA for
//   the Service's name, and kubediff serves the webhook with the chart's arguments and that Secret's files;
// - installed on a real API server with nothing behind it (no kubediff, no Service), the chart's webhook
//   lets every write through: failurePolicy Ignore, as the API server's own metrics show.
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Agent, request } from 'undici';
import { parseAllDocuments } from 'yaml';
import { needsSharedEtcd, startAdmissionApiserver } from '../helpers/admission-apiserver.ts';
import { runKubediff, WATCHING, watchArgs } from '../helpers/cli.ts';
import {
  applyObjects,
  deployOverlay,
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
    secret: string;
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
    [...argsOf(objects, '--admission'), ...argsOf(objects, '--peers')],
    [
      '--admission-listen=:9443',
      '--admission-cert=/etc/kubediff-admission/tls.crt',
      '--admission-key=/etc/kubediff-admission/tls.key',
      '--admission-allow-unauthenticated',
      expected.peers.argument,
    ],
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
  assert.deepEqual(
    main.volumeMounts.find((mount: { name: string }) => mount.name === 'admission-tls'),
    { name: 'admission-tls', mountPath: '/etc/kubediff-admission', readOnly: true },
  );
  const volume = podSpec(objects).volumes.find((entry: { name: string }) => entry.name === 'admission-tls');
  assert.equal(volume?.secret.secretName, expected.secret, `${source}: the Secret`);
  // The webhook port: from where the control plane calls, and from the other replicas.
  const podLabels_ = podSpecLabels(objects);
  const rules = policyRules(objects).filter((entry) => entry.ports?.[0]?.port === 9443);
  assert.deepEqual(
    rules.flatMap((rule) => rule.from ?? [{ anywhere: true }]),
    [...expected.from, { podSelector: { matchLabels: podLabels_ } }],
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

  test('the admission component, as the API server stores it; with cert-manager, the Secret the pods mount', async () => {
    const made = await overlay(['admission']);
    const objects = (await serverDryRun(kubeconfig, made)) as Manifest[];
    assertAdmission(objects, 'deploy/components/admission', {
      namespace,
      namespaceByName: false,
      service: `kubediff-admission${made.suffix}`,
      peers: {
        service: `kubediff-peers${made.suffix}`,
        argument: '--peers=$(PEERS_SERVICE).$(POD_NAMESPACE).svc:9443',
      },
      secret: 'kubediff-admission-tls',
      from: CONTROL_PLANE,
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
  });

  test("Helm admission.enabled: the same, and a certificate the caBundle's CA signed for the Service's name", async () => {
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
      secret: `${release}-kubediff-admission-tls`,
      from: CONTROL_PLANE,
    });
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
    const secret = objects.find(
      (object) => object.kind === 'Secret' && object.metadata.name === `${release}-kubediff-admission-tls`,
    );
    assert.ok(secret, 'the generated Secret');
    const pem = (key: string) => Buffer.from(secret.data[key], 'base64').toString('utf8');
    const ca = new X509Certificate(pem('ca.crt'));
    const cert = new X509Certificate(pem('tls.crt'));
    assert.equal(Buffer.from(webhook.clientConfig.caBundle, 'base64').toString('utf8'), pem('ca.crt'));
    assert.ok(cert.verify(ca.publicKey), 'signed by the CA of the caBundle');
    assert.equal(cert.checkHost(`${service}.${namespace}.svc`), `${service}.${namespace}.svc`);
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

  test("kubediff serves the webhook with the chart's arguments and the Secret it made", async (t) => {
    const release = uniqueName('kd');
    const objects = (await helmDryRun(kubeconfig, release, namespace, [
      '--set',
      'admission.enabled=true',
      '--set',
      'admission.from[0].ipBlock.cidr=172.16.0.0/28',
    ])) as Manifest[];
    const secret = objects.find(
      (object) => object.kind === 'Secret' && object.metadata.name.endsWith('-admission-tls'),
    );
    const mounted = await mkdtemp(path.join(tmpdir(), 'kubediff-admission-tls-'));
    t.after(() => rm(mounted, { recursive: true, force: true }));
    for (const key of ['tls.crt', 'tls.key', 'ca.crt'])
      await writeFile(path.join(mounted, key), Buffer.from(secret?.data[key], 'base64'));
    // One replica here: no --peers (it names the headless Service).
    const admissionArgs = argsOf(objects, '--admission').map((arg) =>
      arg === '--admission-listen=:9443'
        ? '--admission-listen=127.0.0.1:0'
        : arg.replace('/etc/kubediff-admission/', `${mounted}/`),
    );
    const kd = runKubediff(watchArgs(namespace, ['configmaps'], ...admissionArgs), { timeoutMs: 30_000 });
    t.after(() => kd.kill());
    const [, address] = await kd.waitForStderr(
      /receiving admission reviews on https:\/\/(\S+) \(unauthenticated/,
    );
    await kd.waitForStderr(WATCHING);
    const agent = new Agent({
      connect: {
        ca: Buffer.from(secret?.data['ca.crt'], 'base64').toString(),
        servername: `${release}-kubediff-admission.${namespace}.svc`,
      },
    });
    t.after(() => agent.close());
    const response = await request(`https://${address}/review`, {
      method: 'POST',
      dispatcher: agent,
      body: JSON.stringify({
        apiVersion: 'admission.k8s.io/v1',
        kind: 'AdmissionReview',
        request: { uid: 'u-1', operation: 'CONNECT', dryRun: false },
      }),
    });
    assert.deepEqual(await response.body.json(), {
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: { uid: 'u-1', allowed: true },
    });
    assert.equal((await kd.stop('SIGTERM')).code, 0);
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
