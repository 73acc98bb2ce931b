// What a ConfigMap or Secret change reaches (docs/used-by.md), against the shared test cluster, whose
// workloads run no pods (no controllers): every kind of reference alone, found on real objects; an
// optional reference to a missing ConfigMap found when it is created; a key nobody reads; a workload
// that stops using it dropping out at once; a restart with --state that reports nothing new and keeps
// the links while the workloads are not listed yet; --no-used-by; a watch without workloads; and
// `kubediff resources --used-by`. Whether pods see a change live needs pods that run: used-by-live.test.ts.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, type TestContext, test } from 'node:test';
import type { UsedBy, UsingWorkload } from '../../src/events/event.ts';
import { startApiFront } from '../helpers/api-front.ts';
import { killAll, runKubediff, runKubediffToCompletion, WATCHING, watchArgs } from '../helpers/cli.ts';
import { describeEvent } from '../helpers/events.ts';
import { adminClient, type KubeObject } from '../helpers/kube-admin.ts';

const admin = adminClient();
const dir = mkdtempSync(join(tmpdir(), 'kubediff-used-by-it-'));
const RESOURCES = ['configmaps', 'secrets', 'deployments', 'pods', 'serviceaccounts'];

afterEach(async () => {
  await killAll();
});
after(async () => {
  await admin.close();
  rmSync(dir, { recursive: true, force: true });
});

async function namespaceFor(t: TestContext, prefix: string): Promise<string> {
  const ns = await admin.createNamespace(prefix);
  t.after(() => admin.deleteNamespace(ns));
  return ns;
}

const cmPath = (ns: string, name = '') => `/api/v1/namespaces/${ns}/configmaps${name ? `/${name}` : ''}`;
const secretPath = (ns: string, name = '') => `/api/v1/namespaces/${ns}/secrets${name ? `/${name}` : ''}`;
const deployPath = (ns: string, name = '') =>
  `/apis/apps/v1/namespaces/${ns}/deployments${name ? `/${name}` : ''}`;
const id = (object: KubeObject) => `${object.metadata.uid}:${object.metadata.resourceVersion}`;

/** A Deployment whose pod spec is `spec` (one container `app` unless the spec says otherwise). */
function deployment(name: string, spec: Record<string, unknown>): Record<string, unknown> {
  return {
    metadata: { name },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: 'app', image: 'web:1' }], ...spec },
      },
    },
  };
}

/** The workload of `usedBy` named `kind/name`, or a failure listing what it names. */
function workload(usedBy: UsedBy | undefined, kind: string, name: string): UsingWorkload {
  const found = usedBy?.workloads.find((entry) => entry.object.kind === kind && entry.object.name === name);
  assert.ok(found, `${kind}/${name} in usedBy: ${JSON.stringify(usedBy)}`);
  return found;
}

const names = (usedBy: UsedBy | undefined) =>
  (usedBy?.workloads ?? []).map((entry) => `${entry.object.kind}/${entry.object.name}`).sort();

