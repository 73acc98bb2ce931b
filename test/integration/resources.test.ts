// `kubediff resources`: what `watch` would watch with the same flags, and why everything else is skipped, as the
// real API server's discovery says (Correctness 8: only list+watch, no subresources, one version per
// group/resource; high-churn types only when named) and as the identity's RBAC allows ("forbidden").
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type ExitResult, killAll, runKubediffToCompletion } from '../helpers/cli.ts';
import { needsNobody, testCluster } from '../helpers/cluster-env.ts';
import {
  adminClient,
  nobodyClient,
  uniqueName,
  waitFor,
  writeKubeconfigFile,
} from '../helpers/kube-admin.ts';
import { nonEmpty } from '../helpers/non-empty.ts';

interface Row {
  name: string;
  group: string;
  version: string;
  resource: string;
  kind: string;
  scope: 'Namespaced' | 'Cluster';
  watched: boolean;
  reason?: string;
}

const ROW_KEYS = ['name', 'group', 'version', 'resource', 'kind', 'scope', 'watched', 'reason'];
const RUN = { timeoutMs: 60_000 };

const admin = adminClient();
const namespaces: string[] = [];
const crds: string[] = [];
let dir: string;

before(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'kubediff-resources-'));
});

after(async () => {
  await killAll();
  await Promise.all([
    ...namespaces.map((ns) => admin.deleteNamespace(ns)),
    ...crds.map((name) => admin.deleteCRD(name)),
  ]);
  await admin.close();
  await rm(dir, { recursive: true, force: true });
});

function shown(result: ExitResult): string {
  return `exit ${result.code ?? result.signal}; stderr: ${JSON.stringify(result.stderr)}`;
}

/** Runs `kubediff resources -o json …`, checks it succeeded, and parses its lines. */
async function resourcesJson(args: string[]): Promise<Row[]> {
  const result = await runKubediffToCompletion(['resources', '-o', 'json', ...args], RUN);
  assert.equal(result.code, 0, shown(result));
  assert.doesNotMatch(result.stderr, /^\s{4}at /m, shown(result));
  assert.ok(result.stdout.endsWith('\n'), 'the last line ends with a newline');
  const rows = result.stdout
    .slice(0, -1)
    .split('\n')
    .map((line) => JSON.parse(line) as Row);
  for (const row of nonEmpty(rows, 'rows of kubediff resources')) {
    for (const key of Object.keys(row))
      assert.ok(ROW_KEYS.includes(key), `unknown field ${key} in ${JSON.stringify(row)}`);
    assert.equal(typeof row.watched, 'boolean');
    assert.ok(row.scope === 'Namespaced' || row.scope === 'Cluster', JSON.stringify(row));
    assert.equal(row.name, row.group ? `${row.resource}.${row.group}` : row.resource, JSON.stringify(row));
    // Watched rows carry no reason; skipped ones always say why.
    assert.equal(row.watched, row.reason === undefined, JSON.stringify(row));
  }
  return rows;
}

function rowNamed(rows: Row[], name: string): Row {
  const row = rows.find((candidate) => candidate.name === name);
  assert.ok(row, `no row for ${name} in: ${rows.map((r) => r.name).join(', ')}`);
  return row;
}

