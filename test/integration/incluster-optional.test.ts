// The optional parts of deploy/ and the Helm chart, rendered through a server-side dry run (docs/deploy.md):
// - the audit webhook (deploy/components/audit, Helm audit.enabled; docs/audit.md): off by default, nothing of it is
//   rendered; on, the container port, the arguments, the Secret's mount, the token variable, a Service for
//   the port and a NetworkPolicy ingress rule for it, the same from kustomize and Helm (Helm's audit.from
//   and audit.service.clusterIP reach the policy and the Service);
//   and kubediff, run with the chart's audit arguments and a folder laid out like the mounted Secret, serves
//   the webhook: the API server's client certificate is accepted, a request without one refused;
// - PostgreSQL state (deploy/components/postgres): the leader-elected pair is kept (two replicas).
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Agent, request } from 'undici';
import { runKubediff, WATCHING, watchArgs } from '../helpers/cli.ts';
import {
  deployOverlay,
  HELM_CHART,
  helm,
  helmDryRun,
  type Overlay,
  serverDryRun,
} from '../helpers/deploy.ts';
import { adminClient, type KubeObject, uniqueName } from '../helpers/kube-admin.ts';
import { nonEmpty } from '../helpers/non-empty.ts';
import { makeTestPki } from '../helpers/pki.ts';

const admin = adminClient();

// biome-ignore lint/suspicious/noExplicitAny: rendered manifests, checked field by field
type Manifest = KubeObject & Record<string, any>;

const AUDIT_ARGS = [
  '--audit-listen=:8443',
  '--audit-cert=/etc/kubediff-audit/tls.crt',
  '--audit-key=/etc/kubediff-audit/tls.key',
  '--audit-client-ca=/etc/kubediff-audit/ca.crt',
  // Pinned by default: the API server's client identity, not any certificate its CA signed.
  '--audit-client-name=kube-apiserver-audit',
];

const container = (objects: readonly Manifest[]) =>
  objects.find((object) => object.kind === 'Deployment')?.spec.template.spec.containers[0];
const podSpec = (objects: readonly Manifest[]) =>
  objects.find((object) => object.kind === 'Deployment')?.spec.template.spec;
const auditServices = (objects: readonly Manifest[]) =>
  objects.filter(
    (object) =>
      object.kind === 'Service' && object.spec.ports.some((port: { name: string }) => port.name === 'audit'),
  );
const policyRules = (objects: readonly Manifest[]) =>
  objects.find((object) => object.kind === 'NetworkPolicy')?.spec.ingress as Manifest[];

/** Nothing of the audit webhook is rendered. */
function assertNoAudit(objects: readonly Manifest[], source: string): void {
  const main = container(objects);
  assert.deepEqual(
    main.args.filter((arg: string) => arg.startsWith('--audit')),
    [],
    `${source}: no --audit argument`,
  );
  assert.deepEqual(
    main.ports.map((port: { name: string }) => port.name),
    ['http'],
    `${source}: only the http port`,
  );
  assert.ok(!main.env.some((entry: { name: string }) => entry.name === 'KUBEDIFF_AUDIT_TOKEN'), source);
  assert.ok(
    !podSpec(objects).volumes.some((volume: { name: string }) => volume.name === 'audit-tls'),
    source,
  );
  assert.ok(!main.volumeMounts.some((mount: { name: string }) => mount.name === 'audit-tls'), source);
  assert.deepEqual(auditServices(objects), [], `${source}: no audit Service`);
  assert.deepEqual(
    policyRules(objects).map((rule) => rule.ports),
    [[{ protocol: 'TCP', port: 8080 }]],
    `${source}: the policy admits the metrics port only`,
  );
}

