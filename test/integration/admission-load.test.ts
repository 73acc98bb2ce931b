// The admission webhook as on a managed cluster (no credentials from the API server, so
// --admission-allow-unauthenticated, docs/who.md): deploy/'s ValidatingWebhookConfiguration on a real
// kube-apiserver, pointed at kubediff on loopback, while whoever reaches the port loads it (issue 36):
// - slow bodies: 16 keep-alive connections from two other addresses, each finishing a review's body and
//   starting the next every 950 ms, so that every read is always younger than the 1 s slow-body cut;
// - large reviews: 2 clients posting reviews of a ConfigMap of 420,000 keys (7.8 MiB), the next half a
//   second after one is answered (each took seconds of the thread that answers on f1483ba; the bench
//   posts 4 without a pause, which here would take the CPU from the test files running beside this one).
// Under each, the API server's own reviews are answered in time: every write names its user exactly and
// the API server's apiserver_admission_webhook_fail_open_count does not move; reviews posted beside them
// are each answered 200 with their own uid, and /healthz answers. (How fast is the bench's, figure 13.)
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Agent } from 'undici';
import {
  type AdmissionApiserver,
  admissionWebhookConfiguration,
  needsSharedEtcd,
  registerWebhook,
  startAdmissionApiserver,
} from '../helpers/admission-apiserver.ts';
import { type Load, largeReviews, postReview, reviewBody, slowBodies } from '../helpers/admission-load.ts';
import { type KubediffProcess, killAll, runKubediff } from '../helpers/cli.ts';
import { KubeAdmin } from '../helpers/kube-admin.ts';
import { parseMetrics, SERVING } from '../helpers/metrics.ts';
import { makeTestPki, type TestPki } from '../helpers/pki.ts';
import { freePorts } from '../helpers/processes.ts';

const READY = /watching \d+ resource types?/;
const TIMEOUT_SECONDS = 1;