describe('as the admin', () => {
  let rows: Row[];
  before(async () => {
    rows = await resourcesJson(['--kubeconfig', testCluster().kubeconfigPath]);
  });

  test('everyday types are watched, with their group, version, kind and scope', () => {
    assert.deepEqual(rowNamed(rows, 'configmaps'), {
      name: 'configmaps',
      group: '',
      version: 'v1',
      resource: 'configmaps',
      kind: 'ConfigMap',
      scope: 'Namespaced',
      watched: true,
    });
    assert.deepEqual(rowNamed(rows, 'deployments.apps'), {
      name: 'deployments.apps',
      group: 'apps',
      version: 'v1',
      resource: 'deployments',
      kind: 'Deployment',
      scope: 'Namespaced',
      watched: true,
    });
    const namespacesRow = rowNamed(rows, 'namespaces');
    assert.equal(namespacesRow.scope, 'Cluster');
    assert.equal(namespacesRow.watched, true);
    assert.equal(rowNamed(rows, 'secrets').watched, true);
  });

  test('high-churn types are skipped by default, saying so', () => {
    for (const name of [
      'events',
      'events.events.k8s.io',
      'leases.coordination.k8s.io',
      'endpoints',
      'endpointslices.discovery.k8s.io',
    ]) {
      const row = rowNamed(rows, name);
      assert.equal(row.watched, false, name);
      assert.equal(row.reason, 'excluded by default (high churn)', name);
    }
  });

  test('types without list and watch are skipped: bindings, reviews', () => {
    assert.equal(rowNamed(rows, 'bindings').reason, 'no list/watch verbs');
    assert.equal(rowNamed(rows, 'tokenreviews.authentication.k8s.io').reason, 'no list/watch verbs');
    assert.equal(
      rowNamed(rows, 'selfsubjectaccessreviews.authorization.k8s.io').reason,
      'no list/watch verbs',
    );
  });

  test('no subresources, one version per group/resource, watched types listed first', () => {
    for (const row of rows) assert.ok(!row.resource.includes('/'), `a subresource is listed: ${row.name}`);
    const names = rows.map((row) => row.name);
    assert.equal(new Set(names).size, names.length, `a group/resource is listed twice: ${names.join(', ')}`);
    const firstSkipped = rows.findIndex((row) => !row.watched);
    assert.ok(firstSkipped > 0, 'some types are watched and some skipped');
    assert.ok(
      rows.slice(firstSkipped).every((row) => !row.watched),
      'every watched type comes before every skipped one',
    );
  });
});

test('-r deploy marks only deployments.apps watched', async () => {
  const rows = await resourcesJson(['--kubeconfig', testCluster().kubeconfigPath, '-r', 'deploy']);
  assert.deepEqual(
    rows.filter((row) => row.watched).map((row) => row.name),
    ['deployments.apps'],
  );
  assert.equal(rowNamed(rows, 'configmaps').reason, 'not selected by --resource');
  assert.equal(rowNamed(rows, 'bindings').reason, 'no list/watch verbs');
});

test('-r events names a high-churn type: then it is watched', async () => {
  const rows = await resourcesJson(['--kubeconfig', testCluster().kubeconfigPath, '-r', 'events']);
  assert.deepEqual(
    rows.filter((row) => row.watched).map((row) => row.name),
    ['events'],
  );
});

test('a misspelt -r name is a usage error, as for watch', async () => {
  const result = await runKubediffToCompletion(
    ['resources', '--kubeconfig', testCluster().kubeconfigPath, '-r', 'deploymnets'],
    RUN,
  );
  assert.equal(result.code, 2, shown(result));
  assert.equal(result.stdout, '');
  assert.match(
    result.stderr,
    /^kubediff: unknown resource type "deploymnets".*did you mean deployments\.apps\?/,
  );
  assert.equal(result.stderr.trim().split('\n').length, 1, shown(result));
});

test('a CRD is listed once the API server serves it, found by its short name, with its scope', async () => {
  const group = `${uniqueName('resources')}.kubediff.test`;
  crds.push(`gadgets.${group}`);
  await admin.createCRD(group, 'Gadget', 'gadgets', { namespaced: false, shortNames: ['gdg'] });
  // Discovery may trail the CRD's Established condition by a moment; until then `-r gdg` is unknown (exit 2).
  const args = ['resources', '-o', 'json', '--kubeconfig', testCluster().kubeconfigPath, '-r', 'gdg'];
  await waitFor(async () => (await runKubediffToCompletion(args, RUN)).code === 0, {
    timeoutMs: 20_000,
    intervalMs: 500,
    what: `kubediff resources to know the short name gdg of gadgets.${group}`,
  });
  const rows = await resourcesJson(['--kubeconfig', testCluster().kubeconfigPath, '-r', 'gdg']);
  assert.deepEqual(
    rows.filter((row) => row.watched),
    [
      {
        name: `gadgets.${group}`,
        group,
        version: 'v1',
        resource: 'gadgets',
        kind: 'Gadget',
        scope: 'Cluster',
        watched: true,
      },
    ],
  );
});

