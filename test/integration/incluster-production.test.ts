// What a platform engineer checks before installing (docs/deploy.md, "Production checklist"), on deploy/
// (kustomize, with its components) and the Helm chart, as the API server stores them (server-side dry run):
// - names per install: two installs in two namespaces (Helm releases of the same name; kustomize overlays
//   with their own suffix) share no cluster-scoped object, and every reference stays within its install
//   (the bindings' roles and subjects, the webhook's Service, the Lease the Role names, the peers' Service,
//   and the managed certificate's Secret, Service and webhook configuration, as kubediff's arguments name
//   them and as its rules do: each install manages its own, never the other's);
// - drains and rollouts: the PodDisruptionBudget lets an unready replica go (AlwaysAllow), the startup probe
//   waits for the initial sync (/startupz), the replicas spread over zones;
// - the pod itself meets Pod Security "restricted" where it is enforced (a Pod of the template, dry-run
//   into a namespace that enforces it: a Deployment's dry run does not check its pods), and the chart's notes
//   say when the namespace it is installed in does not enforce it (the chart makes no namespace);
// - GitOps: two `helm template` renders are the same (default values; the webhooks with cert-manager's
//   certificate and a ServiceMonitor; the managed certificate, the default: test/repo/deploy-renders.test.ts);
// - the chart declares the Kubernetes versions it needs, and renders a ServiceMonitor only when asked.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import {
  deployOverlay,
  expandedArgs,
  HELM_CHART,
  helm,
  helmDryRun,
  kubectl,
  type Overlay,
  serverDryRun,
} from '../helpers/deploy.ts';
import { adminClient, type KubeObject, uniqueName } from '../helpers/kube-admin.ts';

const admin = adminClient();

// biome-ignore lint/suspicious/noExplicitAny: rendered manifests, checked field by field
type Manifest = KubeObject & Record<string, any>;

const CONTROL_PLANE = [{ ipBlock: { cidr: '172.16.0.0/28' } }];
const HELM_WEBHOOKS = [
  '--set',
  'admission.enabled=true',
  '--set',
  'admission.from[0].ipBlock.cidr=172.16.0.0/28',
  '--set',
  'audit.enabled=true',
];
const CLUSTER_SCOPED = new Set(['ClusterRole', 'ClusterRoleBinding', 'ValidatingWebhookConfiguration']);

const ofKind = (objects: readonly Manifest[], kind: string): Manifest => {
  const found = objects.find((object) => object.kind === kind);
  assert.ok(found, `a ${kind} is rendered`);
  return found;
};
const clusterScopedNames = (objects: readonly Manifest[]) =>
  objects
    .filter((object) => CLUSTER_SCOPED.has(object.kind ?? ''))
    .map((object) => `${object.kind}/${object.metadata.name}`);
/** Every label of `selector` is one of the pods'. */
const selects = (selector: Record<string, string>, labels: Record<string, string>) =>
  Object.entries(selector).every(([key, value]) => labels[key] === value);