/** The audit webhook's port, arguments, Secret mount, token, Service and policy rule. */
function assertAudit(objects: readonly Manifest[], source: string): { service: Manifest; rule: Manifest } {
  const main = container(objects);
  assert.deepEqual(
    main.args.filter((arg: string) => arg.startsWith('--audit')),
    AUDIT_ARGS,
    `${source}: the arguments`,
  );
  assert.deepEqual(
    main.ports.find((port: { name: string }) => port.name === 'audit'),
    { name: 'audit', containerPort: 8443, protocol: 'TCP' },
    `${source}: the container port`,
  );
  assert.deepEqual(
    main.volumeMounts.find((mount: { name: string }) => mount.name === 'audit-tls'),
    { name: 'audit-tls', mountPath: '/etc/kubediff-audit', readOnly: true },
    `${source}: the mount`,
  );
  const volume = podSpec(objects).volumes.find((entry: { name: string }) => entry.name === 'audit-tls');
  assert.equal(volume?.secret.secretName, 'kubediff-audit-tls', `${source}: the Secret`);
  const token = main.env.find((entry: { name: string }) => entry.name === 'KUBEDIFF_AUDIT_TOKEN');
  assert.equal(token?.valueFrom.secretKeyRef.key, 'audit-token', `${source}: the token`);
  assert.equal(token?.valueFrom.secretKeyRef.optional, true, `${source}: the token is optional`);
  const [service, ...others] = auditServices(objects);
  assert.ok(service, `${source}: an audit Service`);
  assert.deepEqual(others, []);
  assert.deepEqual(
    service.spec.ports.map(({ name, port, targetPort }: Manifest) => ({ name, port, targetPort })),
    [{ name: 'audit', port: 8443, targetPort: 'audit' }],
    `${source}: the Service's port`,
  );
  // The Service selects kubediff's pods: its selector is a subset of their labels.
  const podLabels = objects.find((object) => object.kind === 'Deployment')?.spec.template.metadata.labels;
  const selector = Object.entries((service.spec.selector ?? {}) as Record<string, string>);
  for (const [key, value] of nonEmpty(selector, `${source}: labels of the Service's selector`))
    assert.equal(podLabels[key], value, `${source}: the Service selects the pods (${key})`);
  const rules = policyRules(objects);
  assert.equal(rules.length, 2, `${source}: metrics and audit rules`);
  assert.deepEqual(rules[0]?.ports, [{ protocol: 'TCP', port: 8080 }]);
  assert.deepEqual(rules[1]?.ports, [{ protocol: 'TCP', port: 8443 }], `${source}: the audit port is open`);
  return { service, rule: rules[1] as Manifest };
}

