// The admission webhook's certificate managed by kubediff (--admission-cert-secret, docs/who.md "The
// certificate"), against a real kube-apiserver: its webhook calls a Service (type ExternalName, to
// loopback: the test machine has no Service network), and verifies kubediff's serving certificate with the
// caBundle kubediff set in it, for the Service's name, as in a cluster.
// - An empty Secret is filled, the webhook's caBundle set, and the API server's reviews reach kubediff over
//   TLS: writes name their user.
// - Two kubediff processes started at once on the same empty Secret converge: one CA, and both serve the
//   certificate the Secret holds.
// - A certificate near its end is rotated (new CA trusted, new certificate served, old CA dropped) while a
//   user writes all along: every write names its user, none goes out without (no failed review).
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import { connect } from 'node:tls';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { BACKDATE_MS, certificatesOf } from '../../src/who/certificate/certificate-plan.ts';
import { makeCertificateSet } from '../../src/who/certificate/self-signed-ca.ts';
import {
  type AdmissionApiserver,
  needsSharedEtcd,
  startAdmissionApiserver,
} from '../helpers/admission-apiserver.ts';
import { type KubediffProcess, killAll, runKubediff } from '../helpers/cli.ts';
import { KubeAdmin, type KubeObject, waitFor } from '../helpers/kube-admin.ts';
import { parseMetrics } from '../helpers/metrics.ts';
import { freePorts } from '../helpers/processes.ts';

const READY = /watching \d+ resource types?/;
const COMPONENT = fileURLToPath(
  new URL('../../deploy/components/admission/validatingwebhookconfiguration.yaml', import.meta.url),
);
const WEBHOOKS = '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations';

