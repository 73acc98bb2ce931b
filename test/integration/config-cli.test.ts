// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${VAR} is the config file syntax under test.
// The config file as a user meets it on the command line: `kubediff watch -c` and `kubediff validate`
// spawned for real, their exit codes (2 for a config problem) and their messages; `validate --cluster`
// against the real API server; and the RBAC hint of a forbidden list/watch.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type ExitResult, killAll, runKubediff, runKubediffToCompletion } from '../helpers/cli.ts';
import { needsNobody, testCluster } from '../helpers/cluster-env.ts';
import {
  ADMIN_FIELD_MANAGER,
  adminClient,
  type KubeAdmin,
  writeKubeconfigFile,
} from '../helpers/kube-admin.ts';

const REPO = path.resolve(import.meta.dirname, '../..');
const EXAMPLE = path.join(REPO, 'config.example.yaml');
let dir: string;
let admin: KubeAdmin;
const namespaces: string[] = [];

before(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'kubediff-config-cli-'));
  admin = adminClient();
});

after(async () => {
  await killAll();
  await Promise.all(namespaces.map((ns) => admin.deleteNamespace(ns)));
  await admin.close();
  await rm(dir, { recursive: true, force: true });
});

function shown(result: ExitResult): string {
  return `exit ${result.code ?? result.signal}\n  stdout: ${JSON.stringify(result.stdout)}\n  stderr: ${JSON.stringify(result.stderr)}`;
}

async function file(name: string, text: string): Promise<string> {
  const target = path.join(dir, name);
  await writeFile(target, text);
  return target;
}

/** No secret from the test's own environment leaks into these runs. */
const CLEAN_ENV = {
  SLACK_WEBHOOK_URL: undefined,
  RELEASES_WEBHOOK_URL: undefined,
  KUBEDIFF_SLACK_TOKEN: undefined,
};