describe('optional parts of deploy/ and the chart', () => {
  let namespace: string;
  let kubeconfig: string;
  const overlays: Overlay[] = [];
  const overlay = async (components: string[]) => {
    const made = await deployOverlay(namespace, `-${uniqueName('o').slice(2)}`, { components });
    overlays.push(made);
    return (await serverDryRun(kubeconfig, made)) as Manifest[];
  };

  before(async () => {
    namespace = await admin.createNamespace('optional');
    kubeconfig = await admin.writeKubeconfig();
  });
  after(async () => {
    for (const made of overlays) await made.remove();
    await admin.deleteNamespace(namespace).catch(() => {});
  });

  test('the audit webhook is off by default, in kustomize and in Helm', async () => {
    assertNoAudit(await overlay([]), 'deploy/');
    assertNoAudit((await helmDryRun(kubeconfig, uniqueName('kd'), namespace)) as Manifest[], 'Helm');
  });

  test('the audit component: port, arguments, Secret mount, token, Service and policy rule (any source)', async () => {
    const { rule } = assertAudit(await overlay(['audit']), 'deploy/components/audit');
    assert.equal(rule.from, undefined, 'the source is cluster-specific: any, until the overlay narrows it');
  });

  test('Helm audit.enabled: the same, with the source, the ClusterIP and the client CA from the values', async () => {
    const release = uniqueName('kd');
    const objects = (await helmDryRun(kubeconfig, release, namespace, [
      '--set',
      'audit.enabled=true',
      '--set',
      'audit.from[0].ipBlock.cidr=10.0.0.0/24',
    ])) as Manifest[];
    const { service, rule } = assertAudit(objects, 'Helm');
    assert.equal(service.metadata.name, `${release}-kubediff-audit`);
    // The other replicas post their records to the audit port too (--peers).
    const pods = objects.find((object) => object.kind === 'Deployment')?.spec.selector.matchLabels;
    assert.deepEqual(rule.from, [
      { ipBlock: { cidr: '10.0.0.0/24' } },
      { podSelector: { matchLabels: pods } },
    ]);
    // A fixed ClusterIP, for an API server on the host network (rendered, not dry-run: the test cluster
    // would have to have that address free in its service range).
    const fixed = await helm([
      'template',
      release,
      HELM_CHART,
      '--set',
      'audit.enabled=true',
      '--set',
      'audit.service.clusterIP=10.96.0.50',
      '--show-only',
      'templates/service.yaml',
    ]);
    assert.equal(fixed.code, 0, fixed.stderr);
    const auditDocument = fixed.stdout.split('\n---\n').find((text) => text.includes('-kubediff-audit'));
    assert.match(auditDocument ?? '', /\n {2}clusterIP: 10\.96\.0\.50\n/);
    // Without the client CA: the token alone authenticates the API server.
    const tokenOnly = (await helmDryRun(kubeconfig, release, namespace, [
      '--set',
      'audit.enabled=true',
      '--set',
      'audit.clientCA=false',
    ])) as Manifest[];
    assert.deepEqual(
      container(tokenOnly).args.filter((arg: string) => arg.startsWith('--audit')),
      AUDIT_ARGS.slice(0, 3),
    );
    // Another name for the API server's client certificate.
    const renamed = (await helmDryRun(kubeconfig, release, namespace, [
      '--set',
      'audit.enabled=true',
      '--set',
      'audit.clientNames={apiserver-audit-client}',
    ])) as Manifest[];
    assert.deepEqual(
      container(renamed).args.filter((arg: string) => arg.startsWith('--audit-client')),
      ['--audit-client-ca=/etc/kubediff-audit/ca.crt', '--audit-client-name=apiserver-audit-client'],
    );
  });

  test("kubediff serves the audit webhook with the chart's arguments and the Secret's files", async (t) => {
    const objects = (await helmDryRun(kubeconfig, uniqueName('kd'), namespace, [
      '--set',
      'audit.enabled=true',
    ])) as Manifest[];
    // The Secret kubediff-audit-tls as mounted: tls.crt, tls.key, ca.crt in one folder. The CA signed
    // the API server's client certificate (kube-apiserver-audit), and a kubelet's too.
    const pki = makeTestPki({
      clientSubject: { cn: 'kube-apiserver-audit' },
      otherClients: ['system:node:worker-1'],
    });
    const mounted = await mkdtemp(path.join(tmpdir(), 'kubediff-audit-tls-'));
    t.after(() => rm(mounted, { recursive: true, force: true }));
    await writeFile(path.join(mounted, 'tls.crt'), pki.serverCert);
    await writeFile(path.join(mounted, 'tls.key'), pki.serverKey);
    await writeFile(path.join(mounted, 'ca.crt'), pki.caPem);
    const auditArgs = (container(objects).args as string[])
      .filter((arg) => arg.startsWith('--audit'))
      .map((arg) =>
        arg === '--audit-listen=:8443'
          ? '--audit-listen=127.0.0.1:0'
          : arg.replace('/etc/kubediff-audit/', `${mounted}/`),
      );
    const kd = runKubediff(watchArgs(namespace, ['configmaps'], ...auditArgs), { timeoutMs: 30_000 });
    t.after(() => kd.kill());
    const [, address] = await kd.waitForStderr(
      /receiving audit events on https:\/\/(\S+) \(authenticated by client certificate\)/,
    );
    await kd.waitForStderr(WATCHING);
    const post = async (client: { cert: string; key: string } | undefined) => {
      const agent = new Agent({ connect: { ca: pki.caPem, ...client } });
      try {
        const response = await request(`https://${address}/audit`, {
          method: 'POST',
          dispatcher: agent,
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ kind: 'EventList', apiVersion: 'audit.k8s.io/v1', items: [] }),
        });
        await response.body.text();
        return response.statusCode;
      } finally {
        await agent.close();
      }
    };
    assert.equal(
      await post({ cert: pki.clientCert, key: pki.clientKey }),
      200,
      "the API server's client certificate is accepted",
    );
    assert.equal(await post(undefined), 401, 'a request without it is refused');
    assert.equal(
      await post(pki.others['system:node:worker-1']),
      403,
      'another certificate of the same CA is refused: the name is pinned',
    );
    assert.equal((await kd.stop('SIGTERM')).code, 0);
  });

  test('PostgreSQL state keeps the leader-elected pair', async () => {
    const objects = await overlay(['postgres']);
    const deployment = objects.find((object) => object.kind === 'Deployment');
    assert.equal(deployment?.spec.replicas, 2);
    const args: string[] = container(objects).args;
    assert.ok(args.includes('--leader-elect'), args.join(' '));
    assert.ok(
      args.some((arg) => arg.startsWith('--state=postgres://')),
      args.join(' '),
    );
  });
});
