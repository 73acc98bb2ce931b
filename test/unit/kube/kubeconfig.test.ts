// The kubeconfig reader (src/kube/kubeconfig.ts) on files in a temp folder: kubectl's merge of
// $KUBECONFIG (the first file to name a cluster, user or context wins, and the first current-context),
// relative paths from each file's folder, --context, the in-cluster ServiceAccount, and which users
// need @kubernetes/client-node (an exec plugin or an auth provider). Authentication itself, against
// the real API server, is in test/integration/kubeconfig-auth.test.ts.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, afterEach, describe, it } from 'node:test';
import { loadKubeconfig } from '../../../src/kube/kubeconfig.ts';
import { UsageError } from '../../../src/util/errors.ts';
import { mountServiceAccount } from '../../helpers/pod-service-account.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'kubediff-kubeconfig-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const saved = { ...process.env };
afterEach(() => {
  for (const name of ['KUBECONFIG', 'KUBERNETES_SERVICE_HOST', 'KUBERNETES_SERVICE_PORT']) {
    if (saved[name] === undefined) delete process.env[name];
    else process.env[name] = saved[name];
  }
});

function write(relative: string, document: unknown): string {
  const file = path.join(dir, relative);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify(document));
  return file;
}

const cluster = (name: string, server: string, extra: Record<string, unknown> = {}) => ({
  name,
  cluster: { server, ...extra },
});
const context = (name: string, clusterName: string, user: string) => ({
  name,
  context: { cluster: clusterName, user },
});