test('each kind of reference, alone, is found; an optional one when its ConfigMap is created; a workload that stops using it drops out', async (t) => {
  const ns = await namespaceFor(t, 'used-by-kinds');
  await admin.create(cmPath(ns), { metadata: { name: 'cfg' }, data: { a: '1', b: '1' } });
  await admin.create(secretPath(ns), { metadata: { name: 'creds' }, stringData: { user: 'u', pass: 'p' } });
  await admin.create(secretPath(ns), {
    metadata: { name: 'registry' },
    stringData: { '.dockerconfigjson': '{}' },
  });
  await admin.create(secretPath(ns), {
    metadata: { name: 'sa-registry' },
    stringData: { '.dockerconfigjson': '{}' },
  });
  await admin.create(`/api/v1/namespaces/${ns}/serviceaccounts`, {
    metadata: { name: 'builder' },
    imagePullSecrets: [{ name: 'sa-registry' }],
  });
  const app = (extra: Record<string, unknown>) => ({
    containers: [{ name: 'app', image: 'web:1', ...extra }],
  });
  const workloads: Record<string, Record<string, unknown>> = {
    'd-env': app({ env: [{ name: 'MODE', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'a' } } }] }),
    'd-envfrom': app({ envFrom: [{ configMapRef: { name: 'cfg' }, prefix: 'CFG_' }] }),
    'd-volume': {
      ...app({ volumeMounts: [{ name: 'c', mountPath: '/c' }] }),
      volumes: [{ name: 'c', configMap: { name: 'cfg', items: [{ key: 'b', path: 'b' }] } }],
    },
    'd-projected': {
      ...app({ volumeMounts: [{ name: 'p', mountPath: '/p' }] }),
      volumes: [{ name: 'p', projected: { sources: [{ configMap: { name: 'cfg' } }] } }],
    },
    'd-subpath': {
      ...app({ volumeMounts: [{ name: 'c', mountPath: '/etc/a', subPath: 'a' }] }),
      volumes: [{ name: 'c', configMap: { name: 'cfg' } }],
    },
    'd-init': {
      initContainers: [
        {
          name: 'render',
          image: 'r:1',
          env: [{ name: 'B', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'b' } } }],
        },
      ],
    },
    'd-secret': app({ env: [{ name: 'USER', valueFrom: { secretKeyRef: { name: 'creds', key: 'user' } } }] }),
    'd-pull': { imagePullSecrets: [{ name: 'registry' }] },
    'd-sa': { serviceAccountName: 'builder' },
    'd-optional': app({ envFrom: [{ configMapRef: { name: 'later', optional: true } }] }),
  };
  for (const [name, spec] of Object.entries(workloads))
    await admin.create(deployPath(ns), deployment(name, spec));
  // A bare pod (pending: this cluster schedules nothing) with an ephemeral container that reads cfg.
  await admin.create(`/api/v1/namespaces/${ns}/pods`, {
    metadata: { name: 'p-debug' },
    spec: { containers: [{ name: 'app', image: 'web:1' }] },
  });
  await admin.patch(
    `/api/v1/namespaces/${ns}/pods/p-debug/ephemeralcontainers`,
    {
      spec: {
        ephemeralContainers: [
          {
            name: 'debug',
            image: 'busybox:1',
            env: [{ name: 'A', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'a' } } }],
          },
        ],
      },
    },
    'strategic',
  );

  const watch = runKubediff(watchArgs(ns, RESOURCES), { checkEvents: true, timeoutMs: 30_000 });
  await watch.waitForStderr(WATCHING);

  const changed = await admin.patch(cmPath(ns, 'cfg'), { data: { a: '2', b: '2', c: 'new' } });
  const event = await watch.waitForEvent((e) => e.id === id(changed), { description: 'UPDATED cfg' });
  const usedBy = event.usedBy;
  assert.deepEqual(names(usedBy), [
    'Deployment/d-env',
    'Deployment/d-envfrom',
    'Deployment/d-init',
    'Deployment/d-projected',
    'Deployment/d-subpath',
    'Deployment/d-volume',
    'Pod/p-debug',
  ]);
  assert.equal(usedBy?.incomplete, undefined, 'every indexed type was listed');
  const via = (name: string, kind = 'Deployment') => workload(usedBy, kind, name).via;
  assert.deepEqual(via('d-env'), [{ type: 'env', key: 'a', env: 'MODE', container: 'app' }]);
  assert.deepEqual(via('d-envfrom'), [{ type: 'envFrom', prefix: 'CFG_', container: 'app' }]);
  assert.deepEqual(via('d-volume'), [{ type: 'volume', volume: 'c', items: ['b'], container: 'app' }]);
  assert.deepEqual(via('d-projected'), [{ type: 'projected', volume: 'p', container: 'app' }]);
  assert.deepEqual(via('d-subpath'), [{ type: 'volume', volume: 'c', container: 'app', subPath: true }]);
  assert.deepEqual(via('d-init'), [{ type: 'env', key: 'b', env: 'B', initContainer: 'render' }]);
  assert.deepEqual(via('p-debug', 'Pod'), [{ type: 'env', key: 'a', env: 'A', ephemeralContainer: 'debug' }]);
  assert.deepEqual(workload(usedBy, 'Deployment', 'd-env').keys, ['a']);
  assert.deepEqual(workload(usedBy, 'Deployment', 'd-volume').keys, ['b']);
  assert.deepEqual(workload(usedBy, 'Deployment', 'd-envfrom').keys, ['a', 'b', 'c']);
  // Pods are watched: the Deployments have none here (nothing runs them), the bare pod has not started.
  assert.deepEqual(workload(usedBy, 'Deployment', 'd-env').pods, { total: 0, old: 0 });
  assert.equal(workload(usedBy, 'Pod', 'p-debug').live, true);

  // A Secret read by env; image pull secrets of the pod spec, and of the ServiceAccount the pods run as.
  const secretChanges: [string, string, UsingWorkload['via']][] = [
    ['creds', 'd-secret', [{ type: 'env', key: 'user', env: 'USER', container: 'app' }]],
    ['registry', 'd-pull', [{ type: 'imagePullSecrets' }]],
    ['sa-registry', 'd-sa', [{ type: 'serviceAccount', serviceAccount: 'builder' }]],
  ];
  for (const [secret, user, expected] of secretChanges) {
    const updated = await admin.patch(secretPath(ns, secret), { metadata: { labels: { touched: 'yes' } } });
    const secretEvent = await watch.waitForEvent((e) => e.id === id(updated), {
      description: `UPDATED ${secret}`,
    });
    assert.deepEqual(names(secretEvent.usedBy), [`Deployment/${user}`], secret);
    assert.deepEqual(workload(secretEvent.usedBy, 'Deployment', user).via, expected, secret);
    // Only a label changed: no key, so nothing to be live about.
    assert.deepEqual(workload(secretEvent.usedBy, 'Deployment', user).keys, []);
    assert.equal(workload(secretEvent.usedBy, 'Deployment', user).live, undefined);
  }

  // The optional reference to a ConfigMap that did not exist: its ADDED names who waits for it.
  const later = await admin.create(cmPath(ns), { metadata: { name: 'later' }, data: { x: '1' } });
  const added = await watch.waitForEvent((e) => e.id === id(later), { description: 'ADDED later' });
  assert.deepEqual(names(added.usedBy), ['Deployment/d-optional']);
  assert.deepEqual(workload(added.usedBy, 'Deployment', 'd-optional').via, [
    { type: 'envFrom', container: 'app', optional: true },
  ]);
  // A ConfigMap nothing waits for: its ADDED carries no usedBy.
  const lonely = await admin.create(cmPath(ns), { metadata: { name: 'lonely' }, data: { x: '1' } });
  const lonelyAdded = await watch.waitForEvent((e) => e.id === id(lonely), { description: 'ADDED lonely' });
  assert.equal(lonelyAdded.usedBy, undefined);

  // d-env's template stops using cfg: the next change of cfg no longer names it.
  await admin.patch(
    deployPath(ns, 'd-env'),
    [{ op: 'remove', path: '/spec/template/spec/containers/0/env' }],
    'json',
  );
  const again = await admin.patch(cmPath(ns, 'cfg'), { data: { a: '3' } });
  const againEvent = await watch.waitForEvent((e) => e.id === id(again), {
    description: 'UPDATED cfg again',
  });
  assert.ok(!names(againEvent.usedBy).includes('Deployment/d-env'), names(againEvent.usedBy).join(', '));
  assert.ok(names(againEvent.usedBy).includes('Deployment/d-envfrom'));
});

