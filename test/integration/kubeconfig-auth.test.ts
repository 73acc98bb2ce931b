// Every way a kubeconfig can authenticate, against the real API server: a token, a token file, a client
// certificate (files, and inline data), an exec credential plugin. Each run watches ConfigMaps of one
// namespace and must report one created after it is ready: the API server accepted its credentials for
// discovery, the LIST and the WATCH. File paths are relative, as kubectl allows (to the kubeconfig's
// folder). The in-cluster ServiceAccount, with a rotated token, is incluster-token-rotation.test.ts.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { killAll, runKubediff, runKubediffToCompletion } from '../helpers/cli.ts';
import { testCluster } from '../helpers/cluster-env.ts';
import { matching } from '../helpers/events.ts';
import { adminClient, type KubeAdmin } from '../helpers/kube-admin.ts';

let admin: KubeAdmin;
let namespace: string;
let dir: string;

before(async () => {
  admin = adminClient();
  namespace = await admin.createNamespace('auth');
  dir = await mkdtemp(path.join(os.tmpdir(), 'kubediff-auth-'));
});

after(async () => {
  await killAll();
  await admin.deleteNamespace(namespace).catch(() => {});
  await admin.close();
  await rm(dir, { recursive: true, force: true });
});

/** A kubeconfig for the test cluster whose one user is `user` (kubeconfig's own field names). */
async function kubeconfigWith(name: string, user: Record<string, unknown>): Promise<string> {
  const cluster = testCluster();
  const file = path.join(dir, `${name}.kubeconfig`);
  const document = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'test',
        cluster: {
          server: cluster.server,
          'certificate-authority-data': Buffer.from(cluster.caPem ?? '').toString('base64'),
        },
      },
    ],
    users: [{ name: 'someone', user }],
    contexts: [{ name: name, context: { cluster: 'test', user: 'someone' } }],
    'current-context': name,
  };
  // JSON is YAML.
  await writeFile(file, JSON.stringify(document, null, 2), { mode: 0o600 });
  return file;
}

/** Watches with this kubeconfig and sees a ConfigMap created once it is ready. */
async function watchesWith(kubeconfig: string, marker: string): Promise<void> {
  const kd = runKubediff(
    ['watch', '--kubeconfig', kubeconfig, '-n', namespace, '-r', 'configmaps', '-o', 'json'],
    { timeoutMs: 30_000, cwd: os.tmpdir() },
  );
  await kd.waitForStderr(/watching 1 resource type/);
  await admin.create(`/api/v1/namespaces/${namespace}/configmaps`, { metadata: { name: marker } });
  const added = await kd.waitForEvent(matching({ type: 'ADDED', name: marker }));
  assert.equal(added.object.namespace, namespace);
  const result = await kd.stop('SIGTERM');
  assert.equal(result.code, 0, result.stderr);
  assert.doesNotMatch(result.stderr, /401|403|Unauthorized|Forbidden/);
}

function adminCertificate(): { cert: string; key: string } {
  const { adminClientCert, adminClientKey } = testCluster();
  assert.ok(adminClientCert && adminClientKey, 'the test cluster has an admin client certificate');
  return { cert: adminClientCert, key: adminClientKey };
}

describe('kubeconfig authentication', () => {
  it('a bearer token', async () => {
    const token = testCluster().adminToken ?? '';
    await watchesWith(await kubeconfigWith('token', { token }), 'by-token');
  });

  it('a token file, relative to the kubeconfig', async () => {
    await writeFile(path.join(dir, 'admin.token'), `${testCluster().adminToken}\n`, { mode: 0o600 });
    await watchesWith(await kubeconfigWith('token-file', { tokenFile: 'admin.token' }), 'by-token-file');
  });

  it('a client certificate and key in files, relative to the kubeconfig', async () => {
    const { cert, key } = adminCertificate();
    await writeFile(path.join(dir, 'admin.crt'), cert);
    await writeFile(path.join(dir, 'admin.key'), key, { mode: 0o600 });
    const kubeconfig = await kubeconfigWith('cert-files', {
      'client-certificate': 'admin.crt',
      'client-key': 'admin.key',
    });
    await watchesWith(kubeconfig, 'by-cert-files');
  });

  it('a client certificate and key inline', async () => {
    const { cert, key } = adminCertificate();
    const kubeconfig = await kubeconfigWith('cert-data', {
      'client-certificate-data': Buffer.from(cert).toString('base64'),
      'client-key-data': Buffer.from(key).toString('base64'),
    });
    await watchesWith(kubeconfig, 'by-cert-data');
  });

  it('an exec credential plugin', async () => {
    // The plugin is a Node script that prints an ExecCredential holding the admin token; kubectl's
    // protocol: apiVersion and kind echoed, status.token.
    const plugin = path.join(dir, 'credential-plugin.mjs');
    await writeFile(
      plugin,
      `process.stdout.write(JSON.stringify({
  apiVersion: 'client.authentication.k8s.io/v1',
  kind: 'ExecCredential',
  status: { token: ${JSON.stringify(testCluster().adminToken)} },
}));
`,
    );
    const kubeconfig = await kubeconfigWith('exec', {
      exec: {
        apiVersion: 'client.authentication.k8s.io/v1',
        command: process.execPath,
        args: [plugin],
        interactiveMode: 'Never',
      },
    });
    await watchesWith(kubeconfig, 'by-exec');
  });

  it('an exec plugin that fails: one sentence naming the user and what the plugin said, exit 1', async () => {
    const plugin = path.join(dir, 'failing-plugin.mjs');
    await writeFile(plugin, `process.stderr.write('no credentials here\\n');\nprocess.exit(3);\n`);
    const kubeconfig = await kubeconfigWith('exec-fails', {
      exec: { apiVersion: 'client.authentication.k8s.io/v1', command: process.execPath, args: [plugin] },
    });
    const result = await runKubediffToCompletion(['resources', '--kubeconfig', kubeconfig], {
      timeoutMs: 30_000,
    });
    assert.equal(result.code, 1, result.stderr);
    assert.match(
      result.stderr,
      /^kubediff: the credential plugin of kubeconfig user "someone" failed: .*no credentials here.*; check its exec command/,
    );
    assert.equal(result.stderr.split('\n').length, 2, result.stderr);
  });
});