describe('kubediff watch -c', () => {
  test('a typo in a key: exit 2, the line and a did-you-mean, before any connection', async () => {
    const config = await file('typo.yaml', 'namespces: [shop]\n');
    const result = await runKubediffToCompletion(['watch', '-c', config, '--kubeconfig', '/nonexistent'], {
      env: CLEAN_ENV,
    });
    assert.equal(result.code, 2, shown(result));
    assert.equal(result.stdout, '');
    assert.equal(
      result.stderr,
      `kubediff: invalid config file ${config}:1:1: namespces: unknown key (did you mean namespaces?).\n`,
    );
  });

  test('several problems are reported together, one per line, in file order', async () => {
    const config = await file(
      'several.yaml',
      'events: [added, changed]\nsinks:\n  - type: webhook\n    url: ${HOOK}\n    tiemout: 5s\n',
    );
    const result = await runKubediffToCompletion(['watch', '-c', config], {
      env: { ...CLEAN_ENV, HOOK: 'ftp://secret-host/s3cr3t-path' },
    });
    assert.equal(result.code, 2, shown(result));
    assert.equal(
      result.stderr,
      [
        `kubediff: invalid config file ${config}: 3 problems:`,
        `  ${config}:1:17: events[1]: expected one of added, updated, deleted, got "changed"`,
        `  ${config}:4:10: sinks[0].url: expected an http:// or https:// URL, not ftp://`,
        `  ${config}:5:5: sinks[0].tiemout: unknown key (did you mean timeout?)`,
        '',
      ].join('\n'),
    );
    assert.doesNotMatch(result.stderr, /s3cr3t/);
  });

  test('an unset variable is named with its line; a missing file is one sentence; both exit 2', async () => {
    const config = await file(
      'env.yaml',
      'sinks:\n  - type: slack\n    webhookUrl: ${SLACK_HOOK_FOR_TEST}\n',
    );
    const unset = await runKubediffToCompletion(['watch', '-c', config], { env: CLEAN_ENV });
    assert.equal(unset.code, 2, shown(unset));
    assert.equal(
      unset.stderr,
      `kubediff: invalid config file ${config}:3:17: sinks[0].webhookUrl: environment variable SLACK_HOOK_FOR_TEST is not set (set it, or give a default: \${SLACK_HOOK_FOR_TEST:-value}).\n`,
    );
    const missing = path.join(dir, 'nope.yaml');
    const result = await runKubediffToCompletion(['watch', '-c', missing]);
    assert.equal(result.code, 2, shown(result));
    assert.equal(
      result.stderr,
      `kubediff: cannot read config file ${missing}: no such file; check the path given to -c/--config.\n`,
    );
  });

  test('flags win over the file: -n replaces the namespaces, --preset the preset', async () => {
    const ns = await admin.createNamespace('cfg-cli');
    namespaces.push(ns);
    const config = await file(
      'flags.yaml',
      `kubeconfig: ${testCluster().kubeconfigPath}\nnamespaces: [does-not-exist]\nresources: [cm]\npreset: quiet\noutput: pretty\n`,
    );
    const kd = runKubediff(['watch', '-c', config, '-n', ns, '-o', 'json', '--preset', 'everything'], {
      checkEvents: true,
      timeoutMs: 30_000,
    });
    await kd.waitForStderr(/watching \d+ resource types?/, 90_000);
    await admin.create(`/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'x' }, data: { a: '1' } });
    await kd.waitForEvent((event) => event.object.namespace === ns && event.object.name === 'x');
    await admin.patch(`/api/v1/namespaces/${ns}/configmaps/x`, { data: { a: '2' } });
    // everything: /metadata/resourceVersion and managedFields are reported too.
    const updated = await kd.waitForEvent((event) => event.type === 'UPDATED' && event.object.name === 'x');
    assert.ok(updated.changes?.some((change) => change.path === '/metadata/resourceVersion'));
    const result = await kd.stop();
    assert.equal(result.code, 0, shown(result));
  });

  test('redact: hashes the values it names; a typo in its resource names stops the watch (exit 2)', async () => {
    const ns = await admin.createNamespace('cfg-redact');
    namespaces.push(ns);
    const kubeconfig = testCluster().kubeconfigPath;
    const config = await file(
      'redact.yaml',
      `kubeconfig: ${kubeconfig}\nresources: [cm]\nredact:\n  - path: /data/password\n    resources: [cm]\n`,
    );
    const kd = runKubediff(['watch', '-c', config, '-n', ns, '-o', 'json'], {
      checkEvents: true,
      timeoutMs: 30_000,
    });
    await kd.waitForStderr(/watching \d+ resource types?/, 90_000);
    const configmaps = `/api/v1/namespaces/${ns}/configmaps`;
    await admin.create(configmaps, {
      metadata: { name: 'db' },
      data: { password: 'pw-one-1f3a', user: 'app' },
    });
    await admin.patch(`${configmaps}/db`, { data: { password: 'pw-two-9c2e', user: 'admin' } });
    const updated = await kd.waitForEvent((event) => event.type === 'UPDATED' && event.object.name === 'db');
    const hash = (value: string) =>
      `<redacted sha256:${createHash('sha256').update(value).digest('hex').slice(0, 8)}>`;
    assert.deepEqual(updated.changes, [
      {
        op: 'replace',
        path: '/data/password',
        from: hash('pw-one-1f3a'),
        to: hash('pw-two-9c2e'),
        manager: ADMIN_FIELD_MANAGER,
      },
      { op: 'replace', path: '/data/user', from: 'app', to: 'admin', manager: ADMIN_FIELD_MANAGER },
    ]);
    const result = await kd.stop();
    assert.equal(result.code, 0, shown(result));
    assert.doesNotMatch(result.stdout + result.stderr, /pw-one|pw-two/);

    const typo = await file(
      'redact-typo.yaml',
      `kubeconfig: ${kubeconfig}\nresources: [cm]\nredact:\n  - path: /data/password\n    resources: [confgmaps]\n`,
    );
    const refused = await runKubediffToCompletion(['watch', '-c', typo, '-n', ns, '-o', 'json'], {
      timeoutMs: 60_000,
    });
    assert.equal(refused.code, 2, shown(refused));
    assert.equal(refused.stdout, '');
    assert.match(
      refused.stderr,
      new RegExp(
        `^kubediff: ${typo.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:4:5: redact\\[0\\]: unknown resource type "confgmaps" \\(did you mean configmaps\\?\\); .*values this rule should hide would be shown\\.\\n$`,
      ),
    );
  });
});

describe('kubediff validate', () => {
  test('config.example.yaml is valid (unset secrets are warnings)', async () => {
    const result = await runKubediffToCompletion(['validate', '-c', EXAMPLE], { env: CLEAN_ENV });
    assert.equal(result.code, 0, shown(result));
    assert.equal(
      result.stdout,
      `${EXAMPLE}: valid (preset default; 5 sinks: stdout, slack-prod, release-tracker, kafka, teams).\n`,
    );
    assert.match(
      result.stderr,
      /warning: .*config\.example\.yaml:\d+:\d+: sinks\[1\]\.webhookUrl: environment variable SLACK_WEBHOOK_URL is not set/,
    );
  });

  test('`kubediff resources -c` lists what the file selects, without needing its secrets', async () => {
    const result = await runKubediffToCompletion(
      ['resources', '-c', EXAMPLE, '--kubeconfig', testCluster().kubeconfigPath, '-o', 'json'],
      { env: CLEAN_ENV },
    );
    assert.equal(result.code, 0, shown(result));
    const watched = result.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { name: string; watched: boolean; reason?: string })
      .filter((row) => row.watched)
      .map((row) => row.name);
    for (const name of [
      'deployments.apps',
      'statefulsets.apps',
      'daemonsets.apps',
      'configmaps',
      'services',
    ]) {
      assert.ok(watched.includes(name), `${name} in ${watched.join(', ')}`);
    }
    assert.ok(!watched.includes('secrets'));
  });

  test('a broken file: every problem, exit 2, nothing on stdout', async () => {
    const config = await file('broken.yaml', 'namespces: [a]\ninitial: maybe\n');
    const result = await runKubediffToCompletion(['validate', '-c', config]);
    assert.equal(result.code, 2, shown(result));
    assert.equal(result.stdout, '');
    assert.equal(
      result.stderr,
      [
        `kubediff: invalid config file ${config}: 2 problems:`,
        `  ${config}:1:1: namespces: unknown key (did you mean namespaces?)`,
        `  ${config}:2:10: initial: expected true or false, got "maybe"`,
        '',
      ].join('\n'),
    );
  });

  test('credentials in a sink URL, or over http://: refused in one sentence each, exit 2, the password never shown', async () => {
    const config = await file(
      'credentials.yaml',
      'sinks:\n  - type: elasticsearch\n    url: https://elastic:pw-s3cr3t@es:9200\n  - type: opensearch\n    url: http://search:9200\n    username: kd\n    password: pw-s3cr3t\n',
    );
    const result = await runKubediffToCompletion(['validate', '-c', config]);
    assert.equal(result.code, 2, shown(result));
    assert.equal(result.stdout, '');
    assert.equal(
      result.stderr,
      [
        `kubediff: invalid config file ${config}: 2 problems:`,
        `  ${config}:3:10: sinks[0].url: the URL holds credentials (user:password@), which are never sent; give them as username and password (or passwordFile)`,
        `  ${config}:6:15: sinks[1].username: the credentials would cross the network unencrypted (an http:// URL): use https://, or allowPlaintextCredentials: true if the network is encrypted otherwise`,
        '',
      ].join('\n'),
    );
  });

  test('a YAML alias bomb: one sentence, exit 2, for validate and watch -c alike', async () => {
    // Nine levels of ten aliases each: a billion strings if expanded.
    const levels = 'abcdefghi'.split('');
    const lines = ['a: &a ["x","x","x","x","x","x","x","x","x","x"]'];
    for (let index = 1; index < levels.length; index++) {
      const previous = levels[index - 1];
      lines.push(`${levels[index]}: &${levels[index]} [${Array(10).fill(`*${previous}`).join(',')}]`);
    }
    const config = await file('bomb.yaml', `${lines.join('\n')}\n`);
    for (const args of [
      ['validate', '-c', config],
      ['watch', '-c', config, '--kubeconfig', '/nonexistent'],
    ]) {
      const result = await runKubediffToCompletion(args, { env: CLEAN_ENV });
      assert.equal(result.code, 2, shown(result));
      assert.equal(result.stdout, '');
      assert.equal(
        result.stderr,
        `kubediff: invalid config file ${config}:2:8: not valid YAML: its aliases expand to too many values (as in a resource-exhaustion attack); write the values out, or use fewer aliases.\n`,
      );
    }
  });

  test('-c is required', async () => {
    const result = await runKubediffToCompletion(['validate']);
    assert.equal(result.code, 2, shown(result));
    assert.match(result.stderr, /^kubediff: required option '-c, --config <file>' not specified/);
  });

  test('--cluster: an unknown resource name is an error with a did-you-mean; a dotted one a warning', async () => {
    const kubeconfig = testCluster().kubeconfigPath;
    const config = await file(
      'cluster.yaml',
      `kubeconfig: ${kubeconfig}\nresources: [deploy, cm, widgets.nosuch.example.com]\nsinks:\n  - type: stdout\n    filter:\n      resources: [deploymnets]\n`,
    );
    const result = await runKubediffToCompletion(['validate', '-c', config, '--cluster']);
    assert.equal(result.code, 2, shown(result));
    assert.equal(
      result.stderr,
      [
        `kubediff: warning: ${config}:2:25: resources[2]: widgets.nosuch.example.com is not served yet; it is used as soon as its CRD or API appears.`,
        `kubediff: invalid config file ${config}:6:19: sinks[0].filter.resources[0]: unknown resource type "deploymnets" (did you mean deployments.apps?); run \`kubediff resources\` to list what this cluster offers.`,
        '',
      ].join('\n'),
    );
    const fixed = await file(
      'cluster-ok.yaml',
      `kubeconfig: ${kubeconfig}\nresources: [deploy, cm, widgets.nosuch.example.com]\n`,
    );
    const ok = await runKubediffToCompletion(['validate', '-c', fixed, '--cluster']);
    assert.equal(ok.code, 0, shown(ok));
    assert.match(
      ok.stdout,
      /valid \(preset default; 1 sink: stdout\); resource names checked against https:\/\//,
    );
  });

  test('--cluster with an unreachable server: exit 1 and the address', async () => {
    const config = await file('unreachable.yaml', 'resources: [cm]\n');
    const kubeconfig = await writeKubeconfigFile(testCluster(), 'https://127.0.0.1:1', {
      path: path.join(dir, 'unreachable-kubeconfig'),
    });
    const result = await runKubediffToCompletion([
      'validate',
      '-c',
      config,
      '--cluster',
      '--kubeconfig',
      kubeconfig,
    ]);
    assert.equal(result.code, 1, shown(result));
    assert.match(result.stderr, /^kubediff: .*127\.0\.0\.1:1.*\n$/);
  });
});

test('a forbidden list/watch names the resource, the verb and the RBAC rule to add', {
  skip: needsNobody(),
}, async () => {
  const cluster = testCluster();
  const ns = await admin.createNamespace('cfg-rbac');
  namespaces.push(ns);
  const kubeconfig = await writeKubeconfigFile(cluster, cluster.server, {
    token: cluster.nobodyToken,
    path: path.join(dir, 'nobody-kubeconfig'),
  });
  const kd = runKubediff(['watch', '--kubeconfig', kubeconfig, '-n', ns, '-r', 'deploy', '-o', 'json'], {
    env: { KUBEDIFF_SLOW_RETRY: '1s' },
    timeoutMs: 30_000,
  });
  const [line] = await kd.waitForStderr(
    /warning: deployments\.apps in namespace \S+: forbidden .*\n/,
    60_000,
  );
  assert.match(line, /cannot (list|watch) resource "deployments" in API group "apps"/);
  assert.match(
    line,
    new RegExp(
      `to watch it, bind kubediff's identity to a Role in namespace ${ns} \\(or a ClusterRole\\) with the rule apiGroups: \\["apps"\\], resources: \\["deployments"\\], verbs: \\["list","watch"\\]; retrying`,
    ),
  );
  await kd.stop();
});