describe('loadKubeconfig', () => {
  it('merges $KUBECONFIG files as kubectl does: the first name and the first current-context win', () => {
    const first = write('a/config', {
      clusters: [cluster('shared', 'https://first.example:6443')],
      users: [{ name: 'me', user: { tokenFile: 'token' } }],
      contexts: [context('one', 'shared', 'me')],
    });
    const second = write('b/config', {
      clusters: [
        cluster('shared', 'https://second.example:6443'),
        cluster('other', 'https://other.example/'),
      ],
      users: [{ name: 'me', user: { token: 'ignored' } }],
      contexts: [context('two', 'other', 'me')],
      'current-context': 'two',
    });
    process.env.KUBECONFIG = [first, path.join(dir, 'missing'), second].join(path.delimiter);
    const identity = loadKubeconfig({});
    // The first file sets no current-context: the second's counts; its cluster "shared" lost to the first's.
    assert.equal(identity.contextName, 'two');
    assert.equal(identity.server, 'https://other.example');
    assert.equal(identity.user.tokenFile, path.join(dir, 'a', 'token'), 'relative to the file naming it');
    assert.equal(identity.user.token, undefined);
    assert.equal(identity.user.plugin, false);
    assert.deepEqual(
      identity.document.clusters.map((entry) => [entry.name, entry.cluster.server]),
      [
        ['shared', 'https://first.example:6443'],
        ['other', 'https://other.example/'],
      ],
    );
  });

  it('a server that is not an http(s) address is a usage error; host:port alone means https, as in client-go', () => {
    const withServer = (server: string) =>
      write('servers/config', {
        clusters: [cluster('c', server)],
        users: [{ name: 'me', user: { token: 'secret-token' } }],
        contexts: [context('x', 'c', 'me')],
        'current-context': 'x',
      });
    assert.equal(loadKubeconfig({ kubeconfig: withServer('10.0.0.1:6443') }).server, 'https://10.0.0.1:6443');
    for (const [server, start] of [
      ['http://[::1', 'http:'],
      ['ftp://k8s.example/secret-path', 'ftp:'],
      ['https://', 'https:'],
      [':::', ':::'],
    ] as const) {
      assert.throws(
        () => loadKubeconfig({ kubeconfig: withServer(server) }),
        (error) =>
          error instanceof UsageError &&
          error.message ===
            `the server of cluster "c" in kubeconfig ${path.join(dir, 'servers/config')} is not an https:// or http:// address (it starts "${start}"); fix the kubeconfig.`,
      );
    }
  });

  it('quotes no line of the file in a warning either (the YAML parser quotes the line it warns about)', async () => {
    const file = path.join(dir, 'warning/config');
    mkdirSync(path.dirname(file), { recursive: true });
    // An anchor ending in ':' makes the parser warn, with the line: here, the token's.
    writeFileSync(
      file,
      [
        'clusters: [{name: c, cluster: {server: "https://k8s.example"}}]',
        'users: [{name: me, user: {token: &t: secret-token-7f3a}}]',
        'contexts: [{name: x, context: {cluster: c, user: me}}]',
        'current-context: x',
      ].join('\n'),
    );
    const warnings: string[] = [];
    const listener = (warning: Error) => warnings.push(warning.message);
    process.on('warning', listener);
    try {
      loadKubeconfig({ kubeconfig: file });
    } catch {
      // Whether the file is usable is not the point here.
    }
    await new Promise((resolve) => setImmediate(resolve));
    process.off('warning', listener);
    assert.deepEqual(warnings, []);
  });

  it('--context picks another; an unknown one is a usage error listing the known ones', () => {
    const file = write('contexts/config', {
      clusters: [cluster('c', 'https://c.example', { 'certificate-authority': 'ca.crt' })],
      users: [
        { name: 'plain', user: { 'client-certificate': 'me.crt', 'client-key': '/abs/me.key' } },
        { name: 'plugged', user: { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: 'x' } } },
      ],
      contexts: [context('a', 'c', 'plain'), context('b', 'c', 'plugged')],
      'current-context': 'a',
    });
    const a = loadKubeconfig({ kubeconfig: file });
    assert.equal(a.cluster.caFile, path.join(dir, 'contexts', 'ca.crt'));
    assert.equal(a.user.certFile, path.join(dir, 'contexts', 'me.crt'));
    assert.equal(a.user.keyFile, '/abs/me.key');
    const b = loadKubeconfig({ kubeconfig: file, context: 'b' });
    assert.equal(b.user.plugin, true, 'an exec plugin: client-node applies it');
    assert.equal(b.document['current-context'], 'b');
    assert.throws(
      () => loadKubeconfig({ kubeconfig: file, context: 'nope' }),
      (error: unknown) =>
        error instanceof UsageError &&
        error.message === `context "nope" is not in kubeconfig ${file}; known contexts: a, b.`,
    );
  });

  it('in a pod without a kubeconfig: the ServiceAccount files and the service address', () => {
    const mounted = path.join(dir, 'pod', 'serviceaccount');
    mkdirSync(mounted, { recursive: true });
    writeFileSync(path.join(mounted, 'token'), 'token\n');
    process.env.KUBECONFIG = '';
    process.env.HOME = path.join(dir, 'no-home');
    process.env.KUBERNETES_SERVICE_HOST = 'fd00::1';
    process.env.KUBERNETES_SERVICE_PORT = '6443';
    const unmount = mountServiceAccount(mounted);
    try {
      const identity = loadKubeconfig({});
      assert.equal(identity.contextName, 'in-cluster');
      assert.equal(identity.server, 'https://[fd00::1]:6443');
      assert.equal(identity.user.tokenFile, '/var/run/secrets/kubernetes.io/serviceaccount/token');
      assert.equal(identity.cluster.caFile, '/var/run/secrets/kubernetes.io/serviceaccount/ca.crt');
    } finally {
      unmount();
      process.env.HOME = saved.HOME;
    }
  });

  it('a file whose entry has no name is a usage error naming the file and the entry', () => {
    const file = write('unnamed/config', { clusters: [{ cluster: { server: 'https://x' } }] });
    assert.throws(
      () => loadKubeconfig({ kubeconfig: file }),
      (error: unknown) =>
        error instanceof UsageError &&
        error.message ===
          `cannot read kubeconfig ${file}: clusters[0].name is missing; fix the file or pass another with --kubeconfig.`,
    );
  });
});
