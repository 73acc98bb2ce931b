// Who changed it: `by.managers` and each change's `manager`, from the real API server's managedFields,
// for the ways people and controllers write objects: kubectl create, scale, set image, label, annotate,
// apply (client-side and server-side with a field manager of ours), a merge patch with a fieldManager
// query parameter, two managers within one second, and objects without managedFields.
import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  type KubediffProcess,
  killAll,
  runKubediff,
  runKubediffToCompletion,
  watchArgs,
} from '../helpers/cli.ts';
import { testCluster } from '../helpers/cluster-env.ts';
import { kubectl } from '../helpers/deploy.ts';
import { changeAt, matching, type TestEvent } from '../helpers/events.ts';
import { HttpReceiver } from '../helpers/http-receiver.ts';
import { adminClient, type KubeAdmin, type KubeObject, nextSecond } from '../helpers/kube-admin.ts';

const READY = /watching \d+ resource types?/;
let admin: KubeAdmin;

before(() => {
  admin = adminClient();
});

after(async () => {
  await killAll();
  await admin.close();
});

async function startWatch(args: string[]): Promise<KubediffProcess> {
  const watch = runKubediff(args, { checkEvents: true, timeoutMs: 30_000 });
  await watch.waitForStderr(READY, 90_000);
  return watch;
}