test('a change to keys nobody reads says so', async (t) => {
  const ns = await namespaceFor(t, 'used-by-unread');
  await admin.create(cmPath(ns), { metadata: { name: 'cfg' }, data: { mode: 'a', debug: '0' } });
  await admin.create(
    deployPath(ns),
    deployment('web', {
      containers: [
        {
          name: 'app',
          image: 'web:1',
          env: [{ name: 'MODE', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'mode' } } }],
        },
      ],
    }),
  );
  const watch = runKubediff(watchArgs(ns, RESOURCES), { checkEvents: true, timeoutMs: 30_000 });
  await watch.waitForStderr(WATCHING);
  const changed = await admin.patch(cmPath(ns, 'cfg'), { data: { debug: '1', extra: 'x' } });
  const event = await watch.waitForEvent((e) => e.id === id(changed), { description: 'UPDATED cfg' });
  assert.deepEqual(event.usedBy?.unreadKeys, ['debug', 'extra']);
  assert.deepEqual(workload(event.usedBy, 'Deployment', 'web').keys, []);
  const read = await admin.patch(cmPath(ns, 'cfg'), { data: { mode: 'b' } });
  const readEvent = await watch.waitForEvent((e) => e.id === id(read), { description: 'UPDATED cfg mode' });
  assert.equal(readEvent.usedBy?.unreadKeys, undefined);
  assert.deepEqual(workload(readEvent.usedBy, 'Deployment', 'web').keys, ['mode']);
});