/** The cluster-scoped objects of one install name nothing of another: each reference stays within it. */
function assertSelfContained(objects: readonly Manifest[], namespace: string, source: string): void {
  const named = (kind: string) =>
    new Set(objects.filter((object) => object.kind === kind).map((o) => o.metadata.name));
  for (const binding of objects.filter((object) => object.kind?.endsWith('RoleBinding'))) {
    const bound = binding.roleRef.kind as string;
    assert.ok(
      named(bound).has(binding.roleRef.name),
      `${source}: ${binding.metadata.name} names its own ${bound}`,
    );
    assert.deepEqual(
      binding.subjects.map((subject: Manifest) => [
        subject.kind,
        subject.namespace ?? namespace,
        named('ServiceAccount').has(subject.name),
      ]),
      [['ServiceAccount', namespace, true]],
      `${source}: ${binding.metadata.name}'s subject is its own ServiceAccount`,
    );
  }
  const webhook = ofKind(objects, 'ValidatingWebhookConfiguration').webhooks[0];
  assert.equal(
    webhook.clientConfig.service.namespace,
    namespace,
    `${source}: the webhook calls its own namespace`,
  );
  assert.ok(
    named('Service').has(webhook.clientConfig.service.name),
    `${source}: the webhook calls its own Service`,
  );
  // The Lease is named after the Deployment (--leader-election-id, or $POD_NAME's Deployment): the Role
  // lets the replicas renew that one.
  const deployment = ofKind(objects, 'Deployment');
  const args = deployment.spec.template.spec.containers[0].args as string[];
  const lease =
    args.find((arg) => arg.startsWith('--leader-election-id='))?.slice('--leader-election-id='.length) ??
    deployment.metadata.name;
  const rules = (kind: string) =>
    objects.filter((object) => object.kind === kind).flatMap((object) => object.rules as Manifest[]);
  const mayUpdate = (kind: string, resource: string, name: string, verb: string) =>
    rules(kind).some(
      (rule) =>
        rule.resources.includes(resource) && rule.resourceNames?.includes(name) && rule.verbs.includes(verb),
    );
  assert.ok(
    mayUpdate('Role', 'leases', lease, 'update'),
    `${source}: the Role lets the replicas renew the Lease ${lease}`,
  );
  // The certificate kubediff manages: the Secret, Service and webhook configuration it is told (arguments as
  // the kubelet expands them) are this install's, and those its rules let it update.
  const told = (flag: string) =>
    expandedArgs(objects)
      .find((arg) => arg.startsWith(`${flag}=`))
      ?.slice(flag.length + 1);
  const secret = told('--admission-cert-secret');
  const service = told('--admission-service');
  const configuration = told('--admission-webhook-config');
  assert.ok(
    secret && named('Secret').has(secret),
    `${source}: kubediff keeps its certificate in its own Secret`,
  );
  assert.ok(
    service && service === webhook.clientConfig.service.name,
    `${source}: kubediff makes the certificate for its own webhook's Service`,
  );
  assert.ok(
    configuration && named('ValidatingWebhookConfiguration').has(configuration),
    `${source}: kubediff sets the caBundle of its own webhook configuration`,
  );
  assert.ok(mayUpdate('Role', 'secrets', secret, 'update'), `${source}: its Role lets it update ${secret}`);
  assert.ok(
    mayUpdate('ClusterRole', 'validatingwebhookconfigurations', configuration, 'patch'),
    `${source}: its ClusterRole lets it patch ${configuration}`,
  );
}