/** kubectl against the test cluster; throws with its stderr when it fails. */
async function run(...args: string[]): Promise<string> {
  const result = await kubectl(['--kubeconfig', testCluster().kubeconfigPath, ...args]);
  if (result.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed: ${result.stderr}`);
  return result.stdout;
}

/** The UPDATED of `name` with a change at `path` (to `to`, when given: events already seen count too). */
function updatedAt(watch: KubediffProcess, name: string, path: string, to?: string): Promise<TestEvent> {
  return watch.waitForEvent((event) => {
    if (!matching({ type: 'UPDATED', name })(event)) return false;
    const change = changeAt(event, path);
    return change !== undefined && (to === undefined || change.to === to);
  });
}

const managersOf = (event: TestEvent) => event.by?.managers?.map((entry) => entry.manager);
const changeManagers = (event: TestEvent) =>
  Object.fromEntries((event.changes ?? []).map((change) => [change.path, change.manager]));

describe('who changed it (field managers)', () => {
  it('names the manager of every kubectl write, and the owner of every change', async () => {
    const namespace = await admin.createNamespace('who');
    const watch = await startWatch(watchArgs(namespace, ['deploy', 'configmaps']));

    await run('-n', namespace, 'create', 'deployment', 'web', '--image=nginx:1.0');
    const added = await watch.waitForEvent(matching({ type: 'ADDED', resource: 'deployments', name: 'web' }));
    assert.deepEqual(added.by?.managers, [
      { manager: 'kubectl-create', operation: 'Update', time: added.by?.managers?.[0]?.time },
    ]);
    assert.match(added.by?.managers?.[0]?.time ?? '', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);

    await run('-n', namespace, 'scale', 'deploy', 'web', '--replicas=3');
    const scaled = await updatedAt(watch, 'web', '/spec/replicas');
    // The scale subresource's entry: the issue measured it without a time.
    assert.deepEqual(
      scaled.by?.managers?.map(({ time: _time, ...rest }) => rest),
      [{ manager: 'kubectl', operation: 'Update', subresource: 'scale' }],
    );
    assert.deepEqual(scaled.changes, [
      { op: 'replace', path: '/spec/replicas', from: 1, to: 3, manager: 'kubectl' },
    ]);

    await run('-n', namespace, 'set', 'image', 'deploy/web', 'nginx=nginx:1.1');
    const imaged = await updatedAt(watch, 'web', '/spec/template/spec/containers/0/image');
    assert.deepEqual(managersOf(imaged), ['kubectl-set']);
    assert.equal(imaged.by?.managers?.[0]?.operation, 'Update');
    assert.deepEqual(changeManagers(imaged), { '/spec/template/spec/containers/0/image': 'kubectl-set' });
    await run('-n', namespace, 'label', 'deploy', 'web', 'tier=frontend');
    const labelled = await updatedAt(watch, 'web', '/metadata/labels/tier');
    assert.deepEqual(managersOf(labelled), ['kubectl-label']);
    assert.deepEqual(changeManagers(labelled), { '/metadata/labels/tier': 'kubectl-label' });

    await run('-n', namespace, 'annotate', 'deploy', 'web', 'owner=team-a');
    const annotated = await updatedAt(watch, 'web', '/metadata/annotations');
    assert.deepEqual(managersOf(annotated), ['kubectl-annotate']);
    assert.deepEqual(changeManagers(annotated), { '/metadata/annotations': 'kubectl-annotate' });

    // Removing the only label kubectl-label owned empties its entry, which vanishes: still named.
    await run('-n', namespace, 'label', 'deploy', 'web', 'tier-');
    const unlabelled = await watch.waitForEvent(
      (event) =>
        matching({ type: 'UPDATED', name: 'web' })(event) &&
        event.changes?.some((change) => change.op === 'remove' && change.path === '/metadata/labels/tier') ===
          true,
    );
    assert.deepEqual(managersOf(unlabelled), ['kubectl-label']);
    assert.deepEqual(changeManagers(unlabelled), { '/metadata/labels/tier': 'kubectl-label' });

    // A merge patch with a fieldManager query parameter of our choosing.
    await admin.send('PATCH', `/apis/apps/v1/namespaces/${namespace}/deployments/web`, {
      query: { fieldManager: 'release-bot' },
      body: { spec: { replicas: 4 }, metadata: { labels: { release: 'r7' } } },
      contentType: 'application/merge-patch+json',
    });
    const patched = await updatedAt(watch, 'web', '/metadata/labels/release');
    assert.deepEqual(managersOf(patched), ['release-bot']);
    assert.deepEqual(changeManagers(patched), {
      '/spec/replicas': 'release-bot',
      '/metadata/labels/release': 'release-bot',
    });
    await watch.stop();
  });

  it('names client-side and server-side apply with the field manager given', async () => {
    const namespace = await admin.createNamespace('who-apply');
    const watch = await startWatch(watchArgs(namespace, ['configmaps']));
    const manifest = (data: Record<string, string>) =>
      JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'flags', namespace }, data });
    const apply = async (data: Record<string, string>, ...flags: string[]) => {
      const result = await kubectl(
        ['--kubeconfig', testCluster().kubeconfigPath, 'apply', '-f', '-', ...flags],
        {
          input: manifest(data),
        },
      );
      if (result.code !== 0) throw new Error(`kubectl apply failed: ${result.stderr}`);
    };

    await apply({ color: 'blue' });
    const created = await watch.waitForEvent(matching({ type: 'ADDED', name: 'flags' }));
    assert.deepEqual(managersOf(created), ['kubectl-client-side-apply']);

    await apply({ color: 'red' });
    const clientSide = await updatedAt(watch, 'flags', '/data/color', 'red');
    assert.deepEqual(managersOf(clientSide), ['kubectl-client-side-apply']);
    assert.equal(changeAt(clientSide, '/data/color')?.manager, 'kubectl-client-side-apply');

    await apply(
      { color: 'red', size: 'L' },
      '--server-side',
      '--force-conflicts',
      '--field-manager=ci-deployer',
    );
    const serverSide = await updatedAt(watch, 'flags', '/data/size');
    assert.deepEqual(
      serverSide.by?.managers?.map(({ manager, operation }) => ({ manager, operation })),
      [{ manager: 'ci-deployer', operation: 'Apply' }],
    );
    assert.equal(changeAt(serverSide, '/data/size')?.manager, 'ci-deployer');

    // The applier drops `size` from its configuration: the field is removed, by the applier. Its entry then
    // shrinks; within the same second (the timestamps' resolution) a shrink alone cannot tell the owner
    // that removed a field from one whose field someone else removed, and nothing would be said: so the
    // write goes into the next second, where the entry's new time names its writer. The next second after now,
    // not after the entry's time: kubectl's apply has returned, so whatever writes it made are stamped with a
    // second no later than now's (on a loaded machine, later than the entry the event showed).
    await nextSecond(undefined);
    await apply({ color: 'green' }, '--server-side', '--force-conflicts', '--field-manager=ci-deployer');
    const shrunk = await updatedAt(watch, 'flags', '/data/color', 'green');
    assert.deepEqual(managersOf(shrunk), ['ci-deployer']);
    assert.deepEqual(changeManagers(shrunk), { '/data/color': 'ci-deployer', '/data/size': 'ci-deployer' });
    await watch.stop();
  });

  it('keeps attribution right for two managers writing within one second', async () => {
    const namespace = await admin.createNamespace('who-fast');
    const watch = await startWatch(watchArgs(namespace, ['configmaps']));
    const path = `/api/v1/namespaces/${namespace}/configmaps/shared`;
    await admin.create(`/api/v1/namespaces/${namespace}/configmaps`, {
      metadata: { name: 'shared' },
      data: { a: '0', b: '0' },
    });
    await watch.waitForEvent(matching({ type: 'ADDED', name: 'shared' }));
    const patchAs = (fieldManager: string, data: Record<string, string>) =>
      admin.send<KubeObject>('PATCH', path, {
        query: { fieldManager },
        body: { data },
        contentType: 'application/merge-patch+json',
      });
    // No pause between them: all within one second, the timestamps' resolution.
    const writes: [string, Record<string, string>][] = [
      ['scaler', { a: '1' }],
      ['person', { b: '1' }],
      ['scaler', { a: '2' }],
      ['person', { a: '3' }],
      ['scaler', { b: '2' }],
    ];
    const versions: string[] = [];
    for (const [manager, data] of writes)
      versions.push((await patchAs(manager, data)).metadata.resourceVersion);
    for (const [index, [manager, data]] of writes.entries()) {
      const event = await watch.waitForEvent(
        (candidate) => candidate.type === 'UPDATED' && candidate.object.resourceVersion === versions[index],
      );
      const [key] = Object.keys(data);
      assert.deepEqual(managersOf(event), [manager], `write ${index + 1} (${manager})`);
      assert.deepEqual(
        changeManagers(event),
        { [`/data/${key}`]: manager },
        `write ${index + 1} (${manager})`,
      );
    }
    await watch.stop();
  });

  it('says nothing about an object without managedFields, and goes on', async () => {
    const namespace = await admin.createNamespace('who-none');
    const watch = await startWatch(watchArgs(namespace, ['configmaps']));
    const path = `/api/v1/namespaces/${namespace}/configmaps/bare`;
    await admin.create(`/api/v1/namespaces/${namespace}/configmaps`, {
      metadata: { name: 'bare' },
      data: { k: '1' },
    });
    await watch.waitForEvent(matching({ type: 'ADDED', name: 'bare' }));
    // `managedFields: [{}]` clears them; the server then keeps none for Update writes.
    await admin.patch(path, { metadata: { managedFields: [{}] }, data: { k: '2' } });
    const cleared = await updatedAt(watch, 'bare', '/data/k');
    assert.equal(cleared.by, undefined);
    assert.deepEqual(cleared.changes, [{ op: 'replace', path: '/data/k', from: '1', to: '2' }]);
    const bare = await admin.patch(path, { data: { k: '3' } });
    assert.equal(bare.metadata.managedFields, undefined, 'the API server keeps no managedFields now');
    const next = await watch.waitForEvent(
      (event) => event.type === 'UPDATED' && event.object.resourceVersion === bare.metadata.resourceVersion,
    );
    assert.equal(next.by, undefined);
    assert.deepEqual(next.changes, [{ op: 'replace', path: '/data/k', from: '2', to: '3' }]);
    await admin.delete(path);
    const deleted = await watch.waitForEvent(matching({ type: 'DELETED', name: 'bare' }));
    assert.equal(deleted.by, undefined);
    await watch.stop();
  });

  it('manager filters drop the autoscaler-style change and keep the same path changed by a person', async () => {
    const namespace = await admin.createNamespace('who-filter');
    const dir = await mkdtemp(path.join(tmpdir(), 'kubediff-who-'));
    const state = path.join(dir, 'state.db');
    const hook = await HttpReceiver.start();
    const file = path.join(dir, 'config.yaml');
    await writeFile(
      file,
      `
kubeconfig: ${testCluster().kubeconfigPath}
namespaces: [${namespace}]
resources: [deploy]
ignore:
  - path: /spec/replicas
    managers: [horizontal-pod-autoscaler, kube-controller-manager]
sinks:
  - type: stdout
    format: json
  - type: webhook
    name: people
    url: ${hook.url('/people')}
    filter:
      managers: ["kubectl*"]
`,
    );
    try {
      const watch = runKubediff(
        ['watch', '-c', file, '--explain', '--ignore-manager', 'argocd-*', '--state', state],
        { checkEvents: true, timeoutMs: 30_000 },
      );
      await watch.waitForStderr(READY, 90_000);
      const deployments = `/apis/apps/v1/namespaces/${namespace}/deployments`;
      await admin.create(deployments, {
        metadata: { name: 'api' },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: 'api' } },
          template: {
            metadata: { labels: { app: 'api' } },
            spec: { containers: [{ name: 'api', image: 'api:1' }] },
          },
        },
      });
      await watch.waitForEvent(matching({ type: 'ADDED', name: 'api' }));
      const patchAs = (fieldManager: string, subpath: string, body: unknown) =>
        admin.send<KubeObject>('PATCH', `${deployments}/api${subpath}`, {
          query: { fieldManager },
          body,
          contentType: 'application/merge-patch+json',
        });

      // The autoscaler's write of /spec/replicas (through the scale subresource, as it does): dropped.
      const auto = await patchAs('horizontal-pod-autoscaler', '/scale', { spec: { replicas: 2 } });
      // A person scales: the same path, reported.
      await run('-n', namespace, 'scale', 'deploy', 'api', '--replicas=3');
      const scaled = await updatedAt(watch, 'api', '/spec/replicas');
      assert.deepEqual(scaled.changes, [
        { op: 'replace', path: '/spec/replicas', from: 2, to: 3, manager: 'kubectl' },
      ]);
      // A GitOps controller, muted by --ignore-manager; then a bot the webhook's filter leaves out.
      const gitops = await patchAs('argocd-application-controller', '', {
        metadata: { labels: { synced: 'yes' } },
      });
      await patchAs('release-bot', '', { metadata: { labels: { release: 'r1' } } });
      await run('-n', namespace, 'label', 'deploy', 'api', 'done=yes');
      const sentinel = await updatedAt(watch, 'api', '/metadata/labels/done');

      const updates = watch.events.filter((event) => event.type === 'UPDATED');
      assert.deepEqual(
        updates.map((event) => [managersOf(event), Object.keys(changeManagers(event))]),
        [
          [['kubectl'], ['/spec/replicas']],
          [['release-bot'], ['/metadata/labels/release']],
          [['kubectl-label'], ['/metadata/labels/done']],
        ],
      );
      assert.equal(sentinel.id, updates.at(-1)?.id);
      // The webhook wants only what kubectl* did: not the ADDED (by the test's client), not the bot's label.
      await hook.waitForRequests(2);
      assert.deepEqual(
        hook.jsonBodies().map((body) => {
          const event = body as TestEvent;
          return `${event.type} ${managersOf(event)?.join(',')} ${event.id}`;
        }),
        [`UPDATED kubectl ${scaled.id}`, `UPDATED kubectl-label ${sentinel.id}`],
      );
      // --explain names the manager rule that dropped each.
      assert.match(
        watch.stderr,
        new RegExp(
          `explain: UPDATED deployments.apps ${namespace}/api \\S+:${auto.metadata.resourceVersion} → all sinks: dropped by ignore: every change is ignored \\(/spec/replicas by horizontal-pod-autoscaler, kube-controller-manager\\)`,
        ),
      );
      assert.match(
        watch.stderr,
        new RegExp(
          `explain: UPDATED deployments.apps ${namespace}/api \\S+:${gitops.metadata.resourceVersion} → all sinks: dropped by excludeManagers: every change is made by an excluded manager \\(argocd-application-controller; excluded \\[argocd-\\*\\]\\)`,
        ),
      );
      assert.match(
        watch.stderr,
        new RegExp(
          `explain: UPDATED deployments.apps ${namespace}/api \\S+ → people: dropped by managers: made by release-bot, not by \\[kubectl\\*\\]`,
        ),
      );
      assert.equal((await watch.stop()).code, 0);

      // History, filtered by manager from the recorded events.
      const history = async (...args: string[]) => {
        const result = await runKubediffToCompletion(['history', '--state', state, '-o', 'json', ...args], {
          timeoutMs: 20_000,
        });
        assert.equal(result.code, 0, result.stderr);
        return result.stdout
          .trim()
          .split('\n')
          .filter(Boolean)
          .map((line) => JSON.parse(line) as TestEvent);
      };
      const byKubectl = await history('--manager', 'kubectl*');
      assert.deepEqual(
        byKubectl.map((event) => event.id),
        [scaled.id, sentinel.id],
      );
      const byBot = await history('--manager', 'release-bot', 'deploy/api');
      assert.deepEqual(
        byBot.map((event) => managersOf(event)),
        [['release-bot']],
      );
      const bad = await runKubediffToCompletion(['history', '--state', state, '--manager', ' '], {
        timeoutMs: 20_000,
      });
      assert.equal(bad.code, 2);
      assert.match(bad.stderr, /^kubediff: invalid --manager " ": not a field manager name/);
    } finally {
      await hook.close();
    }
  });
});