test('a restart with --state reports nothing for unchanged objects and keeps the links before the workloads are listed again', async (t) => {
  const ns = await namespaceFor(t, 'used-by-state');
  const state = join(dir, `${ns}.db`);
  await admin.create(cmPath(ns), { metadata: { name: 'cfg' }, data: { mode: 'a' } });
  await admin.create(
    deployPath(ns),
    deployment('web', {
      containers: [
        {
          name: 'app',
          image: 'web:1',
          env: [{ name: 'MODE', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'mode' } } }],
        },
      ],
    }),
  );
  const first = runKubediff(watchArgs(ns, RESOURCES, '--state', state), {
    checkEvents: true,
    timeoutMs: 30_000,
  });
  await first.waitForStderr(/recording state in /);
  assert.equal((await first.stop()).code, 0);

  // While down: the ConfigMap changes.
  const changed = await admin.patch(cmPath(ns, 'cfg'), { data: { mode: 'b' } });

  // The restart lists the Deployments only when the test says so: the catch-up of the ConfigMaps comes
  // first, and still names the Deployment, from what the state restored.
  const front = await startApiFront();
  t.after(() => front.close());
  const deployments = front.hold((request) => request.path === deployPath(ns) && !request.watch);
  const second = runKubediff(
    [
      'watch',
      '--kubeconfig',
      await admin.writeKubeconfig(front.url),
      '-o',
      'json',
      '-n',
      ns,
      ...RESOURCES.flatMap((resource) => ['-r', resource]),
      '--state',
      state,
    ],
    { checkEvents: true, timeoutMs: 30_000, env: { KUBEDIFF_INITIAL_SYNC: 'list' } },
  );
  await deployments.held;
  const offline = await second.waitForEvent((e) => e.id === id(changed), {
    description: 'offline UPDATED cfg',
  });
  assert.equal(offline.offline, true);
  assert.deepEqual(names(offline.usedBy), ['Deployment/web']);
  assert.deepEqual(workload(offline.usedBy, 'Deployment', 'web').via, [
    { type: 'env', key: 'mode', env: 'MODE', container: 'app' },
  ]);
  assert.equal(offline.usedBy?.incomplete, undefined, 'what the state restored counts as known');
  deployments.release();
  await second.waitForStderr(WATCHING);

  // Once the Deployments are listed again, the links are the same; and nothing else was reported.
  const live = await admin.patch(cmPath(ns, 'cfg'), { data: { mode: 'c' } });
  const liveEvent = await second.waitForEvent((e) => e.id === id(live), {
    description: 'UPDATED cfg after the restart',
  });
  assert.deepEqual(names(liveEvent.usedBy), ['Deployment/web']);
  const reported = second.events.filter((e) => e.object.namespace === ns);
  assert.deepEqual(
    reported.map(describeEvent),
    [offline, liveEvent].map(describeEvent),
    'only the changes: nothing for the unchanged Deployment, ServiceAccount or Secrets',
  );
});

