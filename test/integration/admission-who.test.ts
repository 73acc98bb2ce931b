// Who made each change on an API server without any audit configuration: deploy/'s
// ValidatingWebhookConfiguration (failurePolicy Ignore, its rules and exclusions) registered on a real
// kube-apiserver and pointed at kubediff's --admission-listen on loopback (through a fault-injecting
// proxy, with a CA made for the test); the API server presents a client certificate and a bearer token
// (its AdmissionConfiguration), as a self-managed control plane can.
// - alice creates, bob patches, bob scales (the scale subresource), carol applies server-side, mallory's
//   dry run is ignored, alice deletes: each event names exactly that user (match: exact).
// - Forged reviews, with the API server's credentials (stolen, or an unauthenticated endpoint on a
//   managed cluster), do not rename real writes; without credentials they are refused.
// - A Secret's review carries its values: they reach no output, not the state file, not the UI's API,
//   not /metrics.
// - kubediff stopped: writes go through at once; black-holed: each write waits the webhook's timeout
//   (1 s here) and goes through, as the API server's own metrics show; restarted: attribution resumes.
// - A write another webhook refuses (kubediff reviewed it too) names nothing; the next write from the same
//   version names its own user.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Agent, request } from 'undici';
import {
  type AdmissionApiserver,
  admissionWebhookConfiguration,
  needsSharedEtcd,
  registerWebhook,
  startAdmissionApiserver,
  type TestUser,
  USERS,
} from '../helpers/admission-apiserver.ts';
import { type KubediffProcess, killAll, runKubediff } from '../helpers/cli.ts';
import type { TestEvent } from '../helpers/events.ts';
import { type FaultProxy, startFaultProxy } from '../helpers/fault-proxy.ts';
import { KubeAdmin, waitFor } from '../helpers/kube-admin.ts';
import { assertNoLeaks, fileSource, secretValue } from '../helpers/leak-check.ts';
import { parseMetrics, SERVING, scrapeMetrics } from '../helpers/metrics.ts';
import { makeTestPki, type TestPki } from '../helpers/pki.ts';
import { freePorts } from '../helpers/processes.ts';
import { seededRandom } from '../helpers/random-json.ts';

const READY = /watching \d+ resource types?/;
const UI = /serving the change history on (http:\/\/\S+?)\//;
const TOKEN = randomBytes(16).toString('hex');
const TIMEOUT_SECONDS = 1;

