// `kubediff show`, `diff` and `blame` on a PostgreSQL history (`--state postgres://…`) that two watches
// write, under two cluster names, about the same test cluster: without --cluster the object is in two
// clusters and the commands say so; with it, they answer for that cluster. No audit webhook here: who
// made each change is its field manager (three of them, a dozen edits), and the Deployment is created
// while watching, so every line is blamed on an event of the history, its creation included. The
// database password appears in no output.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { parse } from 'yaml';
import {
  type KubediffProcess,
  killAll,
  runKubediff,
  runKubediffToCompletion,
  watchArgs,
} from '../helpers/cli.ts';
import {
  between,
  type Editor,
  editDeployment,
  type RecordedEdit,
  recordedForm,
  webDeployment,
} from '../helpers/edited-deployment.ts';
import { adminClient, type KubeAdmin, type KubeObject } from '../helpers/kube-admin.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres-env.ts';

const READY = /watching \d+ resource types?/;
const MANAGERS = ['alice-tool', 'robot-scaler', 'admin-console'];

describe('show, diff and blame on a PostgreSQL history of two clusters', () => {
  let admin: KubeAdmin;
  let database: TestDatabase;
  let url: string;
  let env: Record<string, string>;
  let ns: string;
  let created: RecordedEdit['object'];
  let createdEvent: { time: string; id: string };
  let edits: RecordedEdit[];
  const outputs: string[] = [];

  const run = async (...args: string[]) => {
    const result = await runKubediffToCompletion([...args, '--state', url], { env, timeoutMs: 30_000 });
    outputs.push(result.stdout, result.stderr);
    return result;
  };

  before(async () => {
    admin = adminClient();
    database = await createTestDatabase('history commands');
    const withoutPassword = new URL(database.url);
    withoutPassword.password = '';
    url = withoutPassword.href;
    env = { PGPASSWORD: database.info.password };
    ns = await admin.createNamespace('git-pg');
    const watches: KubediffProcess[] = ['east', 'west'].map((cluster) =>
      runKubediff(watchArgs(ns, ['deployments'], '--state', url, '--cluster-name', cluster), {
        env,
        timeoutMs: 30_000,
        checkEvents: true,
      }),
    );
    for (const watch of watches) await watch.waitForStderr(READY);
    const [east, west] = watches as [KubediffProcess, KubediffProcess];
    const answer = await admin.send<KubeObject>('POST', `/apis/apps/v1/namespaces/${ns}/deployments`, {
      query: { fieldManager: 'seed-tool' },
      body: webDeployment('web'),
    });
    created = recordedForm(answer);
    const added = await east.waitForEvent((event) => event.type === 'ADDED' && event.object.name === 'web');
    createdEvent = { time: added.time, id: added.id };
    const [alice, robot, operator] = MANAGERS.map((manager) => ({ client: admin, manager })) as [
      Editor,
      Editor,
      Editor,
    ];
    edits = await editDeployment([alice, robot, operator], ns, 'web', east);
    await west.waitForEvent(
      (event) => event.object.resourceVersion === edits.at(-1)!.event.object.resourceVersion,
    );
    for (const watch of watches) assert.equal((await watch.stop()).code, 0);
  });

  after(async () => {
    await killAll();
    await admin?.close();
    await database?.drop();
  });

  it("without --cluster, names the clusters that record the object; with it, shows that cluster's version", async () => {
    const ambiguous = await run('show', 'deploy/web', '-n', ns);
    assert.equal(ambiguous.code, 2);
    assert.equal(
      ambiguous.stderr,
      `kubediff: deployments.apps ${ns}/web is recorded in 2 clusters (east, west): choose one with --cluster.\n`,
    );
    const at = between(edits[5]!.event, edits[6]!.event);
    const shown = await run('show', 'deploy/web', '-n', ns, '--cluster', 'east', '--at', at);
    assert.equal(shown.code, 0, shown.stderr);
    assert.deepEqual(parse(shown.stdout.replace(/^#.*\n/gm, '')), edits[5]!.object);
    // Between the creation and the first edit: the object as created.
    const first = await run('show', 'deploy/web', '-n', ns, '--cluster', 'east', '--at', createdEvent.id);
    assert.deepEqual(parse(first.stdout.replace(/^#.*\n/gm, '')), created);
  });

  it('diff lists the changes of the window with their field managers, and exits 1; 0 when nothing changed', async () => {
    // The edits' times are east's (west saw each change at its own moment): east's versions.
    const from = between(edits[0]!.event, edits[1]!.event);
    const to = between(edits[3]!.event, edits[4]!.event);
    const diff = await run('diff', 'deploy/web', '-n', ns, '--cluster', 'east', '--from', from, '--to', to);
    assert.equal(diff.code, 1, diff.stderr);
    const listed = diff.stdout.split('\n').filter((line) => / UPDATED /.test(line));
    assert.deepEqual(
      listed.map((line) => / by (\S+)/.exec(line)?.[1]),
      edits.slice(1, 4).map((edit) => MANAGERS[edit.editor]),
    );
    assert.match(diff.stdout, /^- {2}replicas: 1$/m);
    assert.match(diff.stdout, /^\+ {2}replicas: 3$/m);
    assert.match(diff.stdout, /^\+ {4}tier: front$/m);
    const same = await run('diff', 'deploy/web', '-n', ns, '--cluster', 'east', '--from', from, '--to', from);
    assert.equal(same.code, 0, same.stderr);
    const window = await run('diff', 'deploy', '-n', ns, '--cluster', 'east', '--since', '1h');
    assert.equal(window.code, 1, window.stderr);
    assert.match(
      window.stdout,
      new RegExp(`^# deployments\\.apps ${ns}/web \\[east\\]: 13 changes from `, 'm'),
    );
    // A creation in the window: a diff from nothing.
    assert.match(window.stdout, /^--- \/dev\/null\tnot created yet$/m);
  });

  it('blame names the field manager of each line, its creation included', async () => {
    const blame = await run('blame', 'deploy/web', '-n', ns, '--cluster', 'east', '-o', 'json');
    assert.equal(blame.code, 0, blame.stderr);
    const lines = blame.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { text: string; manager?: string; time?: string; source: string });
    const who = (text: string) => {
      const line = lines.find((candidate) => candidate.text.trim() === text);
      assert.ok(line, `no line "${text}"`);
      return `${line.manager} at ${line.time}`;
    };
    const last = (index: number) => `${MANAGERS[edits[index]!.editor]} at ${edits[index]!.event.time}`;
    assert.equal(who('image: registry.local/web:4'), last(11));
    assert.equal(who('replicas: 2'), last(9));
    assert.equal(who('team: shop'), last(7));
    assert.equal(who('- name: DEBUG'), last(8));
    assert.equal(who('app: web'), `seed-tool at ${createdEvent.time}`);
    assert.ok(
      lines.every((line) => line.source === 'history'),
      'the creation is in the history: no line older',
    );
    assert.ok(
      outputs.every((output) => !output.includes(database.info.password)),
      'the database password appears in no output',
    );
  });
});