describe('what a platform engineer checks before installing', () => {
  let namespaces: [string, string];
  let kubeconfig: string;
  const overlays: Overlay[] = [];

  before(async () => {
    namespaces = [await admin.createNamespace('prod-a'), await admin.createNamespace('prod-b')];
    kubeconfig = await admin.writeKubeconfig();
  });
  after(async () => {
    for (const made of overlays) await made.remove();
    for (const namespace of namespaces) await admin.deleteNamespace(namespace).catch(() => {});
  });

  const overlay = async (namespace: string, components: string[]) => {
    const made = await deployOverlay(namespace, `-${uniqueName('p').slice(2)}`, {
      components,
      ...(components.includes('admission') ? { admissionFrom: CONTROL_PLANE } : {}),
    });
    overlays.push(made);
    return made;
  };

  test('two installs in two namespaces share no cluster-scoped object (Helm, one release name; kustomize, a suffix each)', async () => {
    const helmInstalls = await Promise.all(
      namespaces.map(async (namespace) => ({
        namespace,
        objects: (await helmDryRun(kubeconfig, 'kubediff', namespace, HELM_WEBHOOKS)) as Manifest[],
      })),
    );
    const kustomizeInstalls = await Promise.all(
      namespaces.map(async (namespace) => ({
        namespace,
        objects: (await serverDryRun(
          kubeconfig,
          await overlay(namespace, ['admission', 'admission-managed-certificate', 'audit']),
        )) as Manifest[],
      })),
    );
    for (const [source, installs] of [
      ['Helm', helmInstalls],
      ['kustomize', kustomizeInstalls],
    ] as const) {
      const [first, second] = installs.map(({ objects }) => clusterScopedNames(objects));
      // read-all and its binding, the webhook, and the managed certificate's ClusterRole and binding.
      assert.equal(first?.length, 5, `${source}: ${first?.join(', ')}`);
      assert.deepEqual(
        first?.filter((name) => second?.includes(name)),
        [],
        `${source}: no cluster-scoped name in common`,
      );
      for (const { namespace, objects } of installs)
        assertSelfContained(objects, namespace, `${source} in ${namespace}`);
    }
    // Helm's names carry the release's namespace, so the same release name can be installed twice.
    for (const { namespace, objects } of helmInstalls) {
      for (const name of clusterScopedNames(objects)) assert.ok(name.includes(`-${namespace}-`), name);
    }
    // kustomize's --peers names the headless Service through PEERS_SERVICE, renamed with it.
    for (const { objects } of kustomizeInstalls) {
      const env = ofKind(objects, 'Deployment').spec.template.spec.containers[0].env as Manifest[];
      const peers = env.find((entry) => entry.name === 'PEERS_SERVICE')?.value;
      assert.ok(
        objects.some(
          (object) =>
            object.kind === 'Service' && object.metadata.name === peers && object.spec.clusterIP === 'None',
        ),
        `PEERS_SERVICE=${peers} is the headless Service`,
      );
    }
  });

  test('drains and rollouts: an unready replica may always be evicted, the startup probe waits for the sync, replicas spread over zones', async () => {
    const [namespace] = namespaces;
    for (const [source, objects] of [
      ['Helm', (await helmDryRun(kubeconfig, uniqueName('kd'), namespace)) as Manifest[]],
      ['kustomize', (await serverDryRun(kubeconfig, await overlay(namespace, []))) as Manifest[]],
    ] as const) {
      const budget = ofKind(objects, 'PodDisruptionBudget');
      assert.deepEqual(
        { minAvailable: budget.spec.minAvailable, policy: budget.spec.unhealthyPodEvictionPolicy },
        { minAvailable: 1, policy: 'AlwaysAllow' },
        `${source}: the PodDisruptionBudget`,
      );
      const deployment = ofKind(objects, 'Deployment');
      const pod = deployment.spec.template;
      const container = pod.spec.containers[0];
      assert.deepEqual(
        [container.startupProbe, container.livenessProbe, container.readinessProbe].map(
          (probe) => probe.httpGet.path,
        ),
        ['/startupz', '/healthz', '/readyz'],
        `${source}: the probes`,
      );
      assert.ok(
        container.startupProbe.periodSeconds * container.startupProbe.failureThreshold >= 600,
        `${source}: 10 minutes for the initial sync`,
      );
      assert.deepEqual(deployment.spec.strategy.rollingUpdate, { maxSurge: 1, maxUnavailable: 0 });
      const [spread, ...more] = pod.spec.topologySpreadConstraints as Manifest[];
      assert.deepEqual(more, []);
      assert.deepEqual(
        {
          topologyKey: spread?.topologyKey,
          whenUnsatisfiable: spread?.whenUnsatisfiable,
          maxSkew: spread?.maxSkew,
          matchLabelKeys: spread?.matchLabelKeys,
        },
        {
          topologyKey: 'topology.kubernetes.io/zone',
          whenUnsatisfiable: 'ScheduleAnyway',
          maxSkew: 1,
          matchLabelKeys: ['pod-template-hash'],
        },
        `${source}: spread over zones`,
      );
      assert.ok(
        selects(spread?.labelSelector.matchLabels, pod.metadata.labels),
        `${source}: the spread counts these pods`,
      );
      assert.ok(
        selects(budget.spec.selector.matchLabels, pod.metadata.labels),
        `${source}: the budget counts these pods`,
      );
    }
  });

  test('the pod meets Pod Security "restricted" where it is enforced', async () => {
    const restricted = await admin.createNamespace('restricted', {
      'pod-security.kubernetes.io/enforce': 'restricted',
      'pod-security.kubernetes.io/enforce-version': 'latest',
    });
    try {
      const [namespace] = namespaces;
      const sources = [
        ['Helm', (await helmDryRun(kubeconfig, uniqueName('kd'), namespace, HELM_WEBHOOKS)) as Manifest[]],
        [
          'kustomize',
          (await serverDryRun(
            kubeconfig,
            await overlay(namespace, ['admission', 'audit', 'no-secrets']),
          )) as Manifest[],
        ],
      ] as const;
      for (const [source, objects] of sources) {
        const template = ofKind(objects, 'Deployment').spec.template;
        const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'kubediff' }, spec: template.spec };
        const result = await kubectl(
          ['--kubeconfig', kubeconfig, 'apply', '--dry-run=server', '-n', restricted, '-f', '-'],
          { input: JSON.stringify(pod) },
        );
        assert.equal(result.code, 0, `${source}: ${result.stderr}`);
        // The check can fail: the same pod with a privilege escalation is refused.
        const escalating = structuredClone(pod);
        escalating.spec.containers[0].securityContext.allowPrivilegeEscalation = true;
        const refused = await kubectl(
          ['--kubeconfig', kubeconfig, 'apply', '--dry-run=server', '-n', restricted, '-f', '-'],
          { input: JSON.stringify(escalating) },
        );
        assert.match(
          refused.stderr,
          /violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false/,
        );
      }
    } finally {
      await admin.deleteNamespace(restricted).catch(() => {});
    }
  });

  test("the chart's notes say when the namespace does not enforce Pod Security restricted", async () => {
    const notes = async (namespace: string) => {
      const result = await helm([
        'install',
        'kd',
        HELM_CHART,
        '--namespace',
        namespace,
        '--kubeconfig',
        kubeconfig,
        '--dry-run=server',
      ]);
      assert.equal(result.code, 0, result.stderr);
      return result.stdout.slice(result.stdout.indexOf('NOTES:'));
    };
    const [plain] = namespaces;
    assert.match(
      await notes(plain),
      new RegExp(
        `The namespace ${plain} does not enforce the Pod Security Standard "restricted"[^]*kubectl label namespace ${plain} pod-security\\.kubernetes\\.io/enforce=restricted`,
      ),
    );
    const restricted = await admin.createNamespace('labelled', {
      'pod-security.kubernetes.io/enforce': 'restricted',
    });
    try {
      assert.doesNotMatch(await notes(restricted), /Pod Security/);
    } finally {
      await admin.deleteNamespace(restricted).catch(() => {});
    }
  });

  test('two `helm template` renders are the same (Argo CD renders with it)', async () => {
    for (const values of [
      [],
      [
        ...HELM_WEBHOOKS,
        '--set',
        'admission.certificate=certManager',
        '--set',
        'serviceMonitor.enabled=true',
      ],
    ]) {
      const render = () => helm(['template', 'kd', HELM_CHART, '--namespace', 'kubediff', ...values]);
      const [first, second] = [await render(), await render()];
      assert.equal(first.code, 0, first.stderr);
      assert.equal(second.stdout, first.stdout, `helm template ${values.join(' ')}`);
    }
  });

  test('the chart says which Kubernetes it needs (matchConditions: 1.28)', async () => {
    const old = await helm(['template', 'kd', HELM_CHART, '--kube-version', '1.27.9']);
    assert.notEqual(old.code, 0);
    assert.match(
      old.stderr,
      /chart requires kubeVersion: >=1\.28\.0-0 which is incompatible with Kubernetes v1\.27\.9/,
    );
    const supported = await helm(['template', 'kd', HELM_CHART, '--kube-version', '1.28.0']);
    assert.equal(supported.code, 0, supported.stderr);
  });

  test('a ServiceMonitor only when asked, for the metrics Service', async () => {
    const render = async (...values: string[]) => {
      const result = await helm(['template', 'kd', HELM_CHART, '--namespace', 'observed', ...values]);
      assert.equal(result.code, 0, result.stderr);
      return parseAllDocuments(result.stdout).map((document) => document.toJS() as Manifest);
    };
    assert.deepEqual(
      (await render()).filter((object) => object.kind === 'ServiceMonitor'),
      [],
      'none by default: its CRD may not exist',
    );
    // Rendered, not dry-run: the test cluster serves no monitoring.coreos.com.
    const objects = await render(
      '--set',
      'serviceMonitor.enabled=true',
      '--set',
      'serviceMonitor.labels.release=prom',
    );
    const monitor = ofKind(objects, 'ServiceMonitor');
    const service = objects.find(
      (object) => object.kind === 'Service' && object.metadata.name === 'kd-kubediff-metrics',
    );
    assert.ok(service, 'the metrics Service');
    assert.equal(monitor.apiVersion, 'monitoring.coreos.com/v1');
    assert.equal(
      monitor.metadata.labels?.release,
      'prom',
      "what the Prometheus's serviceMonitorSelector selects",
    );
    assert.ok(
      selects(monitor.spec.selector.matchLabels, service.metadata.labels ?? {}),
      'it selects the metrics Service',
    );
    assert.deepEqual(monitor.spec.namespaceSelector, { matchNames: ['observed'] });
    assert.deepEqual(
      monitor.spec.endpoints.map((endpoint: Manifest) => [endpoint.port, endpoint.path]),
      [[service.spec.ports[0].name, '/metrics']],
    );
  });
});