describe('the admission webhook, unauthenticated, under slow bodies and large reviews', {
  skip: needsSharedEtcd(),
}, () => {
  let dir: string;
  let pki: TestPki;
  let port: number;
  let api: AdmissionApiserver;
  let admin: KubeAdmin;
  let alice: KubeAdmin;
  let ns: string;
  let kd: KubediffProcess;
  let health: string;
  let unregister: () => Promise<void>;
  const agent = () => new Agent({ connect: { ca: pki.caPem }, connections: 1 });
  const cms = () => `/api/v1/namespaces/${ns}/configmaps`;

  const failedOpen = async () =>
    [...parseMetrics((await admin.request('GET', '/metrics')).text)]
      .filter(([key]) => key.startsWith('apiserver_admission_webhook_fail_open_count'))
      .reduce((sum, [, value]) => sum + value, 0);

  /** `writes` patches by alice, each awaited to its event: who each event names, and how. */
  const write = async (name: string, writes: number) => {
    const named: string[] = [];
    for (let seq = 0; seq < writes; seq++) {
      const since = kd.events.length;
      await alice.patch(`${cms()}/${name}`, { data: { seq: String(seq) } });
      const event = await kd.waitForEvent(
        (candidate) => candidate.object.name === name && candidate.changes?.[0]?.to === String(seq),
        { since, description: `${name} seq ${seq}` },
      );
      named.push(`${event.by?.user?.username} ${event.by?.match}`);
    }
    return named;
  };

  /** Reviews posted straight to kubediff beside the load: each answered 200 with its own uid? */
  const reviews = async (count: number) => {
    const client = agent();
    const answers: string[] = [];
    try {
      for (let index = 0; index < count; index++) {
        const uid = randomUUID();
        const answer = await postReview(client, `https://127.0.0.1:${port}/review`, reviewBody(uid));
        answers.push(
          answer.status === 200 && answer.uid === uid && answer.allowed ? 'ok' : JSON.stringify(answer),
        );
        const healthz = await fetch(`${health}/healthz`);
        await healthz.text();
        if (healthz.status !== 200) answers.push(`/healthz ${healthz.status}`);
      }
    } finally {
      await client.close();
    }
    return answers;
  };

  /** Under `load`: writes named, the fail-open count unchanged, reviews answered. */
  const underLoad = async (name: string, load: Load, ready: () => boolean) => {
    try {
      while (!ready()) await new Promise((resolve) => setTimeout(resolve, 10));
      const before = await failedOpen();
      const named = await write(name, 10);
      const answers = await reviews(10);
      assert.deepEqual(
        named,
        Array(10).fill('alice exact'),
        "every write names its user: the API server's review was answered",
      );
      assert.equal((await failedOpen()) - before, 0, 'no write failed open');
      assert.deepEqual(answers, Array(10).fill('ok'), 'every review answered 200 with its uid');
    } finally {
      await load.stop();
    }
  };

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'kubediff-admission-load-'));
    pki = makeTestPki();
    await writeFile(path.join(dir, 'tls.crt'), pki.serverCert, { mode: 0o600 });
    await writeFile(path.join(dir, 'tls.key'), pki.serverKey, { mode: 0o600 });
    [port] = (await freePorts(1)) as [number];
    // No credentials: as EKS, GKE and AKS.
    api = await startAdmissionApiserver();
    admin = new KubeAdmin(api);
    ns = await admin.createNamespace('load');
    const rbac = `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}`;
    await admin.create(`${rbac}/roles`, {
      metadata: { name: 'configmaps' },
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['*'] }],
    });
    await admin.create(`${rbac}/rolebindings`, {
      metadata: { name: 'alice' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'configmaps' },
      subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'alice' }],
    });
    alice = admin.as(api.tokens.alice);
    kd = runKubediff(
      [
        'watch',
        '--kubeconfig',
        api.kubeconfigPath,
        '-o',
        'json',
        '-n',
        ns,
        '-r',
        'configmaps',
        '--admission-listen',
        `127.0.0.1:${port}`,
        '--admission-cert',
        path.join(dir, 'tls.crt'),
        '--admission-key',
        path.join(dir, 'tls.key'),
        '--admission-allow-unauthenticated',
        '--listen',
        '127.0.0.1:0',
      ],
      { timeoutMs: 30_000, checkEvents: true },
    );
    await kd.waitForStderr(READY);
    health = (await kd.waitForStderr(SERVING))[1] as string;
    unregister = await registerWebhook(
      admin,
      await admissionWebhookConfiguration({
        name: `kubediff-load-${ns}`,
        url: `https://127.0.0.1:${port}/review`,
        caPem: pki.caPem,
        timeoutSeconds: TIMEOUT_SECONDS,
      }),
    );
    // The API server takes the webhook into use a moment after it is created.
    for (let attempt = 0; ; attempt++) {
      assert.ok(attempt < 100, 'the webhook was never called');
      const name = `probe-${attempt}`;
      const since = kd.events.length;
      await alice.create(cms(), { metadata: { name }, data: { seq: '-1' } });
      const added = await kd.waitForEvent((event) => event.type === 'ADDED' && event.object.name === name, {
        since,
        description: `ADDED ${name}`,
      });
      if (added.by?.user?.username === 'alice') break;
    }
  });

  after(async () => {
    await kd?.stop().catch(() => {});
    await killAll();
    await unregister?.().catch(() => {});
    await Promise.all([alice?.close(), admin?.close()]);
    await api?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('slow bodies holding every read from two addresses: the API server still reviews every write in time', async () => {
    await alice.create(cms(), { metadata: { name: 'under-slow-bodies' }, data: { seq: '-1' } });
    const attack = slowBodies({
      port,
      ca: pki.caPem,
      addresses: ['127.0.0.2', '127.0.0.3'],
      perAddress: 8,
      cycleMs: 950,
    });
    // Every read taken: the attack's own surplus requests are refused.
    await underLoad('under-slow-bodies', attack, () => attack.statuses.has(503));
  });

  it('reviews of 7.8 MiB posted again and again: the API server still reviews every write in time', async () => {
    await alice.create(cms(), { metadata: { name: 'under-large-reviews' }, data: { seq: '-1' } });
    const load = largeReviews({
      url: `https://127.0.0.1:${port}/review`,
      ca: pki.caPem,
      clients: 2,
      keys: 420_000,
      pauseMs: 500,
    });
    // Each client has had a review answered: they are being read, or have been.
    await underLoad('under-large-reviews', load, () => (load.statuses.get(200) ?? 0) >= 2);
  });
});
