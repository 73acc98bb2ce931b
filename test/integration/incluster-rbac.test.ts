// kubediff as it runs in a pod, with deploy/'s RBAC and nothing else: the manifests pass a server-side
// dry run; their RBAC, applied for real (in a unique namespace, cluster-scoped names suffixed), grants
// exactly what kubediff uses (list and watch of every collection, its own Lease: the API server's own
// answers, asked for every verb on every resource and subresource it serves), and that is enough for
// kubediff to watch every resource type an admin can see. The identity is a ServiceAccount token minted
// with the TokenRequest API, mounted as the kubelet would (token file, CA file, namespace file,
// KUBERNETES_SERVICE_HOST/PORT; no kubeconfig).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { DEFAULT_DEAD_LETTER_LIMITS } from '../../src/sinks/core/dead-letter.ts';
import { runKubediff, runKubediffToCompletion } from '../helpers/cli.ts';
import { testCluster } from '../helpers/cluster-env.ts';
import {
  type AccessQuestion,
  applyObjects,
  canI,
  canIAll,
  clusterScopedPaths,
  deployOverlay,
  describeAccess,
  mintToken,
  type Overlay,
  type PodFiles,
  podCommand,
  podFiles,
  quantityBytes,
  rbacObjects,
  servedResources,
  serverDryRun,
} from '../helpers/deploy.ts';
import { adminClient, type KubeObject, uniqueName, waitFor } from '../helpers/kube-admin.ts';
import { SERVING } from '../helpers/metrics.ts';
import { nonEmpty } from '../helpers/non-empty.ts';

const cluster = testCluster();
const admin = adminClient();

interface Metrics {
  [name: string]: number;
}

async function scrape(url: string): Promise<Metrics> {
  const text = await (await fetch(url)).text();
  const metrics: Metrics = {};
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    metrics[line.slice(0, space)] = Number(line.slice(space + 1));
  }
  return metrics;
}