describe('who made it: the admission webhook, no audit configured', { skip: needsSharedEtcd() }, () => {
  let dir: string;
  let pki: TestPki;
  let port: number;
  let proxy: FaultProxy;
  let api: AdmissionApiserver;
  let admin: KubeAdmin;
  const as = {} as Record<TestUser, KubeAdmin>;
  let ns: string;
  let kd: KubediffProcess;
  let stateFile: string;
  let metricsBase: string;
  let uiBase: string;
  let unregister: () => Promise<void>;

  const cms = () => `/api/v1/namespaces/${ns}/configmaps`;
  const deploys = () => `/apis/apps/v1/namespaces/${ns}/deployments`;
  const eventOf = (type: TestEvent['type'], name: string, since = 0) =>
    kd.waitForEvent((event) => event.type === type && event.object.name === name, {
      since,
      description: `${type} ${name}`,
    });
  const kubediffArgs = () => [
    'watch',
    '--kubeconfig',
    api.kubeconfigPath,
    '-o',
    'json',
    '-n',
    ns,
    '-r',
    'configmaps',
    '-r',
    'deployments',
    '-r',
    'secrets',
    '--admission-listen',
    `127.0.0.1:${port}`,
    '--admission-cert',
    path.join(dir, 'tls.crt'),
    '--admission-key',
    path.join(dir, 'tls.key'),
    '--admission-client-ca',
    path.join(dir, 'ca.crt'),
    '--state',
    stateFile,
    '--listen',
    '127.0.0.1:0',
    '--ui',
    '127.0.0.1:0',
  ];
  const startKubediff = async () => {
    kd = runKubediff(kubediffArgs(), {
      env: { KUBEDIFF_ADMISSION_TOKEN: TOKEN },
      timeoutMs: 30_000,
      checkEvents: true,
    });
    await kd.waitForStderr(READY);
    metricsBase = (await kd.waitForStderr(SERVING))[1] as string;
    uiBase = (await kd.waitForStderr(UI))[1] as string;
  };
  /** Creates ConfigMaps as alice until one's event names her: the API server uses the webhook from then on. */
  const untilAttributed = async (prefix: string) => {
    for (let attempt = 0; attempt < 100; attempt++) {
      const name = `${prefix}-${attempt}`;
      const since = kd.events.length;
      await as.alice.create(cms(), { metadata: { name }, data: { a: '1' } });
      const added = await eventOf('ADDED', name, since);
      if (added.by?.user?.username === 'alice') return;
    }
    throw new Error('the webhook was never called');
  };

  /** A review as the API server would post it, naming `user` (mallory unless said otherwise). */
  const forged = (
    operation: string,
    object: Record<string, unknown> | null,
    options: {
      subResource?: string;
      resource?: string;
      kind?: { group: string; version: string; kind: string };
      oldObject?: Record<string, unknown> | null;
      user?: Record<string, unknown>;
    } = {},
  ) => {
    const { subResource } = options;
    const resource = options.resource ?? (subResource ? 'deployments' : 'configmaps');
    const group = resource === 'deployments' ? 'apps' : '';
    const name = ((object ?? options.oldObject)?.metadata as { name?: string } | undefined)?.name;
    return JSON.stringify({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: {
        uid: randomBytes(16).toString('hex'),
        kind:
          options.kind ??
          (subResource
            ? { group: 'autoscaling', version: 'v1', kind: 'Scale' }
            : { group, version: 'v1', kind: resource === 'deployments' ? 'Deployment' : 'ConfigMap' }),
        resource: { group, version: 'v1', resource },
        ...(subResource ? { subResource } : {}),
        namespace: ns,
        name,
        operation,
        userInfo: options.user ?? { username: 'mallory', groups: ['system:authenticated'] },
        object,
        oldObject: options.oldObject === undefined ? object : options.oldObject,
        dryRun: false,
      },
    });
  };
  /** alice as the API server names her. */
  const ALICE = { username: 'alice', uid: 'alice-uid', groups: ['devs', 'system:authenticated'] };
  /** Posts to kubediff's endpoint directly, with the API server's credentials (or none). */
  const post = async (body: string, credentials = true) => {
    const agent = new Agent({
      connect: { ca: pki.caPem, ...(credentials ? { cert: pki.clientCert, key: pki.clientKey } : {}) },
    });
    try {
      const response = await request(`https://127.0.0.1:${port}/review`, {
        method: 'POST',
        dispatcher: agent,
        headers: {
          'content-type': 'application/json',
          ...(credentials ? { authorization: `Bearer ${TOKEN}` } : {}),
        },
        body,
      });
      return { status: response.statusCode, body: await response.body.text() };
    } finally {
      await agent.close();
    }
  };
  const deployment = (name: string, replicas: number) => ({
    metadata: { name },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: 'c', image: 'busybox:1' }] },
      },
    },
  });

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'kubediff-admission-'));
    pki = makeTestPki();
    await writeFile(path.join(dir, 'tls.crt'), pki.serverCert, { mode: 0o600 });
    await writeFile(path.join(dir, 'tls.key'), pki.serverKey, { mode: 0o600 });
    await writeFile(path.join(dir, 'ca.crt'), pki.caPem, { mode: 0o600 });
    stateFile = path.join(dir, 'state.db');
    [port] = (await freePorts(1)) as [number];
    proxy = await startFaultProxy({ target: { host: '127.0.0.1', port } });
    api = await startAdmissionApiserver({
      credentials: {
        hostPort: `127.0.0.1:${proxy.port}`,
        clientCert: pki.clientCert,
        clientKey: pki.clientKey,
        token: TOKEN,
      },
    });
    admin = new KubeAdmin(api);
    ns = await admin.createNamespace('who');
    const rbac = `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}`;
    await admin.create(`${rbac}/roles`, {
      metadata: { name: 'editor' },
      rules: [
        { apiGroups: [''], resources: ['configmaps', 'secrets'], verbs: ['*'] },
        { apiGroups: ['apps'], resources: ['deployments', 'deployments/scale'], verbs: ['*'] },
      ],
    });
    for (const user of USERS) {
      await admin.create(`${rbac}/rolebindings`, {
        metadata: { name: `${user}-edit` },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'editor' },
        subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: user }],
      });
      as[user] = admin.as(api.tokens[user]);
    }
    await startKubediff();
    unregister = await registerWebhook(
      admin,
      await admissionWebhookConfiguration({
        name: `kubediff-who-${ns}`,
        url: `https://127.0.0.1:${proxy.port}/review`,
        caPem: pki.caPem,
        timeoutSeconds: TIMEOUT_SECONDS,
      }),
    );
    await untilAttributed('probe');
  });

  after(async () => {
    await kd?.stop().catch(() => {});
    await killAll();
    await unregister?.().catch(() => {});
    await Promise.all([...Object.values(as).map((client) => client.close()), admin?.close()]);
    await api?.stop();
    await proxy?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('alice creates, bob patches, bob scales, carol applies, mallory dry-runs, alice deletes: each named exactly', async () => {
    await as.alice.create(cms(), { metadata: { name: 'shared' }, data: { a: '1' } });
    const created = await eventOf('ADDED', 'shared');
    await as.bob.patch(`${cms()}/shared`, { data: { a: '2' } });
    const patched = await eventOf('UPDATED', 'shared');
    await as.alice.create(deploys(), {
      metadata: { name: 'web' },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: 'web' } },
        template: {
          metadata: { labels: { app: 'web' } },
          spec: { containers: [{ name: 'c', image: 'busybox:1' }] },
        },
      },
    });
    await eventOf('ADDED', 'web');
    await as.bob.patch(`${deploys()}/web/scale`, { spec: { replicas: 3 } });
    const scaled = await eventOf('UPDATED', 'web');
    assert.deepEqual(
      scaled.changes?.map(({ path, from, to }) => ({ path, from, to })),
      [{ path: '/spec/replicas', from: 1, to: 3 }],
    );
    let since = kd.events.length;
    await as.carol.send('PATCH', `${cms()}/shared`, {
      body: JSON.stringify({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'shared' },
        data: { b: 'carol' },
      }),
      contentType: 'application/apply-patch+yaml',
      query: { fieldManager: 'carol-tool', force: 'true' },
    });
    const applied = await eventOf('UPDATED', 'shared', since);
    // A dry run of the same write, from the same version, then a real one by alice.
    since = kd.events.length;
    await as.mallory.send('PATCH', `${cms()}/shared`, {
      body: { data: { a: 'mallory' } },
      contentType: 'application/merge-patch+json',
      query: { dryRun: 'All' },
    });
    await as.alice.patch(`${cms()}/shared`, { data: { a: 'alice' } });
    const afterDryRun = await eventOf('UPDATED', 'shared', since);
    assert.equal(afterDryRun.changes?.[0]?.to, 'alice', 'the dry run changed nothing');
    await as.alice.delete(`${cms()}/shared`);
    const deleted = await eventOf('DELETED', 'shared');

    const named = [created, patched, scaled, applied, afterDryRun, deleted].map((event) => [
      event.type,
      event.by?.user?.username,
      event.by?.match,
    ]);
    assert.deepEqual(named, [
      ['ADDED', 'alice', 'exact'],
      ['UPDATED', 'bob', 'exact'],
      ['UPDATED', 'bob', 'exact'],
      ['UPDATED', 'carol', 'exact'],
      ['UPDATED', 'alice', 'exact'],
      ['DELETED', 'alice', 'exact'],
    ]);
    assert.deepEqual(created.by?.user, {
      username: 'alice',
      groups: ['devs', 'system:authenticated'],
      uid: 'alice-uid',
    });
    assert.match(created.by?.reviewUID ?? '', /^[0-9a-f-]{36}$/);
    assert.equal(applied.by?.managers?.[0]?.manager, 'carol-tool', 'the field manager is still there');
    assert.deepEqual(
      kd.events.filter((event) => event.by?.user?.username === 'mallory'),
      [],
      'the dry run names nobody',
    );
    const metrics = await scrapeMetrics(metricsBase);
    assert.ok((metrics.get('kubediff_admission_events_joined_total{match="exact"}') ?? 0) >= 6);
    assert.ok((metrics.get('kubediff_admission_reviews_total{outcome="accepted"}') ?? 0) >= 6);
    assert.ok((metrics.get('kubediff_admission_answer_seconds_count{outcome="accepted"}') ?? 0) >= 6);
  });

  it('forged reviews do not rename a real write; without credentials they are refused', async () => {
    const target = await as.alice.create(cms(), { metadata: { name: 'target' }, data: { a: '1' } });
    await eventOf('ADDED', 'target');
    const web = await admin.get(`${deploys()}/web`);
    // Posted before the writes, for the versions the objects have now: one with another object, one of
    // the scale subresource with other replicas than the real write's.
    const refused = await post(forged('UPDATE', { ...target, data: { a: 'forged' } }), false);
    assert.equal(refused.status, 401, 'without credentials: refused');
    const accepted = await post(forged('UPDATE', { ...target, data: { a: 'forged' } }));
    assert.equal(accepted.status, 200);
    assert.equal((JSON.parse(accepted.body) as { response: { allowed: boolean } }).response.allowed, true);
    const scale = {
      metadata: {
        name: 'web',
        namespace: ns,
        uid: web.metadata.uid,
        resourceVersion: web.metadata.resourceVersion,
      },
      spec: { replicas: 9 },
    };
    assert.equal((await post(forged('UPDATE', scale, { subResource: 'scale' }))).status, 200);

    await as.bob.patch(`${cms()}/target`, { data: { a: '2' } });
    const patched = await eventOf('UPDATED', 'target');
    const since = kd.events.length;
    await as.bob.patch(`${deploys()}/web/scale`, { spec: { replicas: 4 } });
    const scaled = await eventOf('UPDATED', 'web', since);
    // Posted after the write: it names nothing.
    assert.equal((await post(forged('UPDATE', { ...target, data: { a: 'late' } }))).status, 200);

    assert.deepEqual([patched.by?.user?.username, patched.by?.match], ['bob', 'exact']);
    assert.deepEqual(
      [scaled.by?.user?.username, scaled.by?.match],
      ['bob', 'exact'],
      'a scale forged beside the real one with other replicas is of another write',
    );
    assert.deepEqual(
      kd.events.filter((event) => event.by?.user?.username === 'mallory'),
      [],
      'no write is renamed',
    );
  });

  it('a forged UPDATE that predicts the object beside a real scale (issue 36): ambiguous, never the forger', async () => {
    await as.alice.create(deploys(), deployment('scaled', 1));
    await eventOf('ADDED', 'scaled');
    // What a forger who can read the Deployment posts: a copy (uid and resourceVersion included, no
    // status) with each replica count a scale might set, naming alice.
    const { status: _status, ...copy } = await admin.get(`${deploys()}/scaled`);
    for (let replicas = 1; replicas <= 10; replicas++) {
      const object = { ...copy, spec: { ...(copy.spec as object), replicas } };
      const answer = await post(forged('UPDATE', object, { resource: 'deployments', user: ALICE }));
      assert.equal(answer.status, 200);
    }
    const since = kd.events.length;
    await as.bob.patch(`${deploys()}/scaled/scale`, { spec: { replicas: 7 } });
    const scaled = await eventOf('UPDATED', 'scaled', since);
    assert.deepEqual(
      scaled.changes?.map(({ path, from, to }) => ({ path, from, to })),
      [{ path: '/spec/replicas', from: 1, to: 7 }],
    );
    // The forged review whose object is the stored one and bob's scale (its replicas are the new
    // object's) both pass their checks: they disagree, so nobody is named.
    assert.deepEqual([scaled.by?.user, scaled.by?.match], [undefined, 'ambiguous']);
    // Without the forgery, the next scale names bob.
    const next = kd.events.length;
    await as.bob.patch(`${deploys()}/scaled/scale`, { spec: { replicas: 2 } });
    const again = await eventOf('UPDATED', 'scaled', next);
    assert.deepEqual([again.by?.user?.username, again.by?.match], ['bob', 'exact']);
  });

  it('a forged DELETE beside the update that removed the last finalizer (issue 36): never the forger', async () => {
    const held = (name: string) =>
      as.mallory.create(cms(), {
        metadata: { name, finalizers: ['test.kubediff.io/hold'] },
        data: { a: '1' },
      });
    await held('held');
    await eventOf('ADDED', 'held');
    let since = kd.events.length;
    // `kubectl delete --wait=false`: the object stays, with deletionTimestamp, until the finalizer goes.
    await as.mallory.delete(`${cms()}/held`);
    const deleting = await eventOf('UPDATED', 'held', since);
    assert.deepEqual(
      [deleting.by?.user?.username, deleting.by?.match],
      ['mallory', 'exact'],
      'the DELETE names the UPDATED that sets deletionTimestamp: its old object is the state before',
    );
    // A forged DELETE that carries only the uid and the resourceVersion, naming alice.
    const current = await admin.get(`${cms()}/held`);
    const { name, uid, resourceVersion } = current.metadata;
    const bare = { metadata: { name, namespace: ns, uid, resourceVersion } };
    assert.equal((await post(forged('DELETE', null, { oldObject: bare, user: ALICE }))).status, 200);
    since = kd.events.length;
    await as.mallory.patch(`${cms()}/held`, { metadata: { finalizers: null } });
    const deleted = await eventOf('DELETED', 'held', since);
    assert.deepEqual([deleted.by?.user?.username, deleted.by?.match], ['mallory', 'exact']);

    // A forger who copies the whole object: its DELETE passes the check, and disagrees with mallory's
    // update, which cannot be checked: nobody is named.
    await held('held-2');
    await eventOf('ADDED', 'held-2');
    since = kd.events.length;
    await as.mallory.delete(`${cms()}/held-2`);
    await eventOf('UPDATED', 'held-2', since);
    const whole = await admin.get(`${cms()}/held-2`);
    assert.equal((await post(forged('DELETE', null, { oldObject: whole, user: ALICE }))).status, 200);
    since = kd.events.length;
    await as.mallory.patch(`${cms()}/held-2`, { metadata: { finalizers: null } });
    const hidden = await eventOf('DELETED', 'held-2', since);
    assert.deepEqual([hidden.by?.user, hidden.by?.match], [undefined, 'ambiguous']);
    assert.deepEqual(
      kd.events.filter(
        (event) => event.by?.user?.username === 'alice' && event.object.name.startsWith('held'),
      ),
      [],
      'no write is renamed',
    );
  });

  it('a forged review nested 500,000 deep (issue 36) is dropped and counted: the real scale names bob', async () => {
    await as.alice.create(deploys(), deployment('deep', 1));
    await eventOf('ADDED', 'deep');
    const { metadata } = await admin.get(`${deploys()}/deep`);
    const depth = 500_000;
    const head = forged(
      'UPDATE',
      { metadata: { name: 'deep', namespace: ns, uid: metadata.uid }, spec: {} },
      {
        resource: 'deployments',
        user: ALICE,
        oldObject: {
          metadata: { name: 'deep', uid: metadata.uid, resourceVersion: metadata.resourceVersion },
        },
      },
    );
    // The object's spec.x, nested far deeper than the digest can follow.
    const body = head.replace('"spec":{}', `"spec":{"x":${'['.repeat(depth)}${']'.repeat(depth)}}`);
    assert.equal((await post(body)).status, 200);
    const since = kd.events.length;
    await as.bob.patch(`${deploys()}/deep/scale`, { spec: { replicas: 3 } });
    const scaled = await eventOf('UPDATED', 'deep', since);
    assert.deepEqual([scaled.by?.user?.username, scaled.by?.match], ['bob', 'exact']);
    // A body of 1 MB is read in the admission thread, after its answer: its drop is awaited, not raced.
    const dropped = async () =>
      (await scrapeMetrics(metricsBase)).get(
        'kubediff_admission_reviews_ignored_total{reason="digest_failed"}',
      );
    assert.equal(await waitFor(dropped, { what: 'the deep review dropped as digest_failed' }), 1);
    await kd.waitForStderr(/dropped a review whose object cannot be digested \(nested too deep\)/);
  });

  it("a Secret's review carries its values: they reach no output, not the state file, not the UI's API", async () => {
    const random = seededRandom(28);
    const secrets = `/api/v1/namespaces/${ns}/secrets`;
    await as.alice.create(secrets, {
      metadata: { name: 'creds', annotations: { note: secretValue(random, 20) } },
      stringData: { password: secretValue(random, 40) },
    });
    const added = await eventOf('ADDED', 'creds');
    await as.bob.patch(`${secrets}/creds`, { stringData: { password: secretValue(random, 40) } });
    const updated = await eventOf('UPDATED', 'creds');
    await as.alice.delete(`${secrets}/creds`);
    const deleted = await eventOf('DELETED', 'creds');
    assert.deepEqual(
      [added, updated, deleted].map((event) => [event.by?.user?.username, event.by?.match]),
      [
        ['alice', 'exact'],
        ['bob', 'exact'],
        ['alice', 'exact'],
      ],
    );
    // The UI reads what the state file has committed: the Secret's events, once they are there.
    const ui = () =>
      waitFor(
        async () => {
          const events = await (await fetch(`${uiBase}/api/v1/events?limit=500`)).text();
          if (!/"DELETED"[^}]*"creds"|"creds"[^}]*"DELETED"/.test(events)) return undefined;
          const query = `kind=secrets&namespace=${ns}&name=creds`;
          const history = await (await fetch(`${uiBase}/api/v1/object?${query}`)).text();
          const rebuildable = (JSON.parse(history) as { rebuildable: number[] }).rebuildable;
          const versions = await (
            await fetch(`${uiBase}/api/v1/object?${query}&a=${rebuildable.at(-1)}&b=${rebuildable[0]}`)
          ).text();
          return `${events}\n${history}\n${versions}`;
        },
        { what: "the Secret's events in the UI's API" },
      );
    await assertNoLeaks([
      { name: 'stdout', read: () => kd.stdout, expect: /<redacted sha256:/ },
      { name: 'stderr', read: () => kd.stderr, expect: 'receiving admission reviews' },
      { name: 'the UI API', read: ui, expect: /redacted sha256:/ },
      {
        name: '/metrics',
        read: async () => (await fetch(`${metricsBase}/metrics`)).text(),
        expect: 'kubediff_admission',
      },
      fileSource('state file', stateFile),
      fileSource('state file -wal', `${stateFile}-wal`),
    ]);
  });

  it('kubediff black-holed: each write waits the timeout and goes through; stopped: at once; restarted: attribution resumes', async () => {
    const apiMetrics = async () =>
      parseMetrics(await admin.request('GET', '/metrics').then((response) => response.text));
    const failedOpen = (metrics: Map<string, number>) =>
      [...metrics]
        .filter(([key]) => key.startsWith('apiserver_admission_webhook_fail_open_count'))
        .reduce((sum, [, value]) => sum + value, 0);
    const before = failedOpen(await apiMetrics());
    proxy.blackhole(true);
    try {
      await as.alice.create(cms(), { metadata: { name: 'in-the-dark' }, data: { a: '1' } });
      const started = Date.now();
      await as.bob.patch(`${cms()}/in-the-dark`, { data: { a: '2' } });
      const waited = Date.now() - started;
      // It waited for the timeout: the call was made and cut, not refused.
      assert.ok(waited >= TIMEOUT_SECONDS * 1000, `the write took ${waited} ms`);
      const dark = await eventOf('UPDATED', 'in-the-dark');
      assert.equal(dark.by?.user, undefined, 'nobody named');
    } finally {
      proxy.blackhole(false);
    }
    const afterDark = await apiMetrics();
    assert.equal(failedOpen(afterDark) - before, 2, 'both writes failed open');
    await kd.stop();
    await as.alice.create(cms(), { metadata: { name: 'while-down' }, data: { a: '1' } });
    await as.bob.patch(`${cms()}/while-down`, { data: { a: '2' } });
    assert.equal(failedOpen(await apiMetrics()) - before, 4, 'the writes went through without kubediff');
    await startKubediff();
    await untilAttributed('back');
    const since = kd.events.length;
    await as.carol.patch(`${cms()}/while-down`, { data: { a: '3' } });
    const again = await eventOf('UPDATED', 'while-down', since);
    assert.deepEqual([again.by?.user?.username, again.by?.match], ['carol', 'exact']);
  });

  it('a write another webhook refuses names nothing: the next write from the same version names its user', async (t) => {
    // A policy webhook of the cluster's (as Kyverno or Gatekeeper would be) that refuses mallory's updates.
    // Validating webhooks are called side by side: kubediff reviews the write it refuses.
    const policy = createHttpsServer({ cert: pki.serverCert, key: pki.serverKey }, (req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => {
        body += chunk.toString('utf8');
      });
      req.on('end', () => {
        const { request: review } = JSON.parse(body) as {
          request: { uid: string; userInfo: { username: string } };
        };
        const allowed = review.userInfo.username !== 'mallory';
        res.setHeader('content-type', 'application/json');
        res.end(
          JSON.stringify({
            apiVersion: 'admission.k8s.io/v1',
            kind: 'AdmissionReview',
            response: {
              uid: review.uid,
              allowed,
              ...(allowed ? {} : { status: { code: 403, message: 'not mallory' } }),
            },
          }),
        );
      });
    });
    await new Promise<void>((resolve) => policy.listen(0, '127.0.0.1', resolve));
    t.after(() => new Promise<void>((resolve) => policy.close(() => resolve())));
    t.after(() => policy.closeAllConnections());
    const collection = '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations';
    const name = `deny-mallory-${ns}`;
    await admin.create(collection, {
      metadata: { name },
      webhooks: [
        {
          name: 'deny-mallory.test.kubediff.io',
          admissionReviewVersions: ['v1'],
          sideEffects: 'None',
          failurePolicy: 'Fail',
          clientConfig: {
            url: `https://127.0.0.1:${(policy.address() as AddressInfo).port}/`,
            caBundle: Buffer.from(pki.caPem).toString('base64'),
          },
          rules: [
            { apiGroups: [''], apiVersions: ['v1'], operations: ['UPDATE'], resources: ['configmaps'] },
          ],
        },
      ],
    });
    t.after(() => admin.delete(`${collection}/${name}`, { ignoreNotFound: true }));
    await as.alice.create(cms(), { metadata: { name: 'guarded' }, data: { a: '1' } });
    await eventOf('ADDED', 'guarded');
    // The API server takes the policy into use a moment after it is created: mallory tries until refused.
    let refused = false;
    for (let attempt = 0; !refused; attempt++) {
      assert.ok(attempt < 100, 'the policy webhook was never called');
      const answer = await as.mallory.request('PATCH', `${cms()}/guarded`, {
        body: { data: { a: `mallory-${attempt}` } },
        contentType: 'application/merge-patch+json',
      });
      refused = answer.status === 403 && answer.text.includes('not mallory');
      if (!refused) await eventOf('UPDATED', 'guarded', kd.events.length - 1);
    }
    // The refused write was reviewed from the version the object has now; bob's write replaces that version.
    const since = kd.events.length;
    await as.bob.patch(`${cms()}/guarded`, { data: { a: 'bob' } });
    const updated = await eventOf('UPDATED', 'guarded', since);
    assert.deepEqual([updated.by?.user?.username, updated.by?.match], ['bob', 'exact']);
    const metrics = await scrapeMetrics(metricsBase);
    assert.ok(
      (metrics.get('kubediff_admission_records_superseded_total') ?? 0) >= 1,
      "mallory's review was dropped when bob's change went by",
    );
  });
});