describe('as a user with limited rights', { skip: needsNobody() }, () => {
  let kubeconfig: string;
  let ns: string;

  before(async () => {
    const cluster = testCluster();
    kubeconfig = await writeKubeconfigFile(cluster, cluster.server, {
      token: cluster.nobodyToken,
      path: path.join(dir, 'nobody-kubeconfig'),
    });
    // `nobody` may read ConfigMaps in one namespace, nothing else.
    ns = await admin.createNamespace('resources-rbac');
    namespaces.push(ns);
    const nobody = nobodyClient();
    assert.ok(nobody);
    try {
      const review = await nobody.send<{ status?: { userInfo?: { username?: string } } }>(
        'POST',
        '/apis/authentication.k8s.io/v1/selfsubjectreviews',
        { body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' } },
      );
      const user = review.status?.userInfo?.username ?? 'nobody';
      const rbac = `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}`;
      await admin.create(`${rbac}/roles`, {
        metadata: { name: 'read-configmaps' },
        rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }],
      });
      await admin.create(`${rbac}/rolebindings`, {
        metadata: { name: 'read-configmaps' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'read-configmaps' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
      });
      await nobody.waitFor(
        async () => (await nobody.request('GET', `/api/v1/namespaces/${ns}/configmaps`)).status === 200,
        { timeoutMs: 15_000, what: 'the RoleBinding to take effect' },
      );
    } finally {
      await nobody.close();
    }
  });

  test('cluster-wide, every type it may not list and watch is "forbidden"', async () => {
    const rows = await resourcesJson(['--kubeconfig', kubeconfig]);
    assert.deepEqual(rowNamed(rows, 'secrets'), {
      name: 'secrets',
      group: '',
      version: 'v1',
      resource: 'secrets',
      kind: 'Secret',
      scope: 'Namespaced',
      watched: false,
      reason: 'forbidden',
    });
    // Allowed in one namespace is not allowed cluster-wide.
    assert.equal(rowNamed(rows, 'configmaps').reason, 'forbidden');
    assert.deepEqual(
      rows.filter((row) => row.watched).map((row) => row.name),
      [],
    );
    // Other reasons still win where they apply.
    assert.equal(rowNamed(rows, 'events').reason, 'excluded by default (high churn)');
    assert.equal(rowNamed(rows, 'bindings').reason, 'no list/watch verbs');
  });

  test('in its namespace: configmaps watched, secrets forbidden', async () => {
    const rows = await resourcesJson(['--kubeconfig', kubeconfig, '-n', ns, '-r', 'configmaps,secrets']);
    assert.equal(rowNamed(rows, 'configmaps').watched, true);
    assert.equal(rowNamed(rows, 'secrets').reason, 'forbidden');
    assert.deepEqual(
      rows.filter((row) => row.watched).map((row) => row.name),
      ['configmaps'],
    );
  });
});

test('the table has the header NAME APIVERSION KIND SCOPE WATCHED and aligned columns', async () => {
  const result = await runKubediffToCompletion(
    ['resources', '--kubeconfig', testCluster().kubeconfigPath, '-r', 'deploy,configmaps'],
    RUN,
  );
  assert.equal(result.code, 0, shown(result));
  const lines = result.stdout.trimEnd().split('\n');
  const header = lines[0] ?? '';
  assert.deepEqual(header.trim().split(/\s+/), ['NAME', 'APIVERSION', 'KIND', 'SCOPE', 'WATCHED']);
  const columns = ['NAME', 'APIVERSION', 'KIND', 'SCOPE', 'WATCHED'].map((title) => header.indexOf(title));

  const row = (name: string) => {
    const line = lines.find((candidate) => candidate.startsWith(`${name} `));
    assert.ok(line, `no table row for ${name}:\n${result.stdout}`);
    // Each cell starts under its header.
    const cells = columns.map((start, index) => line.slice(start, columns[index + 1]).trim());
    return cells;
  };
  assert.deepEqual(row('configmaps'), ['configmaps', 'v1', 'ConfigMap', 'Namespaced', 'yes']);
  assert.deepEqual(row('deployments.apps'), [
    'deployments.apps',
    'apps/v1',
    'Deployment',
    'Namespaced',
    'yes',
  ]);
  assert.deepEqual(row('namespaces'), [
    'namespaces',
    'v1',
    'Namespace',
    'Cluster',
    'no: not selected by --resource',
  ]);
  assert.deepEqual(row('bindings'), ['bindings', 'v1', 'Binding', 'Namespaced', 'no: no list/watch verbs']);
});