describe('a certificate kubediff manages', { skip: needsSharedEtcd() }, () => {
  let api: AdmissionApiserver;
  let admin: KubeAdmin;
  let alice: KubeAdmin;
  /** kubediff's namespace (the Secret, the Service), and where alice writes. */
  let home: string;
  let writes: string;
  const started: KubediffProcess[] = [];

  before(async () => {
    api = await startAdmissionApiserver();
    admin = new KubeAdmin(api);
    home = await admin.createNamespace('kd');
    writes = await admin.createNamespace('writes');
    const rbac = `/apis/rbac.authorization.k8s.io/v1/namespaces/${writes}`;
    await admin.create(`${rbac}/roles`, {
      metadata: { name: 'editor' },
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['*'] }],
    });
    await admin.create(`${rbac}/rolebindings`, {
      metadata: { name: 'alice-edit' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'editor' },
      subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'alice' }],
    });
    alice = admin.as(api.tokens.alice);
  });

  after(async () => {
    for (const kd of started) await kd.stop().catch(() => {});
    await killAll();
    await Promise.all([alice?.close(), admin?.close()]);
    await api?.stop();
  });

  /** deploy/'s webhook, named `name`, calling the Service `service` of kubediff's namespace on `port`, no caBundle. */
  const install = async (name: string, service: string, port: number) => {
    await admin.create(`/api/v1/namespaces/${home}/secrets`, {
      metadata: { name: `${name}-certificate` },
      type: 'Opaque',
    });
    await admin.create(`/api/v1/namespaces/${home}/services`, {
      metadata: { name: service },
      spec: { type: 'ExternalName', externalName: '127.0.0.1' },
    });
    const manifest = parse(await readFile(COMPONENT, 'utf8')) as KubeObject & {
      webhooks: Record<string, unknown>[];
    };
    await admin.create(WEBHOOKS, {
      ...manifest,
      metadata: { name },
      webhooks: manifest.webhooks.map((webhook) => ({
        ...webhook,
        clientConfig: { service: { namespace: home, name: service, path: '/review', port } },
        // Only the namespace this test writes in: the API server's own writes elsewhere stay out.
        namespaceSelector: {
          matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: [writes] }],
        },
      })),
    });
    return async () => admin.delete(`${WEBHOOKS}/${name}`, { ignoreNotFound: true });
  };

  const start = (name: string, service: string, port: number) => {
    const kd = runKubediff(
      [
        'watch',
        '--kubeconfig',
        api.kubeconfigPath,
        '-o',
        'json',
        '-n',
        writes,
        '-r',
        'configmaps',
        '--admission-listen',
        `127.0.0.1:${port}`,
        '--admission-allow-unauthenticated',
        '--admission-cert-secret',
        `${name}-certificate`,
        '--admission-service',
        service,
        '--admission-webhook-config',
        name,
      ],
      {
        env: { POD_NAMESPACE: home, KUBEDIFF_ADMISSION_CERT_CHECK_INTERVAL: '1s' },
        timeoutMs: 120_000,
        checkEvents: true,
      },
    );
    started.push(kd);
    return kd;
  };

  const secretData = async (name: string) => {
    const secret = await admin.get(`/api/v1/namespaces/${home}/secrets/${name}-certificate`);
    const data = (secret.data ?? {}) as Record<string, string>;
    return Object.fromEntries(
      Object.entries(data).map(([key, value]) => [key, Buffer.from(value, 'base64').toString()]),
    );
  };
  const caBundle = async (name: string) => {
    const configuration = await admin.get(`${WEBHOOKS}/${name}`);
    const [webhook] = configuration.webhooks as { clientConfig: { caBundle?: string } }[];
    return webhook?.clientConfig.caBundle
      ? Buffer.from(webhook.clientConfig.caBundle, 'base64').toString()
      : undefined;
  };
  /**
   * Reviews of deploy/'s webhook (who.kubediff.io: the API server counts by webhook, not configuration;
   * each test's configuration is gone after it) that failed and let the write through.
   */
  const failedOpen = async () => {
    const metrics = parseMetrics((await admin.request('GET', '/metrics')).text);
    return [...metrics]
      .filter(
        ([key]) =>
          key.startsWith('apiserver_admission_webhook_fail_open_count') && key.includes('who.kubediff.io'),
      )
      .reduce((sum, [, value]) => sum + value, 0);
  };
  /** The certificate a listener serves, as a client sees it in the handshake. */
  const served = (port: number, servername: string) =>
    new Promise<string>((resolve, reject) => {
      const socket = connect({ host: '127.0.0.1', port, servername, rejectUnauthorized: false }, () => {
        const fingerprint = socket.getPeerCertificate().fingerprint256;
        socket.end();
        resolve(fingerprint);
      });
      socket.once('error', reject);
    });
  /** alice writes; the event must name her: the API server's review reached kubediff over verified TLS. */
  const attributed = async (kd: KubediffProcess, name: string) => {
    const since = kd.events.length;
    await alice.create(`/api/v1/namespaces/${writes}/configmaps`, { metadata: { name }, data: { a: '1' } });
    const event = await kd.waitForEvent((e) => e.type === 'ADDED' && e.object.name === name, { since });
    return event.by?.user?.username;
  };

  it('an empty Secret is filled, the caBundle set, and reviews reach kubediff over TLS, naming their user', async (t) => {
    const [port] = (await freePorts(1)) as [number];
    const name = 'kd-who-single';
    const service = 'kd-admission-single';
    t.after(await install(name, service, port));
    const kd = start(name, service, port);
    await kd.waitForStderr(/made a CA and a serving certificate for kd-admission-single\.kd-\S+\.svc/);
    await kd.waitForStderr(READY);
    await kd.waitForStderr(/set the caBundle of the ValidatingWebhookConfiguration kd-who-single/);
    const data = await secretData(name);
    assert.deepEqual(Object.keys(data).sort(), ['ca.crt', 'tls.crt', 'tls.key']);
    assert.equal(await caBundle(name), data['ca.crt'], "the webhook trusts the Secret's CA");
    const cert = new X509Certificate(data['tls.crt'] ?? '');
    assert.equal(cert.checkHost(`${service}.${home}.svc`), `${service}.${home}.svc`);
    assert.equal(await served(port, `${service}.${home}.svc`), cert.fingerprint256, 'kubediff serves it');
    // The API server takes the caBundle into use a moment after it is set: write until a review names alice.
    let user: string | undefined;
    for (let attempt = 0; user !== 'alice'; attempt++) {
      assert.ok(attempt < 50, 'no review reached kubediff');
      user = await attributed(kd, `single-${attempt}`);
    }
    assert.equal(await attributed(kd, 'single-after'), 'alice');
  });

  it('two processes started at once on the same empty Secret converge on one certificate', async (t) => {
    const [first, second] = (await freePorts(2)) as [number, number];
    const name = 'kd-who-pair';
    const service = 'kd-admission-pair';
    t.after(await install(name, service, first));
    const pair = [start(name, service, first), start(name, service, second)];
    await Promise.all(pair.map((kd) => kd.waitForStderr(READY)));
    const data = await secretData(name);
    const cert = new X509Certificate(data['tls.crt'] ?? '');
    const host = `${service}.${home}.svc`;
    assert.deepEqual(
      [await served(first, host), await served(second, host)],
      [cert.fingerprint256, cert.fingerprint256],
      'both serve what the Secret holds',
    );
    assert.equal(certificatesOf(data['ca.crt']).length, 1, 'one CA');
    const made = pair.filter((kd) => /made a CA and a serving certificate/.test(kd.stderr));
    assert.equal(made.length, 1, 'one of them made it; the other read it');
    await waitFor(async () => (await caBundle(name)) === data['ca.crt'], { what: 'the caBundle set' });
  });

  it('a certificate near its end is rotated while alice writes, and every write names her', async (t) => {
    const [port] = (await freePorts(1)) as [number];
    const name = 'kd-who-rotate';
    const service = 'kd-admission-rotate';
    t.after(await install(name, service, port));
    const host = `${service}.${home}.svc`;
    // Made as kubediff makes them, but ending in an hour: within the renewal window (a third of a year).
    const now = Date.now();
    const old = await makeCertificateSet({
      dnsNames: [host, `${host}.cluster.local`],
      caName: 'an old CA',
      notBefore: new Date(now - BACKDATE_MS),
      notAfter: new Date(now + 3600_000),
    });
    const secretPath = `/api/v1/namespaces/${home}/secrets/${name}-certificate`;
    const b64 = (text: string) => Buffer.from(text).toString('base64');
    await admin.patch(secretPath, {
      data: { 'tls.crt': b64(old.certPem), 'tls.key': b64(old.keyPem), 'ca.crt': b64(old.caPem) },
    });
    // The webhook trusts the old CA already, as it did before the certificate neared its end.
    const configuration = await admin.get(`${WEBHOOKS}/${name}`);
    await admin.patch(
      `${WEBHOOKS}/${name}`,
      [
        { op: 'test', path: '/metadata/resourceVersion', value: configuration.metadata.resourceVersion },
        { op: 'add', path: '/webhooks/0/clientConfig/caBundle', value: b64(old.caPem) },
      ],
      'json',
    );
    const kd = start(name, service, port);
    await kd.waitForStderr(READY);
    let user: string | undefined;
    for (let attempt = 0; user !== 'alice'; attempt++) {
      assert.ok(attempt < 50, 'no review reached kubediff');
      user = await attributed(kd, `before-${attempt}`);
    }
    // From here on every write must name alice and no review may fail: the rotation never serves what the
    // API server does not trust.
    const failedBefore = await failedOpen();
    const oldFingerprint = new X509Certificate(old.certPem).fingerprint256;
    const users: (string | undefined)[] = [];
    let trimmed = false;
    // The rotation takes two overlaps (2 s each here) and the checks between them, however many writes fit in
    // that time on this machine: the bound is a time, far past it, not a number of writes.
    const deadline = Date.now() + 120_000;
    for (let index = 0; !trimmed || users.length < 5; index++) {
      assert.ok(Date.now() < deadline, `not rotated after ${index} writes: ${kd.stderr.slice(-2000)}`);
      users.push(await attributed(kd, `during-${index}`));
      const data = await secretData(name);
      const cas = certificatesOf(data['ca.crt']);
      trimmed =
        new X509Certificate(data['tls.crt'] ?? '').fingerprint256 !== oldFingerprint &&
        cas.length === 1 &&
        cas[0]?.toString() !== old.caPem &&
        (await served(port, host)) === new X509Certificate(data['tls.crt'] ?? '').fingerprint256 &&
        (await caBundle(name)) === data['ca.crt'];
    }
    assert.deepEqual(
      users.filter((who) => who !== 'alice'),
      [],
      `${users.length} writes during the rotation, each reviewed`,
    );
    assert.equal((await failedOpen()) - failedBefore, 0, 'no review failed (the API server counts none)');
    for (const step of [
      /made the next CA and certificate/,
      /serving the next certificate/,
      /the previous CA is no longer trusted/,
    ])
      assert.match(kd.stderr, step);
  });
});