test('--no-used-by leaves usedBy out; a watch without pods, workloads or ServiceAccounts carries none and says so', async (t) => {
  const ns = await namespaceFor(t, 'used-by-off');
  await admin.create(cmPath(ns), { metadata: { name: 'cfg' }, data: { mode: 'a' } });
  await admin.create(
    deployPath(ns),
    deployment('web', {
      containers: [{ name: 'app', image: 'web:1', envFrom: [{ configMapRef: { name: 'cfg' } }] }],
    }),
  );
  const off = runKubediff(watchArgs(ns, RESOURCES, '--no-used-by'), { checkEvents: true, timeoutMs: 30_000 });
  const blind = runKubediff(watchArgs(ns, ['configmaps']), { checkEvents: true, timeoutMs: 30_000 });
  const noPods = runKubediff(watchArgs(ns, ['configmaps', 'deployments']), {
    checkEvents: true,
    timeoutMs: 30_000,
  });
  await Promise.all([off, blind, noPods].map((watch) => watch.waitForStderr(WATCHING)));
  const changed = await admin.patch(cmPath(ns, 'cfg'), { data: { mode: 'b' } });
  const events = await Promise.all(
    [off, blind, noPods].map((watch) =>
      watch.waitForEvent((e) => e.id === id(changed), { description: 'UPDATED cfg' }),
    ),
  );
  assert.equal(events[0]?.usedBy, undefined, '--no-used-by');
  assert.equal(events[1]?.usedBy, undefined, '-r configmaps alone');
  await blind.waitForStderr(
    /has no pods, workloads or ServiceAccounts watched, so its ConfigMap and Secret events carry no usedBy/,
  );
  // Without pods: the workload and how it uses it, not whether it is live.
  const web = workload(events[2]?.usedBy, 'Deployment', 'web');
  assert.deepEqual(web.via, [{ type: 'envFrom', container: 'app' }]);
  assert.equal(web.live, undefined);
  assert.equal(web.pods, undefined);
});

test('kubediff resources --used-by lists what uses one ConfigMap now, as a table and as JSON', async (t) => {
  const ns = await namespaceFor(t, 'used-by-resources');
  await admin.create(cmPath(ns), { metadata: { name: 'app-config' }, data: { mode: 'a', unused: 'x' } });
  await admin.create(
    deployPath(ns),
    deployment('web', {
      containers: [
        {
          name: 'app',
          image: 'web:1',
          env: [{ name: 'MODE', valueFrom: { configMapKeyRef: { name: 'app-config', key: 'mode' } } }],
        },
      ],
    }),
  );
  const base = ['resources', '--kubeconfig', admin.cluster.kubeconfigPath, '-n', ns];
  const table = await runKubediffToCompletion([...base, '--used-by', 'configmap/app-config'], {
    timeoutMs: 20_000,
  });
  assert.equal(table.code, 0, table.stderr);
  assert.match(table.stdout, /^WORKLOAD\s+VIA\s+KEYS\s+LIVE\s+PODS\n/);
  assert.match(table.stdout, /\ndeployment\/web\s+env MODE\s+mode\s+yes\s+0\n/);
  assert.match(table.stdout, /keys of configmap .*\/app-config read by nobody: unused\./);
  const json = await runKubediffToCompletion([...base, '--used-by', 'cm/app-config', '-o', 'json'], {
    timeoutMs: 20_000,
  });
  assert.equal(json.code, 0, json.stderr);
  const answer = JSON.parse(json.stdout) as {
    object: { found: boolean };
    lastChange: string;
    usedBy: UsedBy;
  };
  assert.equal(answer.object.found, true);
  assert.deepEqual(names(answer.usedBy), ['Deployment/web']);
  assert.deepEqual(answer.usedBy.unreadKeys, ['unused']);
  // A Secret that does not exist yet: what waits for it; a name that is no ConfigMap or Secret: exit 2.
  const missing = await runKubediffToCompletion([...base, '--used-by', 'secret/nothing'], {
    timeoutMs: 20_000,
  });
  assert.equal(missing.code, 0, missing.stderr);
  assert.match(missing.stdout, /secret .*\/nothing does not exist \(yet\)/);
  const bad = await runKubediffToCompletion([...base, '--used-by', 'deployment/web'], { timeoutMs: 20_000 });
  assert.equal(bad.code, 2);
  assert.match(
    bad.stderr,
    /--used-by "deployment\/web" names no ConfigMap or Secret: give configmap\/<name> or secret\/<name>/,
  );
});