describe('in the cluster, with deploy/ RBAC only', () => {
  let namespace: string;
  let overlay: Overlay;
  let objects: KubeObject[];
  let pod: PodFiles;
  let adminKubeconfig: string;
  let serviceAccount: string;
  let token: string | undefined;
  const clusterScoped: string[] = [];

  /** deploy/'s ServiceAccount and RBAC, applied for real (once); a token of that ServiceAccount. */
  const applyRbac = async (): Promise<string> => {
    if (token) return token;
    const rbac = rbacObjects(objects ?? (await serverDryRun(adminKubeconfig, overlay)));
    clusterScoped.push(...clusterScopedPaths(rbac));
    await applyObjects(adminKubeconfig, rbac);
    token = await mintToken(admin, namespace, serviceAccount);
    return token;
  };

  before(async () => {
    namespace = await admin.createNamespace('incluster');
    overlay = await deployOverlay(namespace, `-${uniqueName('t').slice(2)}`);
    adminKubeconfig = await admin.writeKubeconfig();
    serviceAccount = `kubediff${overlay.suffix}`;
  });

  after(async () => {
    for (const objectPath of clusterScoped) await admin.delete(objectPath).catch(() => {});
    await admin.deleteNamespace(namespace).catch(() => {});
    await overlay?.remove();
    await pod?.remove();
  });

  test('the manifests pass a server-side dry run', async () => {
    objects = await serverDryRun(adminKubeconfig, overlay);
    const kinds = objects.map((object) => object.kind).sort();
    for (const kind of [
      'ClusterRole',
      'ClusterRoleBinding',
      'ConfigMap',
      'Deployment',
      'Namespace',
      'NetworkPolicy',
      'PodDisruptionBudget',
      'Role',
      'RoleBinding',
      'Service',
      'ServiceAccount',
    ]) {
      assert.ok(kinds.includes(kind), `deploy/ renders a ${kind}; got ${kinds.join(', ')}`);
    }
    const clusterRole = objects.find((object) => object.kind === 'ClusterRole') as KubeObject & {
      rules: { verbs: string[] }[];
    };
    assert.deepEqual(
      [...new Set(clusterRole.rules.flatMap((rule) => rule.verbs))].sort(),
      ['list', 'watch'],
      'the ClusterRole lists and watches, and nothing more',
    );
    // biome-ignore lint/suspicious/noExplicitAny: a rendered manifest, checked field by field
    type Manifest = Record<string, any>;
    // Only the monitoring namespace may reach the metrics port, not every pod of the cluster.
    const policy = objects.find((object) => object.kind === 'NetworkPolicy') as KubeObject & {
      spec: { ingress: Manifest[] };
    };
    assert.deepEqual(policy.spec.ingress, [
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
    const deployment = objects.find((object) => object.kind === 'Deployment') as KubeObject & {
      spec: { replicas: number; template: { spec: Manifest } };
    };
    assert.equal(deployment.spec.replicas, 2);
    const podSpec = deployment.spec.template.spec;
    assert.equal(podSpec.serviceAccountName, serviceAccount);
    assert.equal(podSpec.securityContext.runAsNonRoot, true);
    assert.equal(podSpec.securityContext.seccompProfile.type, 'RuntimeDefault');
    const container = podSpec.containers[0];
    assert.equal(container.securityContext.readOnlyRootFilesystem, true);
    assert.equal(container.securityContext.allowPrivilegeEscalation, false);
    assert.deepEqual(container.securityContext.capabilities.drop, ['ALL']);
    assert.equal(container.livenessProbe.httpGet.path, '/healthz');
    assert.equal(container.readinessProbe.httpGet.path, '/readyz');
    assert.ok(container.resources.requests.memory && container.resources.limits.memory);
    assert.ok(container.args.includes('--leader-elect'), container.args.join(' '));
    // The data volume: an emptyDir past its sizeLimit evicts the pod; the dead-letter cap stays below it.
    const data = podSpec.volumes.find((volume: { name: string }) => volume.name === 'data');
    const cap = DEFAULT_DEAD_LETTER_LIMITS.maxFiles * DEFAULT_DEAD_LETTER_LIMITS.maxFileBytes;
    assert.ok(quantityBytes(data.emptyDir.sizeLimit) > cap, `${data.emptyDir.sizeLimit} above ${cap} bytes`);
    // The ConfigMap name carries kustomize's content hash, and the Deployment mounts that one.
    const configMap = objects.find((object) => object.kind === 'ConfigMap');
    assert.equal(
      podSpec.volumes.find((volume: { name: string }) => volume.name === 'config').configMap.name,
      configMap?.metadata.name,
    );
  });

  test('its ServiceAccount may list and watch every collection, and nothing more: no subresource, no write but its Lease', async () => {
    const podToken = await applyRbac();
    // What a ServiceAccount without any binding may do (every authenticated identity may ask the
    // authorizer about itself, say): the baseline that deploy/'s RBAC adds to.
    const bystander = `bystander${overlay.suffix}`;
    await admin.create(`/api/v1/namespaces/${namespace}/serviceaccounts`, {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: bystander },
    });
    const asPod = admin.as(podToken);
    const asBystander = admin.as(await mintToken(admin, namespace, bystander));
    try {
      // The doors a stolen token must not open: the kubelet, container logs, exec, attach, port
      // forwarding, proxying to Services and pods, a single Secret.
      const elsewhere = 'default';
      const doors: AccessQuestion[] = [
        { verb: 'get', group: '', resource: 'nodes', subresource: 'proxy' },
        { verb: 'create', group: '', resource: 'nodes', subresource: 'proxy' },
        { verb: 'get', group: '', resource: 'pods', subresource: 'log', namespace: elsewhere },
        { verb: 'get', group: '', resource: 'pods', subresource: 'exec', namespace: elsewhere },
        { verb: 'create', group: '', resource: 'pods', subresource: 'exec', namespace: elsewhere },
        { verb: 'get', group: '', resource: 'pods', subresource: 'attach', namespace: elsewhere },
        { verb: 'get', group: '', resource: 'pods', subresource: 'portforward', namespace: elsewhere },
        { verb: 'get', group: '', resource: 'pods', subresource: 'proxy', namespace: elsewhere },
        { verb: 'get', group: '', resource: 'services', subresource: 'proxy', namespace: elsewhere },
        { verb: 'get', group: '', resource: 'secrets', namespace: elsewhere, name: 'any' },
      ];
      const doorAnswers = await canIAll(asPod, doors);
      assert.deepEqual(
        doors.filter((_, index) => doorAnswers[index]).map(describeAccess),
        [],
        'none of these is allowed',
      );

      // Every verb on every resource and subresource the API server serves, here and in another
      // namespace: what the ServiceAccount may do beyond the bystander is list and watch of whole
      // collections, and creating a Lease in its own namespace. (RBAC's `*` matches subresources too, so
      // the authorizer also says yes to list and watch of a subresource; but no such request exists: a
      // subresource belongs to one named object, which makes a request on it a get, create, update…,
      // and no subresource can be watched, as the watch paths below show.)
      const served = await servedResources(admin);
      const verbs = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection'];
      const questions: AccessQuestion[] = [];
      for (const type of served) {
        for (const where of type.namespaced ? [namespace, elsewhere] : [undefined]) {
          for (const verb of verbs) {
            questions.push({
              verb,
              group: type.group,
              resource: type.resource,
              ...(type.subresource ? { subresource: type.subresource } : {}),
              ...(where ? { namespace: where } : {}),
            });
          }
        }
      }
      // The verbs that are not about objects: taking another identity, granting rights, signing.
      for (const resource of ['users', 'groups', 'serviceaccounts'])
        questions.push({ verb: 'impersonate', group: '', resource });
      questions.push({ verb: 'impersonate', group: 'authentication.k8s.io', resource: 'uids' });
      for (const resource of ['roles', 'clusterroles'])
        for (const verb of ['bind', 'escalate'])
          questions.push({ verb, group: 'rbac.authorization.k8s.io', resource });
      for (const verb of ['approve', 'sign'])
        questions.push({ verb, group: 'certificates.k8s.io', resource: 'signers' });
      const [mine, theirs] = await Promise.all([canIAll(asPod, questions), canIAll(asBystander, questions)]);
      const isRead = (question: AccessQuestion) => question.verb === 'list' || question.verb === 'watch';
      const isCollectionRead = (question: AccessQuestion) => isRead(question) && !question.subresource;
      const isLeaseCreate = (question: AccessQuestion) =>
        question.verb === 'create' &&
        question.group === 'coordination.k8s.io' &&
        question.resource === 'leases' &&
        !question.subresource &&
        question.namespace === namespace;
      const beyondBaseline = questions.filter(
        (question, index) => mine[index] && !theirs[index] && !isRead(question) && !isLeaseCreate(question),
      );
      assert.deepEqual(beyondBaseline.map(describeAccess), [], 'granted beyond list, watch and its Lease');
      const unreadable = questions.filter((question, index) => {
        const type = served.find(
          (entry) =>
            entry.group === question.group && entry.resource === question.resource && !entry.subresource,
        );
        const watchable = type?.verbs.includes('list') && type.verbs.includes('watch');
        return isCollectionRead(question) && watchable && !mine[index];
      });
      assert.deepEqual(unreadable.map(describeAccess), [], 'every collection can be listed and watched');
      assert.ok(questions.length > 1_000, `${questions.length} questions asked`);

      // Watching a subresource, which the authorizer lets through: the API server serves no such thing.
      await admin.create(`/api/v1/namespaces/${namespace}/pods`, {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'target' },
        spec: { containers: [{ name: 'main', image: 'registry.invalid/none' }] },
      });
      await admin.create(`/api/v1/namespaces/${namespace}/services`, {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'target' },
        spec: { ports: [{ port: 80 }] },
      });
      const subresources = served.filter(
        (type) => type.group === '' && type.subresource && ['pods', 'services'].includes(type.resource),
      );
      for (const type of nonEmpty(subresources, 'subresources of pods and services')) {
        const watchPath = `/api/v1/watch/namespaces/${namespace}/${type.resource}/target/${type.subresource}`;
        const answer = await asPod.request('GET', watchPath);
        assert.equal(answer.status, 404, `GET ${watchPath}: ${answer.status} ${answer.text.slice(0, 200)}`);
      }

      // Its Lease: the one named after its Deployment (kubediff, suffixed as the overlay renamed it) in its
      // own namespace, read and renewed; no other, nowhere else.
      const lease = { group: 'coordination.k8s.io', resource: 'leases' };
      const name = `kubediff${overlay.suffix}`;
      for (const [question, allowed] of [
        [{ ...lease, verb: 'create', namespace }, true],
        [{ ...lease, verb: 'get', namespace, name }, true],
        [{ ...lease, verb: 'update', namespace, name }, true],
        [{ ...lease, verb: 'delete', namespace, name }, false],
        [{ ...lease, verb: 'patch', namespace, name }, false],
        [{ ...lease, verb: 'update', namespace, name: 'kubediff' }, false],
        [{ ...lease, verb: 'update', namespace, name: 'someone-else' }, false],
        [{ ...lease, verb: 'create', namespace: elsewhere }, false],
        [{ ...lease, verb: 'update', namespace: elsewhere, name }, false],
      ] as const) {
        assert.equal(await canI(asPod, question), allowed, describeAccess(question));
      }
    } finally {
      await asPod.close();
      await asBystander.close();
    }
  });

  test('with only its ServiceAccount it watches every resource type', async () => {
    pod = await podFiles(cluster, namespace, await applyRbac());

    // What an admin would watch, it watches too: nothing is skipped for lack of rights. (Other tests
    // share the cluster and may add or remove a CRD between the two runs: compare again if so.)
    const rows = (text: string) =>
      text
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { name: string; watched: boolean; reason?: string });
    const watched = (text: string) =>
      rows(text)
        .filter((row) => row.watched)
        .map((row) => row.name)
        .sort();
    let attempt = 0;
    const { adminView, podView } = await waitFor(
      async () => {
        attempt++;
        const adminView = await runKubediffToCompletion([
          'resources',
          '--kubeconfig',
          adminKubeconfig,
          '-o',
          'json',
        ]);
        const podView = await runKubediffToCompletion(['resources', '-o', 'json'], { env: pod?.env });
        assert.equal(podView.code, 0, podView.stderr);
        const same = JSON.stringify(watched(podView.stdout)) === JSON.stringify(watched(adminView.stdout));
        return same || attempt >= 5 ? { adminView, podView } : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 500, what: 'the same resource types for the pod and the admin' },
    );
    assert.deepEqual(
      rows(podView.stdout).filter((row) => row.reason === 'forbidden'),
      [],
      'nothing forbidden to the ServiceAccount',
    );
    assert.deepEqual(watched(podView.stdout), watched(adminView.stdout));
    const expected = watched(adminView.stdout);
    assert.ok(expected.includes('secrets'), 'Secrets are watched (and redacted)');

    const args = await podCommand(objects, pod);
    assert.equal(args[0], 'watch');
    const kd = runKubediff(args, {
      env: {
        ...pod.env,
        KUBEDIFF_LOG_FORMAT: 'json',
        // A pod of the Deployment as the overlay named it: its Lease is named after it.
        POD_NAME: `kubediff${overlay.suffix}-5d8f7-x2x9q`,
        POD_NAMESPACE: namespace,
      },
      timeoutMs: 90_000,
    });
    try {
      const [, address] = await kd.waitForStderr(SERVING);
      await kd.waitForStderr(/became the leader/);
      const metrics = await waitFor(
        async () => {
          const scraped = await scrape(`${address}/metrics`);
          // The cluster label is the manifest's clusterName (deploy/config.yaml).
          return scraped['kubediff_informers{cluster="my-cluster",state="synced"}'] === expected.length
            ? scraped
            : undefined;
        },
        { timeoutMs: 30_000, what: `${expected.length} informers synced` },
      );
      assert.equal(
        metrics['kubediff_informers{cluster="my-cluster",state="failing"}'],
        0,
        'no informer fails for lack of rights',
      );
      assert.equal((await fetch(`${address}/readyz`)).status, 200);

      // Changes anywhere reach it: a namespaced object, a Secret (redacted), a cluster-scoped object.
      const since = kd.events.length;
      await admin.create(`/api/v1/namespaces/${namespace}/configmaps`, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'seen' },
        data: { a: '1' },
      });
      await admin.create(`/api/v1/namespaces/${namespace}/secrets`, {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'seen' },
        stringData: { password: 'hunter2' },
      });
      const priorityClass = uniqueName('kubediff-pc');
      clusterScoped.push(`/apis/scheduling.k8s.io/v1/priorityclasses/${priorityClass}`);
      await admin.create('/apis/scheduling.k8s.io/v1/priorityclasses', {
        apiVersion: 'scheduling.k8s.io/v1',
        kind: 'PriorityClass',
        metadata: { name: priorityClass },
        value: 1000,
      });
      await kd.waitForEvent(
        (event) =>
          event.type === 'ADDED' && event.object.kind === 'ConfigMap' && event.object.name === 'seen',
        { since },
      );
      const secret = await kd.waitForEvent(
        (event) => event.type === 'ADDED' && event.object.kind === 'Secret' && event.object.name === 'seen',
        { since },
      );
      await kd.waitForEvent(
        (event) =>
          event.type === 'ADDED' &&
          event.object.kind === 'PriorityClass' &&
          event.object.name === priorityClass,
        { since },
      );
      assert.equal(secret.cluster, 'my-cluster', 'clusterName from deploy/config.yaml');
      assert.ok(!JSON.stringify(kd.events).includes('hunter2'), 'no secret value in any event');

      // The Lease it holds, in its own namespace.
      const lease = (await admin.get(
        `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/kubediff${overlay.suffix}`,
      )) as KubeObject & { spec: { holderIdentity: string } };
      assert.match(lease.spec.holderIdentity, new RegExp(`^kubediff${overlay.suffix}-5d8f7-x2x9q_\\d+$`));

      const result = await kd.stop('SIGTERM');
      assert.equal(result.code, 0, result.stderr);
      // Logs are JSON lines with a level and a message (stderr is not a terminal).
      for (const line of result.stderr.trim().split('\n')) {
        const record = JSON.parse(line) as { level: string; msg: string; time: string };
        assert.ok(['debug', 'info', 'warn', 'error'].includes(record.level), line);
        assert.equal(typeof record.msg, 'string');
        assert.ok(!Number.isNaN(Date.parse(record.time)));
      }
      assert.ok(!result.stderr.includes('hunter2'));
      // On a clean stop the Lease is released, so that a standby takes over at once.
      const released = (await admin.get(
        `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/kubediff${overlay.suffix}`,
      )) as KubeObject & { spec: { holderIdentity?: string } };
      assert.ok(!released.spec.holderIdentity, `released: ${JSON.stringify(released.spec)}`);
    } finally {
      if (!kd.exitResult) await kd.kill();
    }
  });
});
